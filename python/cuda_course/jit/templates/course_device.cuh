// The device helpers of the course that the JIT's templates use, pasted into every rendered
// source by the templates' include, so that the source nvcc compiles is the whole
// translation unit and its hash (the cache key) covers them. Copies, line for line, of
// common/course/vec.cuh (Vec, kVec16, to_float, from_float), common/course/warp.cuh (warp_sum,
// warp_max) and common/course/cp_async.cuh + smem.cuh (cp.async with zero fill): the package
// works from a pip install, without the course's checkout. Change them there and here together.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace course {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;

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

template <class T>
inline constexpr int kVec16 = 16 / static_cast<int>(sizeof(T));

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

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || a > b) ? a : b; }

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v = nan_max(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, or 16 zero bytes when !valid (`src` must still be a valid address).
// `smem_dst` is a shared-memory address (smem_address).
__device__ __forceinline__ void cp_async_16_zfill(std::uint32_t smem_dst, const void* src,
                                                  bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
// The same with a generic pointer into shared memory.
__device__ __forceinline__ void cp_async_16_zfill(void* smem_dst, const void* src, bool valid) {
  cp_async_16_zfill(smem_address(smem_dst), src, valid);
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace course
