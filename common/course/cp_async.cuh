// cp.async: 16-byte copies from global to shared memory that bypass the registers (you write
// these on Day 7; Days 10-12 use this copy).
//
// cp.async.cg caches in L2 only: the data goes to shared memory, not through L1. Each thread's
// copies are grouped by commit_group; wait_group N returns once all but the newest N groups of
// this thread have landed (other threads' copies need a barrier as well). The zero-filling form
// reads src-size = 0 bytes when `valid` is false and writes 16 zero bytes: the parts of a tile
// past the end of a matrix or a sequence arrive as zeros, never as stale data or NaN.
#pragma once

#include <cstdint>

#include "course/smem.cuh"

namespace course {

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

// Waits until at most kPending of this thread's newest groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace course
