// ATREX PPU ZW-M890P prefill, heads 8/1 with implicit unit descales (softmax scale 1/16 = 256^-0.5).
//
// Reads K/V packed by atrex_ppu_prep_raw (prep_kv.cu): [B, 1, n_tiles_cap, 64, 256] fp8 tiles.
// One CTA per (64 packed rows = 8 query tokens x 8 heads, split, request). Kept as its own kernel
// and translation unit; every other head layout, softmax scale or any passed descale goes to
// atrex_ppu_attn_general (prefill_general.cu).
#include "ppu_attn_common.cuh"

using namespace atrex_ppu;

namespace {
constexpr int kG = 8;
constexpr int kRpt = 4;  // 64 packed rows per CTA
constexpr float kScaleLog2 = 0.0625f * kLog2e;
}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads)
atrex_ppu_attn(const uint8_t* __restrict__ q, int64_t q_st, const uint8_t* __restrict__ kpack,
               const uint8_t* __restrict__ vpack, const int* __restrict__ cu_q, const int* __restrict__ seqused_k,
               __nv_bfloat16* __restrict__ out, int64_t out_st, int64_t out_sh, float* __restrict__ part_o,
               float* __restrict__ part_ml, int tiles_per_split, int n_tiles_cap, int total_q) {
    extern __shared__ __align__(16) uint8_t smem[];
    const int b = blockIdx.z, split = blockIdx.y, m0 = blockIdx.x * 16 * kRpt;
    const int tq0 = cu_q[b];
    const int sq = cu_q[b + 1] - tq0;
    if (m0 >= sq * kG) return;
    const int sk = min(max(seqused_k[b], 0), n_tiles_cap * kTileN);
    const int i_max = min(sq - 1, (m0 + 16 * kRpt - 1) / kG);
    const int kv_end = max(0, min(sk, i_max + (sk - sq) + 1));
    const int tiles_end = (kv_end + kTileN - 1) / kTileN;
    const int t0 = split * tiles_per_split;
    const int t1 = min(tiles_end, t0 + tiles_per_split);

    SmemLayout<kRpt> s(smem);
    s.init_rows();
    load_q_rows<kRpt>(s.q, q, q_st, tq0, sq, m0, kG, 0);
    __syncthreads();

    float o[kRpt][16];
    #pragma unroll
    for (int i = 0; i < kRpt; ++i)
        #pragma unroll
        for (int c = 0; c < 16; ++c) o[i][c] = 0.f;

    const int64_t seq_tiles = static_cast<int64_t>(b) * n_tiles_cap;
    for (int t = t0; t < t1; ++t) {
        const uint8_t* kt = kpack + (seq_tiles + t) * kTileBytes;
        const uint8_t* vt = vpack + (seq_tiles + t) * kTileBytes;
        attend_tile<kRpt>(s, o, kScaleLog2, t, sk, sq, m0, kG,
                          [&](uint8_t* dst) { load_kv_tile_packed(dst, kt); },
                          [&](uint8_t* dst) { load_kv_tile_packed(dst, vt); });
    }
    write_rows<kRpt>(o, s.st, tq0, sq, m0, kG, 0, kG, 1.f, out, out_st, out_sh, part_o, part_ml, split, total_q);
}

// grid (ceil(max_seqlen_q * 8 / 64), splits, B); part_o / part_ml null when splits == 1.
extern "C" int atrex_ppu_launch_attn(const void* q, long long q_st, const void* kpack, const void* vpack,
                                     const void* cu_q, const void* seqused_k, void* out, long long out_st,
                                     long long out_sh, void* part_o, void* part_ml, int splits, int tiles_per_split,
                                     int n_tiles_cap, int total_q, int batch, int max_seqlen_q, void* stream) {
    const int smem = attn_smem_bytes(kRpt);
    cudaFuncSetAttribute(atrex_ppu_attn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    dim3 grid((max_seqlen_q * kG + 16 * kRpt - 1) / (16 * kRpt), splits, batch);
    atrex_ppu_attn<<<grid, kThreads, smem, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint8_t*>(q), q_st, static_cast<const uint8_t*>(kpack), static_cast<const uint8_t*>(vpack),
        static_cast<const int*>(cu_q), static_cast<const int*>(seqused_k), static_cast<__nv_bfloat16*>(out), out_st,
        out_sh, static_cast<float*>(part_o), static_cast<float*>(part_ml), tiles_per_split, n_tiles_cap, total_q);
    ATREX_PPU_CHECK_LAUNCH();
}

extern "C" const char* atrex_ppu_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}

// Loads this library's kernels into the current device's context (called by prewarm, before any capture).
extern "C" int atrex_ppu_touch() {
    cudaFuncAttributes attr;
    cudaError_t err;
    if ((err = cudaFuncGetAttributes(&attr, atrex_ppu_attn)) != cudaSuccess) return static_cast<int>(err);
    return 0;
}
