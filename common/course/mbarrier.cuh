// mbarriers and the Tensor Memory Accelerator (Hopper): the instructions as small functions, the
// bounded wait and its timeout record, and the host's side of both (Day 7 introduces them, given
// to the student; Days 10 and 12 use this copy).
//
// An mbarrier's phase completes when its pending arrivals reach 0 AND its transaction count
// (bytes announced with expect_tx, minus bytes the copies have delivered) reaches 0. Waiting on a
// phase that never completes would hang the kernel, so a bounded wait gives up after a timeout of
// %globaltimer, records what it expected in the day's __device__ MbarrierTimeout and lets the
// block return; the day's check_mbarrier_timeouts() reads the record (take_mbarrier_timeouts)
// and turns it into an error with a message.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums only: the driver is reached through the runtime
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/smem.cuh"

namespace course {

// What the bounded waits record; each day keeps one in a __device__ variable of its own.
struct MbarrierTimeout {
  int count;           // waits that gave up since the last check
  int block;           // the first one's block (blockIdx.x, or its linear index: TimeoutBlock)
  long long expected;  // ... and the transaction bytes its barrier expected (0: an empty one)
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(arrivals)
               : "memory");
}
// The barrier inits must be visible to the async proxy (the copy engine, the TMA) before a copy
// completes on them.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival, and `bytes` more transaction bytes to wait for in the current phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)),
               "r"(bytes)
               : "memory");
}
// One arrival (a consumer releasing a stage).
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(bar)) : "memory");
}
// True once the phase with this parity has completed (try_wait may itself wait a little).
__device__ __forceinline__ bool mbarrier_try_wait_parity(std::uint64_t* bar, std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// Where a timeout record says a wait gave up: blockIdx.x (a 1-D grid), or the linear index of
// a 3-D grid.
enum class TimeoutBlock { kX, kLinear };

// Waits for the phase `parity` of *bar for at most timeout_ns; false when it gave up (then the
// first such failure is recorded in `record`, with the bytes the stage expected). kTryFirst:
// one try_wait before reading the clock (a wait that is already over costs no timer read).
// Each day wraps it in a __device__ function of its own that names its record and timeout.
template <bool kTryFirst, TimeoutBlock kBlock>
__device__ __forceinline__ bool mbarrier_wait_bounded(std::uint64_t* bar, std::uint32_t parity,
                                                      long long expected_bytes,
                                                      MbarrierTimeout& record,
                                                      long long timeout_ns) {
  if constexpr (kTryFirst) {
    if (mbarrier_try_wait_parity(bar, parity)) return true;
  }
  const std::uint64_t start = global_timer_ns();
  while (!mbarrier_try_wait_parity(bar, parity)) {
    if (global_timer_ns() - start > static_cast<std::uint64_t>(timeout_ns)) {
      if (atomicAdd(&record.count, 1) == 0) {
        if constexpr (kBlock == TimeoutBlock::kX)
          record.block = static_cast<int>(blockIdx.x);
        else
          record.block =
              static_cast<int>(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
        record.expected = expected_bytes;
      }
      return false;
    }
  }
  return true;
}

// Named barriers 1 .. 15 (0 is __syncthreads'): bar.sync waits until `threads` threads have
// arrived (itself included), bar.arrive counts this warp and does not wait.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Orders this thread's earlier shared-memory writes (the generic proxy) before later accesses of
// the async proxy (TMA, wgmma) to them: each writing thread fences, then a barrier, then the
// async operation.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The box of a 2-D tensor map whose corner is (inner, outer) = (column, row), from shared memory
// to global (a TMA store; what lies outside the tensor is not written). Asynchronous: it joins
// the thread's current bulk group, which bulk_commit_group() closes; bulk_wait_group_read<N>()
// waits until at most N of the thread's groups still read shared memory (their source may then
// be overwritten).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* smem_src,
                                             int inner, int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
          reinterpret_cast<std::uint64_t>(map)),
      "r"(smem_address(smem_src)), "r"(inner), "r"(outer)
      : "memory");
}
__device__ __forceinline__ void bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// The box of a 2-D tensor map whose corner is (inner, outer) = (column, row), to shared memory;
// its bytes count toward *bar's transaction count.
__device__ __forceinline__ void tma_load_2d(void* smem_dst, const CUtensorMap* map, int inner,
                                            int outer, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_address(smem_dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(inner), "r"(outer), "r"(smem_address(bar))
      : "memory");
}
#endif

// The driver's cuTensorMapEncodeTiled, found through the runtime (nothing links libcuda).
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    COURSE_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                       cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr)
      throw std::runtime_error("cuTensorMapEncodeTiled: not found in the CUDA driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// Waits for the GPU, then reads a day's timeout record (its __device__ MbarrierTimeout) and
// clears it, so that the next check starts from zero. count == 0: no wait gave up.
inline MbarrierTimeout take_mbarrier_timeouts(const MbarrierTimeout& record) {
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  MbarrierTimeout timeout{};
  COURSE_CUDA_CHECK(cudaMemcpyFromSymbol(&timeout, record, sizeof timeout));
  if (timeout.count == 0) return timeout;
  const MbarrierTimeout cleared{};
  COURSE_CUDA_CHECK(cudaMemcpyToSymbol(record, &cleared, sizeof cleared));
  return timeout;
}

// The launchers' check after a Hopper kernel: reads the record (take_mbarrier_timeouts) and
// throws "an mbarrier wait never completed (N waits gave up after 1 s, the first in block B,
// expecting E transaction bytes): <what_to_check>" if any wait gave up.
inline void throw_if_mbarrier_timed_out(const MbarrierTimeout& record,
                                        const std::string& what_to_check) {
  const MbarrierTimeout timeout = take_mbarrier_timeouts(record);
  if (timeout.count == 0) return;
  throw std::runtime_error(
      "an mbarrier wait never completed (" + std::to_string(timeout.count) +
      " waits gave up after 1 s, the first in block " + std::to_string(timeout.block) +
      ", expecting " + std::to_string(timeout.expected) + " transaction bytes): " + what_to_check);
}

}  // namespace course
