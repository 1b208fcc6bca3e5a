// The shared-memory (32-bit) address of a generic pointer into shared memory, as the PTX
// instructions that name shared memory take it (cp.async, ldmatrix, mbarrier, TMA). Its own
// header so that course/mbarrier.cuh does not bring course/cp_async.cuh into Day 7, whose
// students write their own cp.async.
#pragma once

#include <cstdint>

namespace course {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

}  // namespace course
