// Day 14 — the benchmark's baseline (given, not an exercise): the same decoder layer with the
// element-wise work unfused, one simple kernel per operation as an eager framework launches
// them: add, then Day 6's RMSNorm; a split copy of q, k, v, then RoPE in place; SiLU to a
// temporary, then a multiply. The GEMMs and the attention are the same calls as the fused layer,
// so the difference between the two rows is the fusions alone. Linked into the benchmarks only.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "../d06_reduction_norms/lab.h"
#include "../d10_gemm/lab.h"
#include "../d12_prefill_attention/lab.h"
#include "course/check.h"
#include "lab.h"
#include "layer_parts.h"  // the fused layer's workspace layout and gemm_bt

namespace d14 {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(
      std::min<std::int64_t>(course::ceil_div<std::int64_t>(n, kThreads), 65535));
}

// One grid-stride loop per kernel, one element per step: the plainest code.
__global__ void add_kernel(const bf16* __restrict__ a, bf16* __restrict__ b, std::int64_t n) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    b[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

__global__ void silu_kernel(const bf16* __restrict__ gate_up, bf16* __restrict__ out,
                            std::int64_t tokens, std::int64_t inter) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < tokens * inter; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = __bfloat162float(gate_up[(i / inter) * 2 * inter + i % inter]);
    out[i] = __float2bfloat16_rn(g / (1.0f + expf(-g)));
  }
}

__global__ void mul_kernel(const bf16* __restrict__ gate_up, bf16* __restrict__ act,
                           std::int64_t tokens, std::int64_t inter) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < tokens * inter; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float u = __bfloat162float(gate_up[(i / inter) * 2 * inter + inter + i % inter]);
    act[i] = __float2bfloat16_rn(__bfloat162float(act[i]) * u);
  }
}

// qkv [tokens, (heads + 2 kv_heads) * dim] -> q, k, v dense.
__global__ void split_kernel(const bf16* __restrict__ qkv, bf16* __restrict__ q,
                             bf16* __restrict__ k, bf16* __restrict__ v, std::int64_t tokens,
                             int qd, int kvd) {
  const std::int64_t row = qd + 2 * kvd;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < tokens * row; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t t = i / row, c = i % row;
    if (c < qd)
      q[t * qd + c] = qkv[i];
    else if (c < qd + kvd)
      k[t * kvd + c - qd] = qkv[i];
    else
      v[t * kvd + c - qd - kvd] = qkv[i];
  }
}

// In place on x [tokens, heads, dim]: one thread per (token, head, pair), its own angle.
__global__ void rope_kernel(bf16* __restrict__ x, int seq_len, std::int64_t tokens, int heads,
                            int dim, float theta) {
  const int half = dim / 2;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < tokens * heads * half; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t th = i / half;
    const int pair = static_cast<int>(i % half);
    const int position = static_cast<int>((th / heads) % seq_len);
    const double inv_freq = exp2(-2.0 * pair / dim * log2(static_cast<double>(theta)));
    double angle = position * static_cast<double>(static_cast<float>(inv_freq));
    angle -= 6.283185307179586 * rint(angle / 6.283185307179586);
    float s, c;
    __sincosf(static_cast<float>(angle), &s, &c);
    bf16* h = x + th * dim;
    const float x1 = __bfloat162float(h[pair]), x2 = __bfloat162float(h[pair + half]);
    h[pair] = __float2bfloat16_rn(x1 * c - x2 * s);
    h[pair + half] = __float2bfloat16_rn(x2 * c + x1 * s);
  }
}

__global__ void cu_seqlens_kernel(std::int32_t* cu, int batch, int seq_len) {
  for (int i = threadIdx.x; i <= batch; i += blockDim.x) cu[i] = i * seq_len;
}

}  // namespace

std::size_t unfused_workspace_bytes(const LayerConfig& config, int batch, int seq_len) {
  return carve(config, batch, seq_len, nullptr).bytes;
}

void decoder_layer_unfused(const LayerConfig& c, const LayerWeights& w, const bfloat16* x,
                           bfloat16* residual, bfloat16* out, int batch, int seq_len,
                           void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  course::require(stream == nullptr || stream == cudaStreamLegacy,
                  "decoder_layer_unfused: runs on the legacy default stream only");
  course::require(c.head_dim == 64 || c.head_dim == 128, "decoder_layer_unfused: head_dim 64/128");
  const std::int64_t tokens = static_cast<std::int64_t>(batch) * seq_len;
  if (tokens == 0) return;
  const Workspace p = carve(c, batch, seq_len, static_cast<char*>(workspace));
  course::require(workspace_bytes >= p.bytes, "decoder_layer_unfused: workspace too small");
  const int qd = c.num_heads * c.head_dim, kvd = c.num_kv_heads * c.head_dim;
  const std::int64_t n_hidden = tokens * c.hidden, n_inter = tokens * c.intermediate;

  cu_seqlens_kernel<<<1, 256>>>(p.cu_seqlens, batch, seq_len);
  COURSE_LAUNCH_CHECK();
  add_kernel<<<blocks_for(n_hidden), kThreads>>>(x, residual, n_hidden);
  COURSE_LAUNCH_CHECK();
  d06::rmsnorm(residual, w.attn_norm, p.h, tokens, c.hidden, c.eps);
  gemm_bt(p.h, w.w_qkv, p.qkv, tokens, qd + 2 * kvd, c.hidden);
  split_kernel<<<blocks_for(tokens * (qd + 2 * kvd)), kThreads>>>(p.qkv, p.q, p.k, p.v, tokens, qd,
                                                                  kvd);
  COURSE_LAUNCH_CHECK();
  rope_kernel<<<blocks_for(tokens * qd / 2), kThreads>>>(p.q, seq_len, tokens, c.num_heads,
                                                         c.head_dim, c.rope_theta);
  COURSE_LAUNCH_CHECK();
  rope_kernel<<<blocks_for(tokens * kvd / 2), kThreads>>>(p.k, seq_len, tokens, c.num_kv_heads,
                                                          c.head_dim, c.rope_theta);
  COURSE_LAUNCH_CHECK();
  d12::PrefillArgs<bfloat16> a;
  a.q = p.q;
  a.k = p.k;
  a.v = p.v;
  a.o = p.attn;
  a.lse = p.lse;
  a.cu_seqlens_q = p.cu_seqlens;
  a.cu_seqlens_kv = p.cu_seqlens;
  a.batch = batch;
  a.total_q = a.total_kv = tokens;
  a.max_seqlen_q = seq_len;
  a.num_heads = c.num_heads;
  a.num_kv_heads = c.num_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.causal = true;
  prefill_attention(a);
  gemm_bt(p.attn, w.w_o, p.proj, tokens, c.hidden, qd);
  add_kernel<<<blocks_for(n_hidden), kThreads>>>(p.proj, residual, n_hidden);
  COURSE_LAUNCH_CHECK();
  d06::rmsnorm(residual, w.mlp_norm, p.h, tokens, c.hidden, c.eps);
  gemm_bt(p.h, w.w_gate_up, p.gate_up, tokens, 2 * std::int64_t{c.intermediate}, c.hidden);
  silu_kernel<<<blocks_for(n_inter), kThreads>>>(p.gate_up, p.act, tokens, c.intermediate);
  COURSE_LAUNCH_CHECK();
  mul_kernel<<<blocks_for(n_inter), kThreads>>>(p.gate_up, p.act, tokens, c.intermediate);
  COURSE_LAUNCH_CHECK();
  gemm_bt(p.act, w.w_down, out, tokens, c.hidden, c.intermediate);
}

}  // namespace d14
