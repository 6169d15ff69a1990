// ATREX PPU ZW-M890P prefill helpers: prep_kv packing and the prefill split combine.
//
// atrex_ppu_prep_raw packs, per (request, KV head, 64-token tile slot), the K and V rows of the
// paged cache into one contiguous 16384-byte fp8 tile of invocation-local scratch
// ([B, Hk, n_tiles_cap, 64, 256] for K and for V). Tokens at or past seqused_k[b] are written as
// zeros (NaN bytes and garbage in page tails never reach the attention kernels); tile slots past
// ceil(seqused_k[b] / 64) are neither read nor written (the attention kernels never read them) and
// block-table entries past the used pages are never read. The CTA of tile 0 also materialises the
// three descales (any strides, missing = 1) into a contiguous [3, B, Hk] fp32 buffer.
#include "ppu_attn_common.cuh"

using namespace atrex_ppu;

extern "C" __global__ void __launch_bounds__(kThreads)
atrex_ppu_prep_raw(const uint8_t* __restrict__ k, const uint8_t* __restrict__ v, int64_t ks_blk, int64_t ks_tok,
                   int64_t ks_head, int64_t vs_blk, int64_t vs_tok, int64_t vs_head,
                   const int* __restrict__ block_table, int64_t bt_st, int page_size,
                   const int* __restrict__ seqused_k, uint8_t* __restrict__ kpack, uint8_t* __restrict__ vpack,
                   int n_tiles_cap, int batch, int num_kv_heads, const float* __restrict__ qd, int64_t qd_sb,
                   int64_t qd_sh, const float* __restrict__ kd, int64_t kd_sb, int64_t kd_sh,
                   const float* __restrict__ vd, int64_t vd_sb, int64_t vd_sh, float* __restrict__ scales) {
    const int t = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
    if (scales != nullptr && t == 0 && threadIdx.x == 0) {
        const int bh = b * num_kv_heads + hk, plane = batch * num_kv_heads;
        scales[bh] = qd ? qd[b * qd_sb + hk * qd_sh] : 1.f;
        scales[plane + bh] = kd ? kd[b * kd_sb + hk * kd_sh] : 1.f;
        scales[2 * plane + bh] = vd ? vd[b * vd_sb + hk * vd_sh] : 1.f;
    }
    const int sk = min(max(seqused_k[b], 0), n_tiles_cap * kTileN);
    if (t * kTileN >= sk) return;
    const int* bt_row = block_table + b * bt_st;
    const int64_t slot = (static_cast<int64_t>(b) * num_kv_heads + hk) * n_tiles_cap + t;
    uint8_t* kdst = kpack + slot * kTileBytes;
    uint8_t* vdst = vpack + slot * kTileBytes;
    #pragma unroll
    for (int it = 0; it < (kTileN * 16) / kThreads; ++it) {
        const int idx = threadIdx.x + it * kThreads;
        const int r = idx >> 4, c = idx & 15;
        const int tok = t * kTileN + r;
        *reinterpret_cast<uint4*>(kdst + r * kHeadDim + c * 16) =
            paged_chunk(k, bt_row, page_size, tok, sk, hk, c, ks_blk, ks_tok, ks_head);
        *reinterpret_cast<uint4*>(vdst + r * kHeadDim + c * 16) =
            paged_chunk(v, bt_row, page_size, tok, sk, hk, c, vs_blk, vs_tok, vs_head);
    }
}

// Combine of the prefill split partials ([splits, Tq, Hq, 256] and [splits, Tq, Hq, 2]), fixed order.
extern "C" __global__ void __launch_bounds__(kThreads)
atrex_ppu_combine(const float* __restrict__ part_o, const float* __restrict__ part_ml, const int* __restrict__ cu_q,
                  __nv_bfloat16* __restrict__ out, int64_t out_st, int64_t out_sh, int splits, int total_q,
                  int num_heads_q) {
    const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int tq0 = cu_q[b];
    if (i >= cu_q[b + 1] - tq0) return;
    const int t = tq0 + i;
    const int64_t row = static_cast<int64_t>(t) * num_heads_q + h;
    combine_row(part_o, part_ml, splits, row, static_cast<int64_t>(total_q) * num_heads_q,
                out + static_cast<int64_t>(t) * out_st + static_cast<int64_t>(h) * out_sh);
}

// grid (n_tiles_cap, Hk, B). Descale pointers may be null (= 1); scales may be null (8/1 unit path).
extern "C" int atrex_ppu_launch_prep_raw(const void* k, const void* v, long long ks_blk, long long ks_tok,
                                         long long ks_head, long long vs_blk, long long vs_tok, long long vs_head,
                                         const void* block_table, long long bt_st, int page_size,
                                         const void* seqused_k, void* kpack, void* vpack, int n_tiles_cap,
                                         int batch, int num_kv_heads, const void* qd, long long qd_sb,
                                         long long qd_sh, const void* kd, long long kd_sb, long long kd_sh,
                                         const void* vd, long long vd_sb, long long vd_sh, void* scales,
                                         void* stream) {
    dim3 grid(n_tiles_cap, num_kv_heads, batch);
    atrex_ppu_prep_raw<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint8_t*>(k), static_cast<const uint8_t*>(v), ks_blk, ks_tok, ks_head, vs_blk, vs_tok,
        vs_head, static_cast<const int*>(block_table), bt_st, page_size, static_cast<const int*>(seqused_k),
        static_cast<uint8_t*>(kpack), static_cast<uint8_t*>(vpack), n_tiles_cap, batch, num_kv_heads,
        static_cast<const float*>(qd), qd_sb, qd_sh, static_cast<const float*>(kd), kd_sb, kd_sh,
        static_cast<const float*>(vd), vd_sb, vd_sh, static_cast<float*>(scales));
    ATREX_PPU_CHECK_LAUNCH();
}

// grid (max_seqlen_q, Hq, B)
extern "C" int atrex_ppu_launch_combine(const void* part_o, const void* part_ml, const void* cu_q, void* out,
                                        long long out_st, long long out_sh, int splits, int total_q,
                                        int num_heads_q, int batch, int max_seqlen_q, void* stream) {
    dim3 grid(max_seqlen_q, num_heads_q, batch);
    atrex_ppu_combine<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const float*>(part_o), static_cast<const float*>(part_ml), static_cast<const int*>(cu_q),
        static_cast<__nv_bfloat16*>(out), out_st, out_sh, splits, total_q, num_heads_q);
    ATREX_PPU_CHECK_LAUNCH();
}

extern "C" const char* atrex_ppu_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}

// Loads this library's kernels into the current device's context (called by prewarm, before any capture).
extern "C" int atrex_ppu_touch() {
    cudaFuncAttributes attr;
    cudaError_t err;
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_prep_raw)) != cudaSuccess) return static_cast<int>(err);
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_combine)) != cudaSuccess) return static_cast<int>(err);
    return 0;
}
