// wgmma's synchronisation, as small functions (lesson 10 §8.4, lesson 12 §9): Days 10 and 12 use
// this copy; Day 9's students write their own once.
//
// wgmma.mma_async runs behind the warpgroup's back: it reads its operands and writes its
// accumulator registers after the instruction has issued, until a wait_group says the group it
// was committed in is complete. The compiler knows none of this, hence fence_registers.
#pragma once

#include <cstdint>

namespace course {

// Before the first wgmma of a batch, and whenever registers a wgmma reads or accumulates into
// were written since the last one: orders those register (and shared-memory) accesses first.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
// Closes the batch of wgmma issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most kPending of this thread's committed groups are still running (groups
// complete in order: wait<1> after two commits waits for the first).
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Pins registers to this point of the program: the compiler sees them read and written here, so
// no use of a wgmma's accumulators (or of the registers it reads) moves across the wait_group
// that makes them valid.
template <int kCount>
__device__ __forceinline__ void fence_registers(float (&r)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int kCount>
__device__ __forceinline__ void fence_registers(std::uint32_t (&r)[kCount][4]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i)
    asm volatile("" : "+r"(r[i][0]), "+r"(r[i][1]), "+r"(r[i][2]), "+r"(r[i][3])::"memory");
}

}  // namespace course
