"""Summarise a Nsight Compute source page (``gdn_ncu``'s ``NAME_sass.csv.gz``: per-SASS-instruction warp-stall
samples) of one kernel: the instructions with the most samples (their top stall reasons), and for index ranges given
as ``LO-HI`` (a warp partition's loop, read off the first listing) the samples and the per-chunk opcode histogram of
the instructions executed as often as the range's most frequent one (the loop body, not its prologue).

    python3 scripts/gdn_sass_samples.py rc_sass.csv.gz --top 300 --range output=221-1036 --range chain=2188-2637

(Round 26 read r90's gl_rc profile this way: the output partition issued ~816 instructions a chunk against the
chain's ~450, and its loop's back edge waited on its global stores.)
"""

import argparse
import collections
import csv
import gzip


def load(path):
    rows = list(csv.reader(gzip.open(path, "rt") if path.endswith(".gz") else open(path)))
    hdr = next(r for r in rows if "Address" in r and "Source" in r)
    data = rows[rows.index(hdr) + 1:]
    ix = {h: i for i, h in enumerate(hdr)}
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    out = []
    for r in data:
        num = lambda h, r=r: int(r[ix[h]] or 0)
        src = r[ix["Source"]].strip()
        toks = src.split()
        op = (toks[1] if toks and toks[0].startswith("@") and len(toks) > 1 else (toks[0] if toks else "?"))
        out.append(dict(src=src, op=op.split(".")[0], samples=num("Warp Stall Sampling (All Samples)"),
                        executed=num("Instructions Executed"),
                        stalls=sorted(((num(h), h[6:]) for h in stalls), reverse=True)[:2]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=200, help="list instructions with at least this many samples")
    ap.add_argument("--range", action="append", default=[], help="NAME=LO-HI (instruction indices, inclusive)")
    a = ap.parse_args(argv)
    ins = load(a.csv)
    print(f"{len(ins)} instructions, {sum(i['samples'] for i in ins)} samples")
    for n, i in enumerate(ins):
        if i["samples"] >= a.top:
            st = " ".join(f"{name}:{v}" for v, name in i["stalls"])
            print(f"{n:5d} {i['samples']:6d} {i['executed']:8d}  {i['src'][:64]:64s} {st}")
    for spec in a.range:
        name, _, span = spec.partition("=")
        lo, hi = (int(x) for x in span.split("-"))
        part = ins[lo:hi + 1]
        body = max(i["executed"] for i in part)
        ops, samples = collections.Counter(), collections.Counter()
        for i in part:
            if i["executed"] == body:
                ops[i["op"]] += 1
                samples[i["op"]] += i["samples"]
        print(f"\n{name} [{lo}, {hi}]: {sum(i['samples'] for i in part)} samples; "
              f"{sum(ops.values())} instructions executed {body} times (the loop body)")
        for op, c in ops.most_common(24):
            print(f"  {op:12s} {c:4d}  samples {samples[op]}")


if __name__ == "__main__":
    main()
