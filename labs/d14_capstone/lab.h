// Day 14 — the capstone: one Llama-style decoder layer from the course's own kernels, and the
// bridge that hands them to PyTorch (DLPack, python/).
//
// The interface the tests and the benchmark call. Pointers are device pointers; every function
// checks its arguments and throws course::InvalidArgument (a message, never an illegal address)
// or course::CudaError. Unlike the earlier days, every launcher takes a cudaStream_t (a
// framework runs its work on a stream of its own: lesson §2); the functions return before the
// work finishes. Everything is bfloat16 in memory and float32 in arithmetic. Exercises are
// numbered as in README.md.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/dtype.h"

namespace d14 {

using course::bfloat16;

// ------------------------------------------------------------------------------------------
// Exercise 1 — rotary position embedding (RoPE, "rotate half" as in Llama / GPT-NeoX,
// lesson §3), fused with the split of the QKV projection's output.
//
// Exercise 1a (host-tested) — the rotation speed of pair `pair` (0 <= pair < head_dim / 2):
//   inv_freq(pair) = theta ^ (-2 * pair / head_dim)
// The same function the kernel calls (computed in float32).
float rope_inv_freq(int pair, int head_dim, float theta);

// Exercise 1b — qkv is the QKV GEMM's output [tokens, (num_heads + 2 * num_kv_heads) * head_dim]:
// per token the num_heads query heads, then the num_kv_heads key heads, then the value heads.
// Writes the three dense tensors attention reads:
//   q [tokens, num_heads, head_dim], k [tokens, num_kv_heads, head_dim] rotated,
//   v [tokens, num_kv_heads, head_dim] copied.
// Rotation of one head x (half = head_dim / 2, p = positions[token], a = p * inv_freq(i)):
//   out[i]        = x[i] * cos(a) - x[i + half] * sin(a)        0 <= i < half
//   out[i + half] = x[i + half] * cos(a) + x[i] * sin(a)
// head_dim even, <= 256; positions int32 >= 0, device, [tokens]. tokens == 0 launches nothing.
void rope_qkv(const bfloat16* qkv, const std::int32_t* positions, bfloat16* q, bfloat16* k,
              bfloat16* v, std::int64_t tokens, int num_heads, int num_kv_heads, int head_dim,
              float theta, cudaStream_t stream = nullptr);

// ------------------------------------------------------------------------------------------
// Exercise 2 — the gated MLP's activation, fused (lesson §4): gate_up is the gate/up GEMM's
// output [tokens, 2 * inter] (per token the inter gate values, then the inter up values), and
//   out[t, i] = silu(gate[t, i]) * up[t, i],   silu(g) = g / (1 + exp(-g))
// in float32, rounded once to bfloat16. out [tokens, inter]. Any inter >= 1, any alignment.
void silu_and_mul(const bfloat16* gate_up, bfloat16* out, std::int64_t tokens, std::int64_t inter,
                  cudaStream_t stream = nullptr);

// ------------------------------------------------------------------------------------------
// Exercise 3 — the decoder layer (lesson §5), forward pass of a prefill: `batch` sequences of
// `seq_len` tokens each, tokens = batch * seq_len rows, row t at position t % seq_len.
//   residual += x;             h = rmsnorm(residual) * attn_norm      Day 6 fused add + RMSNorm
//   qkv = h W_qkv^T                                                  Day 10 GEMM
//   q, k, v = rope_qkv(qkv)                                          Exercise 1
//   a = causal attention(q, k, v), scale 1 / sqrt(head_dim)          Day 12 prefill
//   o = a W_o^T                                                      Day 10 GEMM
//   residual += o;             h = rmsnorm(residual) * mlp_norm       Day 6 fused add + RMSNorm
//   m = silu(h W_gate^T) * (h W_up^T);  out = m W_down^T              Day 10 (layer_parts.h), Day 10
// On return `residual` holds x + residual + o (the residual stream after attention) and `out`
// the MLP's output: the next layer's (x, residual), as vLLM's Llama layers pass them.
// Weights are PyTorch Linear weights, [out_features, in_features] row-major.
struct LayerConfig {
  int hidden = 0;        // multiple of 8 (every GEMM's K: 16-byte rows)
  int num_heads = 0;     // num_heads * head_dim need not equal hidden
  int num_kv_heads = 0;  // divides num_heads (grouped-query attention)
  int head_dim = 0;      // 64 or 128 (Day 12)
  int intermediate = 0;  // multiple of 8
  float eps = 1e-5f;
  float rope_theta = 10000.0f;
};
struct LayerWeights {
  const bfloat16* attn_norm = nullptr;  // [hidden]
  const bfloat16* w_qkv = nullptr;      // [(num_heads + 2 num_kv_heads) head_dim, hidden]
  const bfloat16* w_o = nullptr;        // [hidden, num_heads head_dim]
  const bfloat16* mlp_norm = nullptr;   // [hidden]
  const bfloat16* w_gate_up = nullptr;  // [2 intermediate, hidden] (gate rows, then up rows)
  const bfloat16* w_down = nullptr;     // [hidden, intermediate]
};

// The layer's stages, in order (the NVTX ranges and the trace use these names).
inline const std::vector<std::string>& layer_stage_names() {
  static const std::vector<std::string> names = {"add_rmsnorm_attn", "qkv_gemm", "rope",
                                                 "attention",        "o_gemm",   "add_rmsnorm_mlp",
                                                 "gate_up_silu",     "down_gemm"};
  return names;
}

// Bytes of scratch memory decoder_layer needs for this shape (the intermediate tensors, the
// positions and the cu_seqlens of the batch), each part 256-byte aligned.
std::size_t layer_workspace_bytes(const LayerConfig& config, int batch, int seq_len);

// Records a CUDA event before and after each stage (and opens an NVTX range around it): the
// per-stage GPU times of a trace (lesson §6). Given, complete.
struct StageTiming {
  std::string name;
  double start_us = 0.0, end_us = 0.0;  // from the first stage's start
};
class StageRecorder {
 public:
  StageRecorder() = default;
  ~StageRecorder();
  StageRecorder(const StageRecorder&) = delete;
  StageRecorder& operator=(const StageRecorder&) = delete;
  void begin(const char* name, cudaStream_t stream);
  void end(cudaStream_t stream);
  // Waits for the events and returns one entry per recorded stage; forgets them.
  std::vector<StageTiming> collect();

 private:
  struct Entry {
    std::string name;
    cudaEvent_t start = nullptr, stop = nullptr;
  };
  std::vector<Entry> entries_;
};

// x, residual, out: [batch * seq_len, hidden]; out must not overlap x or residual. workspace:
// layer_workspace_bytes() bytes, 256-byte aligned (cudaMalloc's are). The work is ordered on
// `stream`; the earlier days' launchers queue on the legacy default stream, so the layer makes
// that stream wait for `stream` first and `stream` wait for it at the end (lesson §2.3).
// `recorder`, when not null, times every stage.
void decoder_layer(const LayerConfig& config, const LayerWeights& weights, const bfloat16* x,
                   bfloat16* residual, bfloat16* out, int batch, int seq_len, void* workspace,
                   std::size_t workspace_bytes, cudaStream_t stream = nullptr,
                   StageRecorder* recorder = nullptr);

// Given — the stages as a Chrome trace-event JSON file (open it in https://ui.perfetto.dev or
// chrome://tracing): one complete event ("ph": "X") per stage, times in microseconds.
void write_trace(const std::string& path, const std::vector<StageTiming>& stages,
                 const std::string& title = "d14 decoder layer");

// Given (not an exercise): the benchmark's baseline, in unfused_baseline.cu (linked into the
// benchmarks only): the same layer with the element-wise work unfused, one simple kernel per
// operation (add, RMSNorm (Day 6's), RoPE, split copy, SiLU, multiply), as an eager framework
// runs it. Same arguments; its workspace is unfused_workspace_bytes().
std::size_t unfused_workspace_bytes(const LayerConfig& config, int batch, int seq_len);
void decoder_layer_unfused(const LayerConfig& config, const LayerWeights& weights,
                           const bfloat16* x, bfloat16* residual, bfloat16* out, int batch,
                           int seq_len, void* workspace, std::size_t workspace_bytes,
                           cudaStream_t stream = nullptr);

}  // namespace d14
