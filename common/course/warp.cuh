// Warp-wide reductions with butterfly shuffles (you write these on Day 3; later days use this
// copy).
//
// shfl.xor with lane masks 16, 8, 4, 2, 1 exchanges values between lanes whose indices differ
// in one bit; after five steps every lane holds the result over all 32 lanes, with no shared
// memory and no barrier. All 32 lanes must take part (full mask).
#pragma once

namespace course {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// fmaxf ignores a NaN operand; a NaN anywhere in the row must reach the result, so it is
// propagated explicitly.
__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || a > b) ? a : b; }

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v = nan_max(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

}  // namespace course
