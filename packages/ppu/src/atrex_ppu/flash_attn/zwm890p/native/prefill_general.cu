// ATREX PPU ZW-M890P general prefill: any GQA group size (the plugin admits multiples of 4, incl.
// 32/2), any softmax scale, fp32 [B, Hk] descales (materialised by atrex_ppu_prep_raw into a
// contiguous [3, B, Hk] buffer, read on device on every call and graph replay).
//
// Reads K/V packed by atrex_ppu_prep_raw: [B, Hk, n_tiles_cap, 64, 256] fp8 tiles. One CTA per
// (64 packed (token, head) rows of one KV head's GQA group, KV head x split, request).
#include "ppu_attn_common.cuh"

using namespace atrex_ppu;

namespace {
constexpr int kRpt = 4;  // 64 packed rows per CTA
}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads)
atrex_ppu_attn_general(const uint8_t* __restrict__ q, int64_t q_st, const uint8_t* __restrict__ kpack,
                       const uint8_t* __restrict__ vpack, const float* __restrict__ scales,
                       const int* __restrict__ cu_q, const int* __restrict__ seqused_k,
                       __nv_bfloat16* __restrict__ out, int64_t out_st, int64_t out_sh, float* __restrict__ part_o,
                       float* __restrict__ part_ml, int tiles_per_split, int batch, int num_kv_heads, int group,
                       int n_tiles_cap, int total_q, float softmax_scale) {
    extern __shared__ __align__(16) uint8_t smem[];
    const int b = blockIdx.z, hk = blockIdx.y % num_kv_heads, split = blockIdx.y / num_kv_heads;
    const int m0 = blockIdx.x * 16 * kRpt;
    const int tq0 = cu_q[b];
    const int sq = cu_q[b + 1] - tq0;
    if (m0 >= sq * group) return;
    const int sk = min(max(seqused_k[b], 0), n_tiles_cap * kTileN);
    const int i_max = min(sq - 1, (m0 + 16 * kRpt - 1) / group);
    const int kv_end = max(0, min(sk, i_max + (sk - sq) + 1));
    const int tiles_end = (kv_end + kTileN - 1) / kTileN;
    const int t0 = split * tiles_per_split;
    const int t1 = min(tiles_end, t0 + tiles_per_split);
    const int bh = b * num_kv_heads + hk;
    const int plane = batch * num_kv_heads;
    const float q_scale = scales[bh], k_scale = scales[plane + bh], v_scale = scales[2 * plane + bh];
    const float scale_log2 = softmax_scale * q_scale * k_scale * kLog2e;

    SmemLayout<kRpt> s(smem);
    s.init_rows();
    load_q_rows<kRpt>(s.q, q, q_st, tq0, sq, m0, group, hk);
    __syncthreads();

    float o[kRpt][16];
    #pragma unroll
    for (int i = 0; i < kRpt; ++i)
        #pragma unroll
        for (int c = 0; c < 16; ++c) o[i][c] = 0.f;

    const int64_t seq_tiles = static_cast<int64_t>(bh) * n_tiles_cap;
    for (int t = t0; t < t1; ++t) {
        const uint8_t* kt = kpack + (seq_tiles + t) * kTileBytes;
        const uint8_t* vt = vpack + (seq_tiles + t) * kTileBytes;
        attend_tile<kRpt>(s, o, scale_log2, t, sk, sq, m0, group,
                          [&](uint8_t* dst) { load_kv_tile_packed(dst, kt); },
                          [&](uint8_t* dst) { load_kv_tile_packed(dst, vt); });
    }
    write_rows<kRpt>(o, s.st, tq0, sq, m0, group, hk, num_kv_heads * group, v_scale, out, out_st, out_sh, part_o,
                     part_ml, split, total_q);
}

// grid (ceil(max_seqlen_q * group / 64), Hk * splits, B); part_o / part_ml null when splits == 1.
extern "C" int atrex_ppu_launch_attn_general(const void* q, long long q_st, const void* kpack, const void* vpack,
                                             const void* scales, const void* cu_q, const void* seqused_k, void* out,
                                             long long out_st, long long out_sh, void* part_o, void* part_ml,
                                             int splits, int tiles_per_split, int batch, int num_kv_heads, int group,
                                             int n_tiles_cap, int total_q, int max_seqlen_q, float softmax_scale,
                                             void* stream) {
    const int smem = attn_smem_bytes(kRpt);
    cudaFuncSetAttribute(atrex_ppu_attn_general, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    dim3 grid((max_seqlen_q * group + 16 * kRpt - 1) / (16 * kRpt), num_kv_heads * splits, batch);
    atrex_ppu_attn_general<<<grid, kThreads, smem, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint8_t*>(q), q_st, static_cast<const uint8_t*>(kpack), static_cast<const uint8_t*>(vpack),
        static_cast<const float*>(scales), static_cast<const int*>(cu_q), static_cast<const int*>(seqused_k),
        static_cast<__nv_bfloat16*>(out), out_st, out_sh, static_cast<float*>(part_o), static_cast<float*>(part_ml),
        tiles_per_split, batch, num_kv_heads, group, n_tiles_cap, total_q, softmax_scale);
    ATREX_PPU_CHECK_LAUNCH();
}

extern "C" const char* atrex_ppu_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}

// Loads this library's kernels into the current device's context (called by prewarm, before any capture).
extern "C" int atrex_ppu_touch() {
    cudaFuncAttributes attr;
    cudaError_t err;
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_attn_general)) != cudaSuccess) return static_cast<int>(err);
    return 0;
}
