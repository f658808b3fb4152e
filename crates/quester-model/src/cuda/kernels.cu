// quester's own CUDA kernels, compiled to PTX by build.rs (feature `cuda`) and loaded by
// `cuda::func`. f32 only: the model's activations, weights and optimiser state are f32 (a bf16
// precision only rounds the operands of the matrix products, which cuBLAS does).
//
// Each kernel has a CPU twin with the same arithmetic (named beside it) that the CPU tests check;
// `quester gpu-check` compares the two on a GPU.

#include <math.h>

// ---------------------------------------------------------------------------------------------
// AdamW in two passes over one parameter (twin: optim/adamw_device.rs).
// `mv` holds the first moment in [0, n) and the second in [n, 2n).

extern "C" __global__ void quester_adamw_moments(float* mv, const float* g, unsigned long long n,
                                                 float scale, float b1, float omb1, float b2,
                                                 float omb2) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float gi = g[i] * scale;
        mv[i] = b1 * mv[i] + omb1 * gi;
        mv[n + i] = b2 * mv[n + i] + omb2 * (gi * gi);
    }
}

extern "C" __global__ void quester_adamw_param(float* p, const float* mv, unsigned long long n,
                                               float decay, float lr, float inv_bc1,
                                               float inv_bc2, float eps) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float m_hat = mv[i] * inv_bc1;
        float v_hat = mv[n + i] * inv_bc2;
        p[i] = p[i] * decay - lr * (m_hat / (sqrtf(v_hat) + eps));
    }
}

// ---------------------------------------------------------------------------------------------
// Fused causal attention, forward (twin: ops/attention.rs, semantics of ops::causal_attention).
//
// q [B, H, R, D] contiguous and pre-scaled, R = G*T rows (row r is query r % T of head r / T);
// k, v: rows of D contiguous floats, batch stride kv_sb, head stride kv_sh (a cache narrowed
// along S keeps its strides). Row r sits at position past + r % T and sees the keys
// j <= past + r % T with mask[b * S + j] != 0; a row that sees none outputs zeros.
//
// One warp per query row, ATT_WARPS rows per block, all of one (b, h); the block streams the
// keys through shared memory in tiles of `tile` rows, shared by its warps, with the online
// softmax (running max and sum): no score leaves registers. Each lane keeps D / 32 elements of
// its row's query and accumulator, so D <= 32 * ATT_MAX_PER_LANE.

#define ATT_WARPS 8
#define ATT_MAX_PER_LANE 8

extern "C" __global__ void quester_attention_fwd(const float* q, const float* k, const float* v,
                                                 const unsigned int* mask, float* out, int H,
                                                 int R, int T, int S, int D, int past, int tile,
                                                 long long kv_sb, long long kv_sh) {
    extern __shared__ float shared[];
    float* ks = shared;
    float* vs = shared + tile * D;
    const int bh = blockIdx.y;
    const int b = bh / H, h = bh % H;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r0 = blockIdx.x * ATT_WARPS;
    const int r = r0 + warp;
    const bool active = r < R;
    const int qpos = past + r % T;
    // The last key any row of the block sees: its rows may span two heads of the group.
    const int r_last = min(r0 + ATT_WARPS, R) - 1;
    const int hi = (r_last / T != r0 / T) ? past + T - 1 : past + r_last % T;
    const float* kb = k + b * kv_sb + h * kv_sh;
    const float* vb = v + b * kv_sb + h * kv_sh;
    const unsigned int* mk = mask + (long long)b * S;
    const int per_lane = (D + 31) / 32;

    float qr[ATT_MAX_PER_LANE];
    float acc[ATT_MAX_PER_LANE];
    const float* qrow = q + ((long long)bh * R + (active ? r : 0)) * D;
    for (int i = 0; i < ATT_MAX_PER_LANE; ++i) {
        int c = lane + 32 * i;
        qr[i] = (i < per_lane && c < D) ? qrow[c] : 0.f;
        acc[i] = 0.f;
    }
    float mx = -INFINITY, sum = 0.f;

    for (int j0 = 0; j0 <= hi; j0 += tile) {
        const int n = min(tile, hi + 1 - j0);
        for (int idx = threadIdx.x; idx < n * D; idx += blockDim.x) {
            const int jj = idx / D, c = idx % D;
            ks[idx] = kb[(long long)(j0 + jj) * D + c];
            vs[idx] = vb[(long long)(j0 + jj) * D + c];
        }
        __syncthreads();
        if (active) {
            for (int jj = 0; jj < n; ++jj) {
                const int j = j0 + jj;
                if (j > qpos || mk[j] == 0) continue;  // the same for every lane of the warp
                float dot = 0.f;
                for (int i = 0; i < per_lane; ++i) {
                    int c = lane + 32 * i;
                    if (c < D) dot += qr[i] * ks[jj * D + c];
                }
                for (int off = 16; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
                const float m_new = fmaxf(mx, dot);
                const float corr = expf(mx - m_new);
                const float p = expf(dot - m_new);
                sum = sum * corr + p;
                for (int i = 0; i < per_lane; ++i) {
                    int c = lane + 32 * i;
                    if (c < D) acc[i] = acc[i] * corr + p * vs[jj * D + c];
                }
                mx = m_new;
            }
        }
        __syncthreads();
    }
    if (active) {
        float* orow = out + ((long long)bh * R + r) * D;
        const float inv = sum > 0.f ? 1.f / sum : 0.f;
        for (int i = 0; i < per_lane; ++i) {
            int c = lane + 32 * i;
            if (c < D) orow[c] = acc[i] * inv;
        }
    }
}
