// ATREX PPU ZW-M890P direct-paged decode (FA3 contract, short Q).
//
// fp8 e4m3 q/k/v, bf16 out, causal full window, D = 256, GQA group 8 or 16, pages 64/128/256,
// 1..5 query tokens per request, fp32 [B, Hk] descales read on device (any strides, null = 1).
// K/V are read straight from the paged cache through block_table: no packing, no persistent cache.
// One CTA per (split, KV head, request) holding all G x sq packed query rows (M = 16 * RPT >= G * sq);
// split s covers KV tiles [s * tiles_per_split, (s + 1) * tiles_per_split). With splits > 1 every split
// writes (m, l) for each of its rows (l = 0 when it saw no key) and atrex_ppu_decode_combine reduces
// them in fixed order, skipping l == 0 partials.
#include "ppu_attn_common.cuh"

using namespace atrex_ppu;

namespace {

template <int RPT>
__device__ __forceinline__ void decode_body(
    const uint8_t* __restrict__ q, int64_t q_st, const uint8_t* __restrict__ k, const uint8_t* __restrict__ v,
    int64_t ks_blk, int64_t ks_tok, int64_t ks_head, int64_t vs_blk, int64_t vs_tok, int64_t vs_head,
    const int* __restrict__ block_table, int64_t bt_st, int page_size, const float* __restrict__ qd, int64_t qd_sb,
    int64_t qd_sh, const float* __restrict__ kd, int64_t kd_sb, int64_t kd_sh, const float* __restrict__ vd,
    int64_t vd_sb, int64_t vd_sh, const int* __restrict__ cu_q, const int* __restrict__ seqused_k,
    __nv_bfloat16* __restrict__ out, int64_t out_st, int64_t out_sh, float* __restrict__ part_o,
    float* __restrict__ part_ml, int tiles_per_split, int num_kv_heads, int group, int n_tiles_cap, int total_q,
    float softmax_scale) {
    extern __shared__ __align__(16) uint8_t smem[];
    const int split = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
    const int tq0 = cu_q[b];
    const int sq = cu_q[b + 1] - tq0;
    if (sq <= 0) return;
    const int sk = min(max(seqused_k[b], 0), n_tiles_cap * kTileN);
    const int tiles_end = (sk + kTileN - 1) / kTileN;  // causal: the last query row sees every key
    const int t0 = split * tiles_per_split;
    const int t1 = min(tiles_end, t0 + tiles_per_split);
    const float q_scale = qd ? qd[b * qd_sb + hk * qd_sh] : 1.f;
    const float k_scale = kd ? kd[b * kd_sb + hk * kd_sh] : 1.f;
    const float v_scale = vd ? vd[b * vd_sb + hk * vd_sh] : 1.f;
    const float scale_log2 = softmax_scale * q_scale * k_scale * kLog2e;
    const int* bt_row = block_table + b * bt_st;

    SmemLayout<RPT> s(smem);
    s.init_rows();
    load_q_rows<RPT>(s.q, q, q_st, tq0, sq, 0, group, hk);
    __syncthreads();

    float o[RPT][16];
    #pragma unroll
    for (int i = 0; i < RPT; ++i)
        #pragma unroll
        for (int c = 0; c < 16; ++c) o[i][c] = 0.f;

    for (int t = t0; t < t1; ++t) {
        attend_tile<RPT>(
            s, o, scale_log2, t, sk, sq, 0, group,
            [&](uint8_t* dst) { load_kv_tile_paged(dst, k, bt_row, page_size, t, sk, hk, ks_blk, ks_tok, ks_head); },
            [&](uint8_t* dst) { load_kv_tile_paged(dst, v, bt_row, page_size, t, sk, hk, vs_blk, vs_tok, vs_head); });
    }
    write_rows<RPT>(o, s.st, tq0, sq, 0, group, hk, num_kv_heads * group, v_scale, out, out_st, out_sh, part_o,
                    part_ml, split, total_q);
}

}  // namespace

#define ATREX_PPU_DECODE_PARAMS                                                                                  \
    const uint8_t *__restrict__ q, int64_t q_st, const uint8_t *__restrict__ k, const uint8_t *__restrict__ v,  \
        int64_t ks_blk, int64_t ks_tok, int64_t ks_head, int64_t vs_blk, int64_t vs_tok, int64_t vs_head,        \
        const int *__restrict__ block_table, int64_t bt_st, int page_size, const float *__restrict__ qd,         \
        int64_t qd_sb, int64_t qd_sh, const float *__restrict__ kd, int64_t kd_sb, int64_t kd_sh,                \
        const float *__restrict__ vd, int64_t vd_sb, int64_t vd_sh, const int *__restrict__ cu_q,                \
        const int *__restrict__ seqused_k, __nv_bfloat16 *__restrict__ out, int64_t out_st, int64_t out_sh,      \
        float *__restrict__ part_o, float *__restrict__ part_ml, int tiles_per_split, int num_kv_heads,           \
        int group, int n_tiles_cap, int total_q, float softmax_scale
#define ATREX_PPU_DECODE_ARGS                                                                                    \
    q, q_st, k, v, ks_blk, ks_tok, ks_head, vs_blk, vs_tok, vs_head, block_table, bt_st, page_size, qd, qd_sb,  \
        qd_sh, kd, kd_sb, kd_sh, vd, vd_sb, vd_sh, cu_q, seqused_k, out, out_st, out_sh, part_o, part_ml,        \
        tiles_per_split, num_kv_heads, group, n_tiles_cap, total_q, softmax_scale

// One extern "C" kernel per row-tile height (M = 16 * RPT packed rows): stable profiler names.
extern "C" __global__ void __launch_bounds__(kThreads) atrex_ppu_decode_m16(ATREX_PPU_DECODE_PARAMS) {
    decode_body<1>(ATREX_PPU_DECODE_ARGS);
}
extern "C" __global__ void __launch_bounds__(kThreads) atrex_ppu_decode_m32(ATREX_PPU_DECODE_PARAMS) {
    decode_body<2>(ATREX_PPU_DECODE_ARGS);
}
extern "C" __global__ void __launch_bounds__(kThreads) atrex_ppu_decode_m48(ATREX_PPU_DECODE_PARAMS) {
    decode_body<3>(ATREX_PPU_DECODE_ARGS);
}
extern "C" __global__ void __launch_bounds__(kThreads) atrex_ppu_decode_m64(ATREX_PPU_DECODE_PARAMS) {
    decode_body<4>(ATREX_PPU_DECODE_ARGS);
}
extern "C" __global__ void __launch_bounds__(kThreads) atrex_ppu_decode_m80(ATREX_PPU_DECODE_PARAMS) {
    decode_body<5>(ATREX_PPU_DECODE_ARGS);
}

// Fixed-order combine of the decode split partials ([splits, Tq, Hq, 256] and [splits, Tq, Hq, 2]).
extern "C" __global__ void __launch_bounds__(kThreads)
atrex_ppu_decode_combine(const float* __restrict__ part_o, const float* __restrict__ part_ml,
                         const int* __restrict__ cu_q, __nv_bfloat16* __restrict__ out, int64_t out_st,
                         int64_t out_sh, int splits, int total_q, int num_heads_q) {
    const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int tq0 = cu_q[b];
    if (i >= cu_q[b + 1] - tq0) return;
    const int t = tq0 + i;
    const int64_t row = static_cast<int64_t>(t) * num_heads_q + h;
    combine_row(part_o, part_ml, splits, row, static_cast<int64_t>(total_q) * num_heads_q,
                out + static_cast<int64_t>(t) * out_st + static_cast<int64_t>(h) * out_sh);
}

// grid (splits, Hk, B); rpt in 1..5 selects the row-tile height; part_o / part_ml null when splits == 1.
extern "C" int atrex_ppu_launch_decode(int rpt, const void* q, long long q_st, const void* k, const void* v,
                                       long long ks_blk, long long ks_tok, long long ks_head, long long vs_blk,
                                       long long vs_tok, long long vs_head, const void* block_table,
                                       long long bt_st, int page_size, const void* qd, long long qd_sb,
                                       long long qd_sh, const void* kd, long long kd_sb, long long kd_sh,
                                       const void* vd, long long vd_sb, long long vd_sh, const void* cu_q,
                                       const void* seqused_k, void* out, long long out_st, long long out_sh,
                                       void* part_o, void* part_ml, int splits, int tiles_per_split, int batch,
                                       int num_kv_heads, int group, int n_tiles_cap, int total_q,
                                       float softmax_scale, void* stream) {
    typedef void (*Kernel)(ATREX_PPU_DECODE_PARAMS);
    Kernel kernels[5] = {atrex_ppu_decode_m16, atrex_ppu_decode_m32, atrex_ppu_decode_m48, atrex_ppu_decode_m64,
                         atrex_ppu_decode_m80};
    if (rpt < 1 || rpt > 5) return static_cast<int>(cudaErrorInvalidValue);
    Kernel kern = kernels[rpt - 1];
    const int smem = attn_smem_bytes(rpt);
    cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    dim3 grid(splits, num_kv_heads, batch);
    kern<<<grid, kThreads, smem, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint8_t*>(q), q_st, static_cast<const uint8_t*>(k), static_cast<const uint8_t*>(v), ks_blk,
        ks_tok, ks_head, vs_blk, vs_tok, vs_head, static_cast<const int*>(block_table), bt_st, page_size,
        static_cast<const float*>(qd), qd_sb, qd_sh, static_cast<const float*>(kd), kd_sb, kd_sh,
        static_cast<const float*>(vd), vd_sb, vd_sh, static_cast<const int*>(cu_q),
        static_cast<const int*>(seqused_k), static_cast<__nv_bfloat16*>(out), out_st, out_sh,
        static_cast<float*>(part_o), static_cast<float*>(part_ml), tiles_per_split, num_kv_heads, group,
        n_tiles_cap, total_q, softmax_scale);
    ATREX_PPU_CHECK_LAUNCH();
}

// grid (max_seqlen_q, Hq, B)
extern "C" int atrex_ppu_launch_decode_combine(const void* part_o, const void* part_ml, const void* cu_q, void* out,
                                               long long out_st, long long out_sh, int splits, int total_q,
                                               int num_heads_q, int batch, int max_seqlen_q, void* stream) {
    dim3 grid(max_seqlen_q, num_heads_q, batch);
    atrex_ppu_decode_combine<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
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
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_decode_m16)) != cudaSuccess) return static_cast<int>(err);
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_decode_m32)) != cudaSuccess) return static_cast<int>(err);
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_decode_m48)) != cudaSuccess) return static_cast<int>(err);
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_decode_m64)) != cudaSuccess) return static_cast<int>(err);
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_decode_m80)) != cudaSuccess) return static_cast<int>(err);
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_decode_combine)) != cudaSuccess) return static_cast<int>(err);
    return 0;
}
