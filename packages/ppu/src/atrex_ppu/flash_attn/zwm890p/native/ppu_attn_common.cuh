// ATREX PPU ZW-M890P attention: the one shared layout / instruction helper header.
//
// Used by every translation unit of this folder (prefill_h8k1.cu, prefill_general.cu, prep_kv.cu,
// native_decode.cu). Standard CUDA C++ and cuda_fp8.h / cuda_bf16.h types only: no inline PTX, no
// CuTe/CUTLASS, no third-party code.
//
// Compatibility branch: on a PPU host the sources are built by HGCC against the PPU SDK headers
// (ATREX_PPU_HGCC defined by the build); in emulation they are built by nvcc for sm_90
// (ATREX_PPU_EMULATION defined). Only the fp8 -> float conversion differs: nvcc uses the packed
// hardware conversion of cuda_fp8.h, the PPU branch the scalar cuda_fp8.h conversion operator
// (the PPU branch has not been compiled or run on hardware yet).
//
// Layout conventions (all kernels):
//   * head dim D = 256, fp8 e4m3 q/k/v, fp32 accumulation, bf16 output;
//   * KV is consumed in 64-token tiles (one tile = 64 x 256 bytes = 16384 bytes);
//   * a CTA has 256 threads laid out 16 x 16 (tx = tid % 16, ty = tid / 16); it owns M = 16 * RPT
//     query rows (row r = packed (query token, GQA head) pair); thread (tx, ty) owns rows
//     ty + 16 * i (i < RPT), score columns tx + 16 * j (j < 4) and output columns tx * 4 + 64 * j;
//   * scores live in the log2 domain (scale folded with log2(e)); running max m, sum l per row;
//   * a split writes its unnormalised accumulator and (m, l) per row; a row with l == 0 has an
//     unwritten accumulator that the combine never reads.
#pragma once

#include <stdint.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if defined(ATREX_PPU_HGCC)
#define ATREX_PPU_FP8X2_HW 0  // PPU SDK: scalar conversions through the cuda_fp8.h operators
#else
#define ATREX_PPU_FP8X2_HW 1  // nvcc (emulation on sm_90): packed fp8x2 -> half2 conversion
#endif

namespace atrex_ppu {

constexpr int kHeadDim = 256;
constexpr int kTileN = 64;                       // KV tokens per tile
constexpr int kTileBytes = kTileN * kHeadDim;    // 16384: one packed tile
constexpr int kThreads = 256;
constexpr int kKvRow = kHeadDim + 4;             // padded smem KV row (bytes): conflict-free column reads
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kNegInf = -__builtin_huge_valf();

// ---------------------------------------------------------------------------------------------
// fp8 e4m3 -> fp32
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ float2 fp8x2_to_float2(uint32_t two_bytes) {
#if ATREX_PPU_FP8X2_HW
    __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two_bytes & 0xffffu), __NV_E4M3);
    __half2 h;
    h = *reinterpret_cast<__half2*>(&raw);
    return __half22float2(h);
#else
    __nv_fp8_e4m3 a, b;
    a.__x = static_cast<__nv_fp8_storage_t>(two_bytes & 0xffu);
    b.__x = static_cast<__nv_fp8_storage_t>((two_bytes >> 8) & 0xffu);
    return make_float2(static_cast<float>(a), static_cast<float>(b));
#endif
}

__device__ __forceinline__ void fp8x4_to_float(uint32_t w, float (&f)[4]) {
    float2 lo = fp8x2_to_float2(w);
    float2 hi = fp8x2_to_float2(w >> 16);
    f[0] = lo.x; f[1] = lo.y; f[2] = hi.x; f[3] = hi.y;
}

// ---------------------------------------------------------------------------------------------
// Global -> shared tile loads (16-byte global reads, 4-byte shared stores)
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void st_row_chunk(uint8_t* dst, uint4 v) {
    uint32_t* d = reinterpret_cast<uint32_t*>(dst);
    d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w;
}

// One 16-byte chunk of KV token `tok` (0 <= tok) of sequence `bt_row`, head `hk`, read directly from a
// paged cache [blocks, page, Hk, 256] with element (= byte) strides. Tokens >= sk are returned as
// zeros without touching memory: page tails, NaN bytes and unused table entries never leak.
__device__ __forceinline__ uint4 paged_chunk(const uint8_t* __restrict__ base, const int* __restrict__ bt_row,
                                             int page_size, int tok, int sk, int hk, int chunk,
                                             int64_t s_blk, int64_t s_tok, int64_t s_head) {
    if (tok >= sk) return make_uint4(0u, 0u, 0u, 0u);
    const int page = tok / page_size;
    const int off = tok - page * page_size;
    const int64_t blk = static_cast<int64_t>(bt_row[page]);
    const uint8_t* src = base + blk * s_blk + static_cast<int64_t>(off) * s_tok + static_cast<int64_t>(hk) * s_head
                         + chunk * 16;
    return *reinterpret_cast<const uint4*>(src);
}

// Load the 64-token tile `tile` into shared memory (padded rows of kKvRow bytes).
__device__ __forceinline__ void load_kv_tile_paged(uint8_t* __restrict__ s_kv, const uint8_t* __restrict__ base,
                                                   const int* __restrict__ bt_row, int page_size, int tile, int sk,
                                                   int hk, int64_t s_blk, int64_t s_tok, int64_t s_head) {
    #pragma unroll
    for (int it = 0; it < (kTileN * 16) / kThreads; ++it) {
        const int idx = threadIdx.x + it * kThreads;
        const int r = idx >> 4, c = idx & 15;
        uint4 v = paged_chunk(base, bt_row, page_size, tile * kTileN + r, sk, hk, c, s_blk, s_tok, s_head);
        st_row_chunk(s_kv + r * kKvRow + c * 16, v);
    }
}

// Load one packed 16384-byte tile (written by atrex_ppu_prep_raw) into shared memory.
__device__ __forceinline__ void load_kv_tile_packed(uint8_t* __restrict__ s_kv, const uint8_t* __restrict__ tile) {
    #pragma unroll
    for (int it = 0; it < (kTileN * 16) / kThreads; ++it) {
        const int idx = threadIdx.x + it * kThreads;
        const int r = idx >> 4, c = idx & 15;
        uint4 v = *reinterpret_cast<const uint4*>(tile + r * kHeadDim + c * 16);
        st_row_chunk(s_kv + r * kKvRow + c * 16, v);
    }
}

// Load M = 16 * RPT query rows. Row r is packed row m0 + r of the sequence: token (m0 + r) / G, head
// hk * G + (m0 + r) % G. Rows past the sequence are zeros. q is [Tq, Hq, 256] with row stride q_st.
template <int RPT>
__device__ __forceinline__ void load_q_rows(uint8_t* __restrict__ s_q, const uint8_t* __restrict__ q, int64_t q_st,
                                            int tq0, int sq, int m0, int G, int hk) {
    constexpr int M = 16 * RPT;
    for (int idx = threadIdx.x; idx < M * 16; idx += kThreads) {
        const int r = idx >> 4, c = idx & 15;
        const int pr = m0 + r;
        const int i = pr / G, g = pr - (pr / G) * G;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (i < sq) {
            const uint8_t* src = q + static_cast<int64_t>(tq0 + i) * q_st
                                 + static_cast<int64_t>(hk * G + g) * kHeadDim + c * 16;
            v = *reinterpret_cast<const uint4*>(src);
        }
        *reinterpret_cast<uint4*>(s_q + r * kHeadDim + c * 16) = v;
    }
}

// ---------------------------------------------------------------------------------------------
// The three steps of one KV tile
// ---------------------------------------------------------------------------------------------
struct RowState {  // per-row running statistics in shared memory
    float* m;
    float* l;
    float* alpha;
};

// S[r][n] = (q_r . k_n) * scale_log2, or -inf when key n is not visible to row r.
// Visibility (causal, bottom-right aligned): row valid, key token kt < sk and kt <= i(r) + delta.
template <int RPT>
__device__ __forceinline__ void qk_tile(const uint8_t* __restrict__ s_q, const uint8_t* __restrict__ s_k,
                                        float* __restrict__ s_s, float scale_log2, int tile, int sk, int sq,
                                        int m0, int G) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    float acc[RPT][4];
    #pragma unroll
    for (int i = 0; i < RPT; ++i)
        #pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
    #pragma unroll 4
    for (int d = 0; d < kHeadDim; d += 4) {
        float kf[4][4];
        #pragma unroll
        for (int j = 0; j < 4; ++j)
            fp8x4_to_float(*reinterpret_cast<const uint32_t*>(s_k + (tx + 16 * j) * kKvRow + d), kf[j]);
        #pragma unroll
        for (int i = 0; i < RPT; ++i) {
            float qf[4];
            fp8x4_to_float(*reinterpret_cast<const uint32_t*>(s_q + (ty + 16 * i) * kHeadDim + d), qf);
            #pragma unroll
            for (int j = 0; j < 4; ++j)
                acc[i][j] += qf[0] * kf[j][0] + qf[1] * kf[j][1] + qf[2] * kf[j][2] + qf[3] * kf[j][3];
        }
    }
    const int delta = sk - sq;
    #pragma unroll
    for (int i = 0; i < RPT; ++i) {
        const int r = ty + 16 * i;
        const int qi = (m0 + r) / G;
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int n = tx + 16 * j;
            const int kt = tile * kTileN + n;
            const bool vis = qi < sq && kt < sk && kt <= qi + delta;
            s_s[r * kTileN + n] = vis ? acc[i][j] * scale_log2 : kNegInf;
        }
    }
}

// Online softmax over one tile: P = exp2(S - m_new) written back in place; alpha = exp2(m_old - m_new).
// Four consecutive lanes own one row (16 columns each). A row that has seen no key keeps m = -inf.
template <int RPT>
__device__ __forceinline__ void softmax_tile(float* __restrict__ s_s, RowState st) {
    constexpr int M = 16 * RPT;
    const int lane4 = threadIdx.x & 3;
    for (int base = 0; base < M; base += kThreads / 4) {
        const int r = base + (threadIdx.x >> 2);
        const bool live = r < M;
        float* row = s_s + (live ? r : 0) * kTileN + lane4 * 16;
        float mx = kNegInf;
        if (live) {
            #pragma unroll
            for (int c = 0; c < 16; ++c) mx = fmaxf(mx, row[c]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_old = live ? st.m[r] : kNegInf;
        const float m_new = fmaxf(m_old, mx);
        const float m_use = (m_new == kNegInf) ? 0.f : m_new;
        float sum = 0.f;
        if (live) {
            #pragma unroll
            for (int c = 0; c < 16; ++c) {
                const float p = exp2f(row[c] - m_use);  // -inf -> 0
                row[c] = p;
                sum += p;
            }
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        if (live && lane4 == 0) {
            const float alpha = exp2f(m_old - m_use);  // m_old = -inf -> 0
            st.alpha[r] = alpha;
            st.l[r] = st.l[r] * alpha + sum;
            st.m[r] = m_new;
        }
    }
}

// O[r][d] = O[r][d] * alpha[r] + sum_n P[r][n] * V[n][d]; thread owns d = tx * 4 + 64 * j.
template <int RPT>
__device__ __forceinline__ void pv_tile(float (&o)[RPT][16], const float* __restrict__ s_p,
                                        const uint8_t* __restrict__ s_v, const float* __restrict__ alpha) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    #pragma unroll
    for (int i = 0; i < RPT; ++i) {
        const float a = alpha[ty + 16 * i];
        #pragma unroll
        for (int c = 0; c < 16; ++c) o[i][c] *= a;
    }
    #pragma unroll 2
    for (int n = 0; n < kTileN; ++n) {
        float vf[16];
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            float t[4];
            fp8x4_to_float(*reinterpret_cast<const uint32_t*>(s_v + n * kKvRow + tx * 4 + 64 * j), t);
            vf[4 * j + 0] = t[0]; vf[4 * j + 1] = t[1]; vf[4 * j + 2] = t[2]; vf[4 * j + 3] = t[3];
        }
        #pragma unroll
        for (int i = 0; i < RPT; ++i) {
            const float p = s_p[(ty + 16 * i) * kTileN + n];
            #pragma unroll
            for (int c = 0; c < 16; ++c) o[i][c] += p * vf[c];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Epilogue: either the final bf16 row (o / l * v_scale, zeros for rows that saw no key), or the split
// partial (unnormalised o * v_scale, m, l). Partials are [splits, Tq, Hq, 256] and [splits, Tq, Hq, 2].
// ---------------------------------------------------------------------------------------------
template <int RPT>
__device__ __forceinline__ void write_rows(const float (&o)[RPT][16], RowState st, int tq0, int sq, int m0, int G,
                                           int hk, int hq, float vs,
                                           __nv_bfloat16* __restrict__ out, int64_t out_st, int64_t out_sh,
                                           float* __restrict__ part_o, float* __restrict__ part_ml, int split,
                                           int total_q) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    #pragma unroll
    for (int i = 0; i < RPT; ++i) {
        const int r = ty + 16 * i;
        const int pr = m0 + r;
        const int qi = pr / G, g = pr - (pr / G) * G;
        if (qi >= sq) continue;
        const int t = tq0 + qi, h = hk * G + g;
        const float l = st.l[r];
        if (part_o == nullptr) {
            const float f = l > 0.f ? vs / l : 0.f;
            __nv_bfloat16* dst = out + static_cast<int64_t>(t) * out_st + static_cast<int64_t>(h) * out_sh;
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                __nv_bfloat162 a = __floats2bfloat162_rn(o[i][4 * j + 0] * f, o[i][4 * j + 1] * f);
                __nv_bfloat162 b = __floats2bfloat162_rn(o[i][4 * j + 2] * f, o[i][4 * j + 3] * f);
                __nv_bfloat162* d2 = reinterpret_cast<__nv_bfloat162*>(dst + tx * 4 + 64 * j);
                d2[0] = a;
                d2[1] = b;
            }
        } else {
            const int64_t row = (static_cast<int64_t>(split) * total_q + t) * hq + h;
            if (l > 0.f) {
                float* dst = part_o + row * kHeadDim;
                #pragma unroll
                for (int j = 0; j < 4; ++j)
                    *reinterpret_cast<float4*>(dst + tx * 4 + 64 * j) =
                        make_float4(o[i][4 * j] * vs, o[i][4 * j + 1] * vs, o[i][4 * j + 2] * vs, o[i][4 * j + 3] * vs);
            }
            if (tx == 0) {
                part_ml[row * 2 + 0] = st.m[r];
                part_ml[row * 2 + 1] = l;
            }
        }
    }
}

// Fixed-order split combine of one (token, head) row; thread d owns column d (blockDim = 256).
// Splits with l == 0 (no visible key, accumulator never written) are skipped: a zero weight is
// never multiplied by uninitialised memory.
__device__ __forceinline__ void combine_row(const float* __restrict__ part_o, const float* __restrict__ part_ml,
                                            int splits, int64_t row, int64_t split_stride_rows,
                                            __nv_bfloat16* __restrict__ dst) {
    const int d = threadIdx.x;
    float m_max = kNegInf;
    for (int s = 0; s < splits; ++s) {
        const int64_t rs = row + s * split_stride_rows;
        if (part_ml[rs * 2 + 1] > 0.f) m_max = fmaxf(m_max, part_ml[rs * 2 + 0]);
    }
    float num = 0.f, den = 0.f;
    for (int s = 0; s < splits; ++s) {
        const int64_t rs = row + s * split_stride_rows;
        const float l = part_ml[rs * 2 + 1];
        if (l > 0.f) {
            const float w = exp2f(part_ml[rs * 2 + 0] - m_max);
            num += w * part_o[rs * kHeadDim + d];
            den += w * l;
        }
    }
    dst[d] = __float2bfloat16_rn(den > 0.f ? num / den : 0.f);
}

// Shared-memory footprint of an attention CTA with M = 16 * RPT rows.
__host__ __device__ constexpr int attn_smem_bytes(int rpt) {
    return 16 * rpt * kHeadDim          // Q rows (fp8)
           + kTileN * kKvRow            // K, then V, tile (fp8, padded rows)
           + 16 * rpt * kTileN * 4      // S / P (fp32)
           + 3 * 16 * rpt * 4;          // m, l, alpha
}

template <int RPT>
struct SmemLayout {
    uint8_t* q;
    uint8_t* kv;
    float* s;
    RowState st;
    __device__ __forceinline__ explicit SmemLayout(uint8_t* base) {
        constexpr int M = 16 * RPT;
        q = base;
        kv = q + M * kHeadDim;
        s = reinterpret_cast<float*>(kv + kTileN * kKvRow);
        st.m = s + M * kTileN;
        st.l = st.m + M;
        st.alpha = st.l + M;
    }
    __device__ __forceinline__ void init_rows() {
        for (int r = threadIdx.x; r < 16 * RPT; r += kThreads) {
            st.m[r] = kNegInf;
            st.l[r] = 0.f;
            st.alpha[r] = 1.f;
        }
    }
};

// One KV tile through the three steps. `load_k` / `load_v` fill s.kv.
template <int RPT, typename LoadK, typename LoadV>
__device__ __forceinline__ void attend_tile(SmemLayout<RPT>& s, float (&o)[RPT][16], float scale_log2, int tile,
                                            int sk, int sq, int m0, int G, LoadK load_k, LoadV load_v) {
    load_k(s.kv);
    __syncthreads();
    qk_tile<RPT>(s.q, s.kv, s.s, scale_log2, tile, sk, sq, m0, G);
    __syncthreads();
    softmax_tile<RPT>(s.s, s.st);
    load_v(s.kv);
    __syncthreads();
    pv_tile<RPT>(o, s.s, s.kv, s.st.alpha);
    __syncthreads();
}

}  // namespace atrex_ppu

#define ATREX_PPU_CHECK_LAUNCH() return static_cast<int>(cudaGetLastError())
