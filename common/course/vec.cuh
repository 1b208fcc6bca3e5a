// course::Vec<T, N>: N elements of T moved as one aligned access.
//
// You write this type yourself on Day 2; from Day 3 on the labs use this copy. A warp whose
// 32 threads each load 16 contiguous, 16-byte-aligned bytes issues one 128-bit load per
// thread (LDG.E.128 in SASS): a quarter of the instructions of 4-byte loads for the same
// bytes, and more bytes in flight per thread, which is what keeps DRAM busy.
// Usage:  Vec<half, kVec16<half>> v; v.load(p + i); ... v[k] ...; v.store(q + i);
// p + i must be 16-byte aligned (course::is_aligned on the host side decides the path).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace course {

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  static_assert((sizeof(T) * N & (sizeof(T) * N - 1)) == 0, "a Vec must be a power-of-two size");
  static constexpr int kSize = N;
  T data[N];

  __device__ __forceinline__ T& operator[](int i) { return data[i]; }
  __device__ __forceinline__ const T& operator[](int i) const { return data[i]; }
  __device__ __forceinline__ void load(const T* ptr) { *this = *reinterpret_cast<const Vec*>(ptr); }
  __device__ __forceinline__ void store(T* ptr) const { *reinterpret_cast<Vec*>(ptr) = *this; }
};

// How many elements of T fill 16 bytes: 4 floats, 8 halfs or bfloat16s.
template <class T>
inline constexpr int kVec16 = 16 / static_cast<int>(sizeof(T));

// Arithmetic on 16-bit types is done in float: convert in, compute, convert out (round to
// nearest even), as every kernel in the course does.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

}  // namespace course
