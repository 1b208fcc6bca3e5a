// Day 7 — asynchronous copies and pipelines.
//
// The interface the tests and the benchmark call. Pointers are device pointers; every function
// checks its arguments and throws course::InvalidArgument (a message, never an illegal address)
// or course::CudaError. Work is queued on the default stream; the functions return before it
// finishes. Exercises are numbered as in README.md.
//
// The GEMV of decoding: y[b, n] = sum_k W[n, k] * x[b, k] for b < batch (1..kMaxBatch):
//   W  [N, K] bfloat16, row-major (a weight matrix: read once, the whole cost of the call)
//   x  [batch, K] bfloat16, row-major (the activations of `batch` sequences)
//   y  [batch, N] float32, row-major (accumulated in float32 and stored without rounding: the
//      output is batch * N * 4 bytes against N * K * 2 of W, so its size costs nothing, and the
//      tests see the accumulation itself rather than a bfloat16 rounding on top of it)
// Every variant needs K % 8 == 0 and W, x 16-byte aligned, so that every row of W and x starts
// on a 16-byte boundary and moves in 16-byte chunks (cp.async, cp.async.bulk and TMA copy 16
// bytes at a time); y may have any alignment. K need not be a multiple of the K tile: the last
// tile of a row is partial. Any N >= 1; N == 0 or K == 0 launches nothing (K == 0 writes y = 0).
#pragma once

#include <cstdint>

#include "course/dtype.h"

namespace d07 {

using course::bfloat16;

// ------------------------------------------------------------------------------------------
// Exercise 1 — one 16-byte cp.async three ways (lesson §3). y[i] = x[i] for i < n, every
// 16-byte chunk staged global -> shared -> global through an asynchronous copy. x and y must be
// 16-byte aligned (cp.async copies whole, aligned 16-byte chunks); n may be anything: the last
// n % 4 floats are copied by plain loads and stores. `blocks` > 0 sets the grid (the tests use 1
// and 3 so that every block loops), 0 lets the launcher choose.
void async_copy_1_cuda_pipeline(const float* x, float* y, std::int64_t n, int blocks = 0);
void async_copy_2_primitives(const float* x, float* y, std::int64_t n, int blocks = 0);
void async_copy_3_ptx(const float* x, float* y, std::int64_t n, int blocks = 0);

// ------------------------------------------------------------------------------------------
// Exercises 2-4 — the GEMV progression (lesson §4-§6).
constexpr int kMaxBatch = 16;

// Exercise 2 — synchronous shared-memory tiles: load a tile, barrier, compute, barrier.
void gemv_1_sync(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                 int batch);
// Exercise 3 — cp.async, two stages: the next tile is in flight while this one is computed.
void gemv_2_double_buffer(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N,
                          std::int64_t K, int batch);
// Exercise 4 — a ring of `stages` cp.async stages (one of kMultistageStages).
constexpr int kMultistageStages[] = {3, 4, 6};
constexpr int kDefaultStages = 4;
void gemv_3_multistage(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N,
                       std::int64_t K, int batch, int stages = kDefaultStages);

// ------------------------------------------------------------------------------------------
// Exercises 5-6 — Hopper (compute capability 9.0 and later; the launchers throw
// course::InvalidArgument on older GPUs). The copies complete on an mbarrier whose waits are
// bounded: a barrier that has not completed after kMbarrierTimeoutNs (its expected transaction
// count is more than the copies deliver) makes the kernel record the failure and return instead
// of hanging. check_mbarrier_timeouts() waits for the GPU and throws std::runtime_error saying
// so, if any kernel since the last call timed out.
constexpr long long kMbarrierTimeoutNs = 1000000000;  // 1 s: a stage takes microseconds
void check_mbarrier_timeouts();

// Exercise 5 — the bytes one stage of gemv_4_bulk expects on its mbarrier: `rows` row segments
// of W and `batch` of x, each `chunks` 16-byte chunks long. A pure host function (the kernel
// calls the same arithmetic): tested without a GPU.
std::int64_t bulk_stage_bytes(int rows, int batch, std::int64_t chunks);

// Exercise 5 — 1-D bulk copies (cp.async.bulk) of whole row segments, completing on an
// mbarrier with a transaction count. `debug_extra_tx_bytes` is added to the count each stage
// expects: anything but 0 is a bug on purpose, for the test that checks the bounded wait.
void gemv_4_bulk(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                 int batch, int debug_extra_tx_bytes = 0);

// Exercise 6 — 2-D tiles of W and x by the Tensor Memory Accelerator (a CUtensorMap made by
// cuTensorMapEncodeTiled, cp.async.bulk.tensor.2d). Out-of-bounds parts of a box arrive as
// zeros. `debug_extra_tx_bytes` as above.
void gemv_5_tma(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                int batch, int debug_extra_tx_bytes = 0);

// Given (not an exercise): cuBLAS's cublasGemmEx on the same data, the vendor baseline of the
// benchmark. It is in cublas_baseline.cu, linked into the benchmarks only.
void gemv_0_cublas(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                   int batch);

}  // namespace d07
