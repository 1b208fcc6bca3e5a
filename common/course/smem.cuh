// Shared memory: the opt-in to more than 48 KiB of it, and the shared-memory (32-bit) address of
// a generic pointer into it, as the PTX instructions that name shared memory take it (cp.async,
// ldmatrix, mbarrier, TMA). Its own header so that course/mbarrier.cuh does not bring
// course/cp_async.cuh into Day 7, whose students write their own cp.async.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "course/check.h"

namespace course {

// Dynamic shared memory beyond 48 KiB must be asked for, kernel by kernel, before the launch.
template <class Kernel>
void allow_dynamic_smem(Kernel kernel, std::size_t bytes) {
  COURSE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
}

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

}  // namespace course
