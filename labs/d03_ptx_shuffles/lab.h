// Day 3 — PTX, the special function unit, and warp shuffles.
//
// The interface the tests and the benchmark call. Pointers are device pointers; every function
// checks its arguments and throws course::InvalidArgument (a message, never an illegal address)
// or course::CudaError. Exercises are numbered as in README.md.
#pragma once

#include <cstdint>

#include "course/dtype.h"  // course::half, course::bfloat16

namespace d03 {

// ---------------------------------------------------------------------------------------------
// Exercise 1: fast math in inline PTX. One wrapper per instruction, named after the PTX it
// emits: ptx_exp2 (ex2.approx.f32), ptx_log2 (lg2.approx.f32), ptx_rsqrt (rsqrt.approx.f32),
// ptx_tanh (tanh.approx.f32).
enum class MathFn { kExp2, kLog2, kRsqrt, kTanh };

inline const char* math_fn_name(MathFn f) {
  switch (f) {
    case MathFn::kExp2:
      return "exp2";
    case MathFn::kLog2:
      return "log2";
    case MathFn::kRsqrt:
      return "rsqrt";
    case MathFn::kTanh:
      return "tanh";
  }
  return "?";
}

// The step between the arguments of the terms below: a power of two, so that j * kTermStep is
// exact and x + j * kTermStep rounds the same way on the CPU and the GPU.
constexpr float kTermStep = 1.0f / 1024.0f;

// y[i] = sum over j < terms of f(x[i] + j * kTermStep), with your PTX wrapper for f.
// terms = 1 (what the tests use) is simply y[i] = f(x[i]). The benchmark raises `terms` so that
// each element costs many special-function evaluations and one load: then the kernel is limited
// by the special function unit instead of by DRAM.
void ptx_math(MathFn f, const float* x, float* y, std::int64_t n, int terms = 1);

// Given (the baseline): the same with the CUDA math library's exp2f, log2f, rsqrtf, tanhf.
void library_math(MathFn f, const float* x, float* y, std::int64_t n, int terms = 1);

// ---------------------------------------------------------------------------------------------
// Exercises 2 and 3: warp shuffles. The array is split into segments of kSegment = 32 elements,
// one warp per segment, lane k holding element 32*s + k; the last segment may be shorter, and
// its lanes past the end hold the operation's identity (0 for sums, -inf for max).
constexpr int kSegment = 32;

// 2a. out[s] = sum of segment s (butterfly, shfl.bfly). out has ceil(n / 32) elements.
void segment_sum(const float* x, float* out, std::int64_t n);
// 2b. out[s] = max of segment s; NaN when the segment holds a NaN.
void segment_max(const float* x, float* out, std::int64_t n);
// 2c. y[i] = the element of lane src_lane of i's segment (shfl.idx); 0 when that lane is past
// the end of x. 0 <= src_lane < 32.
void segment_broadcast(const float* x, float* y, std::int64_t n, int src_lane);
// 2d. y[i] = x[32*s] + ... + x[i]: the inclusive scan within each segment (shfl.up).
void segment_scan(const float* x, float* y, std::int64_t n);

// 3a. The segment sum in float64: a 64-bit value crosses the warp as two 32-bit shuffles.
void segment_sum(const double* x, double* out, std::int64_t n);
// 3b. x holds `pairs` pairs of halves, interleaved: x[2i] = a_i, x[2i+1] = b_i. Per segment of 32
// pairs, out[2s] = max of the a's and out[2s+1] = max of the b's (NaN propagates per channel):
// both halves cross the warp in ONE 32-bit shuffle. x and out must be 4-byte aligned.
void segment_max_pairs(const course::half* x, course::half* out, std::int64_t pairs);

// ---------------------------------------------------------------------------------------------
// Exercise 4: GeLU (tanh approximation) with tanh.approx:
//   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// computed in float32 whatever the storage type, 16-byte accesses where the pointers allow.
void gelu_fast(const float* x, float* y, std::int64_t n);
void gelu_fast(const course::half* x, course::half* y, std::int64_t n);
void gelu_fast(const course::bfloat16* x, course::bfloat16* y, std::int64_t n);

// Given (the baseline): the same GeLU in float32 with the math library's tanhf.
void gelu_tanhf(const float* x, float* y, std::int64_t n);

}  // namespace d03
