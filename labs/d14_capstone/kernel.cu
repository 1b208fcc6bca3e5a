// Day 14 — the capstone decoder layer: RoPE fused with the QKV split, the fused SiLU-and-mul,
// and the layer assembled from the earlier days' kernels (Day 6 fused add + RMSNorm, Day 10
// GEMM, Day 12 prefill attention), with NVTX ranges and CUDA-event timings per stage.
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "../d06_reduction_norms/lab.h"
#include "../d10_gemm/lab.h"
#include "../d12_prefill_attention/lab.h"
#include "course/check.h"
#include "course/json.h"
#include "course/vec.cuh"
#include "lab.h"
#include "layer_parts.h"  // the workspace's layout and gemm_bt, shared with the baseline

namespace d14 {

namespace {

constexpr int kRopeThreads = 128;
constexpr int kMaxHeadDim = 256;
constexpr int kSiluThreads = 256;
constexpr int kSiluVec = course::kVec16<bf16>;  // 8 bfloat16 per 16-byte access
[[maybe_unused]] constexpr double kTwoPi = 6.283185307179586476925286766559;

}  // namespace

// ------------------------------------------------------------------------------------------
// Exercise 1a — theta^(-2 pair / head_dim), computed in float64 and rounded once, so that the
// host (the tests' reference) and the device get the same float (lesson §3.1).
__host__ __device__ inline float inv_freq(int pair, int head_dim, float theta) {
  // TODO(d14.1a): return theta^(-2 pair / head_dim) (lesson §3.1). Compute it in float64
  // (exp2 and log2 of doubles) and round once to float, so that the host and the device get
  // the same value. Until then: -1, which the tests read as "not written yet".
  return -1.0f;
}

// Exercise 1b — one block per token. The head_dim / 2 angles of the token are the same for
// every head, so the block computes their cosines and sines once into shared memory (the angle
// p * inv_freq reduced to [-pi, pi] in float64, where the fast __sincosf is accurate to 2^-21:
// no slow-path range reduction, which would put an array in local memory), then every thread
// rotates (head, pair) pairs of the query and key heads and copies value elements (lesson §3.2),
// VEC pairs at a time: VEC = 8 moves 16 bytes of x[i..] and of x[i + half..] per access (when
// head_dim % 16 == 0 and the pointers are 16-byte aligned), VEC = 1 one element otherwise.
template <int VEC>
__global__ void __launch_bounds__(kRopeThreads)
    rope_qkv_kernel(const bf16* __restrict__ qkv, const std::int32_t* __restrict__ positions,
                    bf16* __restrict__ q, bf16* __restrict__ k, bf16* __restrict__ v, int num_heads,
                    int num_kv_heads, int head_dim, float theta) {
  // TODO(d14.1b): one block per token t = blockIdx.x (lesson §3.2).
  //  1. The angles of the token are the same for every head: threads i < head_dim / 2 compute
  //     a = positions[t] * inv_freq(i, head_dim, theta) in double, reduce it to [-pi, pi]
  //     (a -= 2 pi rint(a / (2 pi))), take __sincosf of it as a float, and store cos and sin in
  //     shared arrays of kMaxHeadDim / 2; then __syncthreads().
  //  2. The row of token t in qkv has (num_heads + 2 num_kv_heads) * head_dim elements: the
  //     query heads, the key heads, the value heads. Loop j = threadIdx.x .. over
  //     (num_heads + num_kv_heads) * head_dim / (2 VEC) groups of VEC (head, pair) pairs:
  //     rotate x[i .. i + VEC - 1] and x[i + half ..] of that head (lab.h gives the formula)
  //     into q or k (dense [t, head, dim]), loaded and stored as course::Vec<bf16, VEC>.
  //  3. Copy the value heads into v [t, kv_head, dim], VEC elements at a time.
}

// ------------------------------------------------------------------------------------------
// Exercise 2 — block (t, y) serves token t: the threads of its y-blocks walk the token's
// intermediate columns, VEC at a time. VEC = 8 moves 16 bytes of gate and of up per thread (when
// every row is 16-byte aligned), VEC = 1 one element otherwise. One read of gate_up, one write of
// out: the unfused chain (SiLU to a temporary, then a multiply) moves twice the bytes (lesson §4).
template <int VEC>
__global__ void __launch_bounds__(kSiluThreads)
    silu_and_mul_kernel(const bf16* __restrict__ gate_up, bf16* __restrict__ out,
                        std::int64_t inter) {
  // TODO(d14.2): token t = blockIdx.x; gate = its first inter values, up = the next inter
  // (lesson §4). Threads of the y-blocks walk the columns VEC at a time
  // (i = (blockIdx.y * blockDim.x + threadIdx.x) * VEC, step gridDim.y * blockDim.x * VEC):
  // load VEC gate and VEC up values with course::Vec<bf16, VEC>, compute
  // g / (1 + expf(-g)) * u in float, round once (__float2bfloat16_rn), store VEC outputs.
}

// The batch's bookkeeping: cu_seqlens[b] = b * seq_len for b = 0 .. batch, and the position of
// every token (t % seq_len).
__global__ void batch_indices_kernel(std::int32_t* __restrict__ cu_seqlens,
                                     std::int32_t* __restrict__ positions, int batch, int seq_len) {
  const std::int64_t tokens = static_cast<std::int64_t>(batch) * seq_len;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < tokens || i <= batch; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if (i < tokens) positions[i] = static_cast<std::int32_t>(i % seq_len);
    if (i <= batch) cu_seqlens[i] = static_cast<std::int32_t>(i * seq_len);
  }
}

// ------------------------------------------------------------------------------------------
// Launchers.

namespace {

bool is_legacy(cudaStream_t stream) { return stream == nullptr || stream == cudaStreamLegacy; }

void check_config(const LayerConfig& c, int batch, int seq_len, const char* fn) {
  const std::string f = fn;
  course::require(c.hidden > 0 && c.hidden % 8 == 0,
                  f +
                      ": hidden must be a positive multiple of 8 (the GEMMs' K rows are 16-byte "
                      "aligned), got " +
                      std::to_string(c.hidden));
  course::require(
      c.intermediate > 0 && c.intermediate % 8 == 0,
      f + ": intermediate must be a positive multiple of 8, got " + std::to_string(c.intermediate));
  course::require(
      c.head_dim == 64 || c.head_dim == 128,
      f + ": head_dim must be 64 or 128 (Day 12's attention), got " + std::to_string(c.head_dim));
  course::require(c.num_heads > 0 && c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0,
                  f + ": num_heads must be a positive multiple of num_kv_heads");
  course::require(c.eps > 0.0f && c.rope_theta > 1.0f, f + ": eps > 0 and rope_theta > 1");
  course::require(batch >= 0 && seq_len >= 0, f + ": batch and seq_len must be >= 0");
  course::require(static_cast<std::int64_t>(batch) * seq_len < (std::int64_t{1} << 31),
                  f + ": batch * seq_len must be below 2^31");
}

// Opens an NVTX range and, with a recorder, records the stage's start event; closes both when
// it goes out of scope.
class Stage {
 public:
  Stage(StageRecorder* recorder, const char* name, cudaStream_t stream)
      : recorder_(recorder), stream_(stream) {
    nvtxRangePushA(name);
    if (recorder_ != nullptr) recorder_->begin(name, stream_);
  }
  ~Stage() {
    if (recorder_ != nullptr) recorder_->end(stream_);
    nvtxRangePop();
  }
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

 private:
  StageRecorder* recorder_;
  cudaStream_t stream_;
};

// Orders the legacy default stream (where the earlier days' launchers queue) after `stream` on
// construction, and `stream` after the legacy stream on finish(): the caller's stream sees the
// layer as if it ran there (lesson §2.3). Nothing to do when `stream` is the legacy stream.
class LegacyStreamBridge {
 public:
  explicit LegacyStreamBridge(cudaStream_t stream) : stream_(stream) {
    if (is_legacy(stream_)) return;
    COURSE_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    COURSE_CUDA_CHECK(cudaEventRecord(event_, stream_));
    COURSE_CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, event_, 0));
  }
  void finish() {
    if (event_ == nullptr) return;
    COURSE_CUDA_CHECK(cudaEventRecord(event_, cudaStreamLegacy));
    COURSE_CUDA_CHECK(cudaStreamWaitEvent(stream_, event_, 0));
  }
  ~LegacyStreamBridge() {
    if (event_ != nullptr) cudaEventDestroy(event_);  // released once the GPU is past it
  }
  LegacyStreamBridge(const LegacyStreamBridge&) = delete;
  LegacyStreamBridge& operator=(const LegacyStreamBridge&) = delete;

 private:
  cudaStream_t stream_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace

void rope_qkv(const bfloat16* qkv, const std::int32_t* positions, bfloat16* q, bfloat16* k,
              bfloat16* v, std::int64_t tokens, int num_heads, int num_kv_heads, int head_dim,
              float theta, cudaStream_t stream) {
  course::require(tokens >= 0 && tokens < (std::int64_t{1} << 31),
                  "rope_qkv: tokens must be in [0, 2^31)");
  course::require(num_heads > 0 && num_kv_heads > 0, "rope_qkv: head counts must be positive");
  course::require(
      head_dim > 0 && head_dim % 2 == 0 && head_dim <= kMaxHeadDim,
      "rope_qkv: head_dim must be even and at most 256, got " + std::to_string(head_dim));
  course::require(theta > 1.0f && std::isfinite(theta), "rope_qkv: theta must be finite and > 1");
  if (tokens == 0) return;
  course::require(qkv && positions && q && k && v, "rope_qkv: a pointer is null");
  constexpr int kV = course::kVec16<bf16>;  // 8 pairs: 16 bytes of each half per access
  const bool vector_ok = head_dim % (2 * kV) == 0 && course::is_aligned(qkv, 16) &&
                         course::is_aligned(q, 16) && course::is_aligned(k, 16) &&
                         course::is_aligned(v, 16);
  if (vector_ok)
    rope_qkv_kernel<kV><<<static_cast<unsigned>(tokens), kRopeThreads, 0, stream>>>(
        qkv, positions, q, k, v, num_heads, num_kv_heads, head_dim, theta);
  else
    rope_qkv_kernel<1><<<static_cast<unsigned>(tokens), kRopeThreads, 0, stream>>>(
        qkv, positions, q, k, v, num_heads, num_kv_heads, head_dim, theta);
  COURSE_LAUNCH_CHECK();
}

void silu_and_mul(const bfloat16* gate_up, bfloat16* out, std::int64_t tokens, std::int64_t inter,
                  cudaStream_t stream) {
  course::require(tokens >= 0 && tokens < (std::int64_t{1} << 31),
                  "silu_and_mul: tokens must be in [0, 2^31)");
  course::require(inter >= 1, "silu_and_mul: inter must be >= 1");
  if (tokens == 0) return;
  course::require(gate_up && out, "silu_and_mul: a pointer is null");
  const bool vec =
      inter % kSiluVec == 0 && course::is_aligned(gate_up, 16) && course::is_aligned(out, 16);
  const int width = vec ? kSiluVec : 1;
  const std::int64_t per_row = course::ceil_div<std::int64_t>(inter, width);
  const unsigned blocks_y = static_cast<unsigned>(
      std::min<std::int64_t>(course::ceil_div<std::int64_t>(per_row, kSiluThreads), 64));
  const dim3 grid(static_cast<unsigned>(tokens), blocks_y);
  if (vec)
    silu_and_mul_kernel<kSiluVec><<<grid, kSiluThreads, 0, stream>>>(gate_up, out, inter);
  else
    silu_and_mul_kernel<1><<<grid, kSiluThreads, 0, stream>>>(gate_up, out, inter);
  COURSE_LAUNCH_CHECK();
}

float rope_inv_freq(int pair, int head_dim, float theta) { return inv_freq(pair, head_dim, theta); }

std::size_t layer_workspace_bytes(const LayerConfig& config, int batch, int seq_len) {
  return carve(config, batch, seq_len, nullptr).bytes;
}

StageRecorder::~StageRecorder() {
  for (auto& e : entries_) {
    if (e.start) cudaEventDestroy(e.start);
    if (e.stop) cudaEventDestroy(e.stop);
  }
}

void StageRecorder::begin(const char* name, cudaStream_t stream) {
  Entry e;
  e.name = name;
  COURSE_CUDA_CHECK(cudaEventCreate(&e.start));
  COURSE_CUDA_CHECK(cudaEventCreate(&e.stop));
  entries_.push_back(e);
  COURSE_CUDA_CHECK(cudaEventRecord(entries_.back().start, stream));
}

void StageRecorder::end(cudaStream_t stream) {
  course::require(!entries_.empty(), "StageRecorder::end without begin");
  COURSE_CUDA_CHECK(cudaEventRecord(entries_.back().stop, stream));
}

std::vector<StageTiming> StageRecorder::collect() {
  std::vector<StageTiming> out;
  for (auto& e : entries_) {
    COURSE_CUDA_CHECK(cudaEventSynchronize(e.stop));
    float start_ms = 0.0f, stop_ms = 0.0f;
    COURSE_CUDA_CHECK(cudaEventElapsedTime(&start_ms, entries_.front().start, e.start));
    COURSE_CUDA_CHECK(cudaEventElapsedTime(&stop_ms, entries_.front().start, e.stop));
    out.push_back({e.name, 1000.0 * start_ms, 1000.0 * stop_ms});
  }
  for (auto& e : entries_) {
    cudaEventDestroy(e.start);
    cudaEventDestroy(e.stop);
  }
  entries_.clear();
  return out;
}

void write_trace(const std::string& path, const std::vector<StageTiming>& stages,
                 const std::string& title) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("write_trace: cannot open " + path);
  f << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  f << "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": "
    << course::json_string(title) << "}}";
  for (const StageTiming& s : stages) {
    char times[96];
    std::snprintf(times, sizeof times, "\"ts\": %.3f, \"dur\": %.3f", s.start_us,
                  s.end_us - s.start_us);
    f << ",\n  {\"name\": " << course::json_string(s.name)
      << ", \"cat\": \"stage\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, " << times << "}";
  }
  f << "\n]}\n";
  if (!f) throw std::runtime_error("write_trace: writing " + path + " failed");
}

void decoder_layer(const LayerConfig& config, const LayerWeights& weights, const bfloat16* x,
                   bfloat16* residual, bfloat16* out, int batch, int seq_len, void* workspace,
                   std::size_t workspace_bytes, cudaStream_t stream, StageRecorder* recorder) {
  check_config(config, batch, seq_len, "decoder_layer");
  const std::int64_t tokens = static_cast<std::int64_t>(batch) * seq_len;
  if (tokens == 0) return;
  const LayerConfig& c = config;
  course::require(x && residual && out && workspace, "decoder_layer: a pointer is null");
  course::require(weights.attn_norm && weights.w_qkv && weights.w_o && weights.mlp_norm &&
                      weights.w_gate_up && weights.w_down,
                  "decoder_layer: a weight pointer is null");
  course::require(course::is_aligned(workspace, 256),
                  "decoder_layer: workspace must be 256-byte aligned");
  const Workspace ws = carve(c, batch, seq_len, static_cast<char*>(workspace));
  course::require(workspace_bytes >= ws.bytes,
                  "decoder_layer: the workspace has " + std::to_string(workspace_bytes) +
                      " bytes, layer_workspace_bytes() asks for " + std::to_string(ws.bytes));
  [[maybe_unused]] const std::int64_t qd = static_cast<std::int64_t>(c.num_heads) * c.head_dim;
  [[maybe_unused]] const std::int64_t kvd = static_cast<std::int64_t>(c.num_kv_heads) * c.head_dim;

  // Everything below runs on the legacy default stream, ordered after `stream`.
  LegacyStreamBridge bridge(stream);
  const cudaStream_t s = cudaStreamLegacy;
  nvtxRangePushA("decoder_layer");
  batch_indices_kernel<<<static_cast<unsigned>(std::min<std::int64_t>(
                             course::ceil_div<std::int64_t>(tokens + 1, 256), 1024)),
                         256, 0, s>>>(ws.cu_seqlens, ws.positions, batch, seq_len);
  COURSE_LAUNCH_CHECK();
  // TODO(d14.3): the eight stages of lab.h, in order, each inside its own scope that opens
  //   Stage st(recorder, "<name>", s);
  // with the names of layer_stage_names() (NVTX range + timing events, lesson §6):
  //   d06::fused_add_rmsnorm(x, residual, attn_norm, ws.h, ...)       add_rmsnorm_attn
  //   gemm_bt(ws.h, w_qkv, ws.qkv, tokens, qd + 2 kvd, hidden)        qkv_gemm
  //   rope_qkv(ws.qkv, ws.positions, ws.q, ws.k, ws.v, ..., s)        rope
  //   prefill_attention(args) (layer_parts.h, Day 12's kernels):      attention
  //     causal, cu_seqlens for q and kv, scale 1 / sqrt(head_dim),
  //     lse into ws.lse, o into ws.attn
  //   gemm_bt(ws.attn, w_o, ws.proj, ...)                             o_gemm
  //   d06::fused_add_rmsnorm(ws.proj, residual, mlp_norm, ws.h, ...)  add_rmsnorm_mlp
  //   gate_up_silu(ws.h, w_gate_up, ws.gate_up, ws.act, ...)          gate_up_silu
  //     (layer_parts.h: Day 10's GEMM with the SiLU in its epilogue, or
  //     gemm_bt and your silu_and_mul)
  //   gemm_bt(ws.act, w_down, out, ...)                               down_gemm
  nvtxRangePop();
  bridge.finish();
}

}  // namespace d14
