// Day 14 — given: what the fused layer (kernel.cu) and the benchmark's unfused baseline
// (unfused_baseline.cu) share, so that the two differ in their element-wise kernels alone: the
// layout of the workspace, and the GEMM and the attention they both call.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "../d10_gemm/lab.h"
#include "../d12_prefill_attention/lab.h"
#include "course/check.h"
#include "course/device.h"
#include "lab.h"

namespace d14 {

using bf16 = __nv_bfloat16;

// The workspace's parts, each 256-byte aligned.
struct Workspace {
  std::int32_t* positions = nullptr;
  std::int32_t* cu_seqlens = nullptr;
  bf16 *h = nullptr, *qkv = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *attn = nullptr,
       *proj = nullptr, *gate_up = nullptr, *act = nullptr;
  float* lse = nullptr;
  std::size_t bytes = 0;
};

inline Workspace carve(const LayerConfig& c, int batch, int seq_len, char* base) {
  const std::size_t tokens = static_cast<std::size_t>(batch) * seq_len;
  const std::size_t qd = static_cast<std::size_t>(c.num_heads) * c.head_dim;
  const std::size_t kvd = static_cast<std::size_t>(c.num_kv_heads) * c.head_dim;
  Workspace w;
  std::size_t at = 0;
  const auto take = [&](std::size_t bytes) {
    char* p = base == nullptr ? nullptr : base + at;
    at += (bytes + 255) / 256 * 256;
    return p;
  };
  w.positions = reinterpret_cast<std::int32_t*>(take(tokens * 4));
  w.cu_seqlens = reinterpret_cast<std::int32_t*>(take((static_cast<std::size_t>(batch) + 1) * 4));
  w.h = reinterpret_cast<bf16*>(take(tokens * c.hidden * 2));
  w.qkv = reinterpret_cast<bf16*>(take(tokens * (qd + 2 * kvd) * 2));
  w.q = reinterpret_cast<bf16*>(take(tokens * qd * 2));
  w.k = reinterpret_cast<bf16*>(take(tokens * kvd * 2));
  w.v = reinterpret_cast<bf16*>(take(tokens * kvd * 2));
  w.attn = reinterpret_cast<bf16*>(take(tokens * qd * 2));
  w.lse = reinterpret_cast<float*>(take(tokens * c.num_heads * 4));
  w.proj = reinterpret_cast<bf16*>(take(tokens * c.hidden * 2));
  w.gate_up =
      reinterpret_cast<bf16*>(take(tokens * 2 * static_cast<std::size_t>(c.intermediate) * 2));
  w.act = reinterpret_cast<bf16*>(take(tokens * static_cast<std::size_t>(c.intermediate) * 2));
  w.bytes = at;
  return w;
}

// Day 10's bfloat16 GEMM, C = A B^T with B a [N, K] weight: the TMA + wgmma kernel (step 7) on
// compute capability 9.0, the mma.sync one (step 6) elsewhere. Legacy default stream.
inline void gemm_bt(const bf16* a, const bf16* b, bf16* c, std::int64_t m, std::int64_t n,
                    std::int64_t k) {
  if (course::is_hopper())
    d10::gemm_7_wgmma(a, b, c, m, n, k);
  else
    d10::gemm_6_mma(a, b, c, m, n, k, d10::BLayout::kColMajor);
}

// The gated MLP's first half, act = silu(h W_gate^T) * (h W_up^T) with w_gate_up = [W_gate; W_up]
// [2 inter, hidden]: on compute capability 9.0 one kernel, Day 10's gemm_7_silu_mul (the
// activation in the GEMM's epilogue, so the [tokens, 2 inter] gate/up product never reaches
// memory: lesson §4); elsewhere gemm_bt into `gate_up`, then silu_and_mul (Exercise 2).
// Legacy default stream.
inline void gate_up_silu(const bf16* h, const bf16* w_gate_up, bf16* gate_up, bf16* act,
                         std::int64_t tokens, std::int64_t inter, std::int64_t hidden) {
  if (course::is_hopper()) {
    d10::gemm_7_silu_mul(h, w_gate_up, act, tokens, inter, hidden);
  } else {
    gemm_bt(h, w_gate_up, gate_up, tokens, 2 * inter, hidden);
    silu_and_mul(gate_up, act, tokens, inter, cudaStreamLegacy);
  }
}

// Day 12's causal prefill over the layer's q, k, v: the Hopper kernel (TMA + wgmma, Exercise 6)
// on compute capability 9.0 with head dim 128, the mma.sync one (prefill_1_mma) elsewhere.
// Legacy default stream.
inline void prefill_attention(const d12::PrefillArgs<bf16>& a) {
  if (course::is_hopper() && a.head_dim == 128)
    d12::prefill_2_wgmma(a);
  else
    d12::prefill_1_mma(a);
}

}  // namespace d14
