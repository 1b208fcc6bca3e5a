// Day 8 benchmarks, part 1: what one allocation and its free cost the HOST, for a size the
// allocator has already seen (lesson 8 §7):
//   BM_pool_alloc_free        CachingPool::allocate + free on a stream (CudaDeviceMemory backend)
//   BM_cudaMalloc_free        cudaMalloc + cudaFree
//   BM_cudaMallocAsync_free   cudaMallocAsync + cudaFreeAsync on a stream, from the device's
//                             default memory pool with its release threshold raised to "never",
//                             so that it keeps freed memory as the caching pool does
// Timing: these are host calls, not GPU work, so course::bench::measure (CUDA events around
// work queued on a stream, L2 flushes) does not apply: the figure that matters is how long the
// calling thread is held. course::bench::measure_host times kPairs allocate + free pairs back
// to back per iteration and reports the time of one pair (median_us, spread_% as in bench.h).
// Work queued by cudaFreeAsync is drained after each iteration, outside the timed region.
// Verified before timed: the pool must hand the same block out again (a pool that called
// cudaMalloc every time would be timed as cudaMalloc), and re-checked after (recheck = 1:
// nothing left allocated, nothing new reserved, the same block still handed out); the headline
// (mark_key) is the pool at 4 KiB. The target (lesson 8 §7): a median of 1 us or less per pair.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "course/bench.h"
#include "course/check.h"
#include "lab.h"

namespace {

constexpr int kPairs = 100;  // pairs per timed iteration: 100 x ~1 us is well above the clock's
                             // resolution, short enough for hundreds of samples

class BenchStream {
 public:
  BenchStream() { COURSE_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~BenchStream() { cudaStreamDestroy(s_); }
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// range(0): bytes.
void BM_pool_alloc_free(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  BenchStream stream;
  d08::CudaDeviceMemory memory;
  d08::CachingPool pool(memory);
  void* first = nullptr;
  try {
    first = pool.allocate(bytes, stream);
    pool.free(first);
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("the pool failed: ") + e.what()).c_str());
    return;
  }
  void* again = pool.allocate(bytes, stream);
  pool.free(again);
  if (again != first) {
    state.SkipWithError("the pool did not hand the freed block out again: not timed");
    return;
  }
  if (bytes == 4096) course::bench::mark_key(state);
  const d08::PoolStats before = pool.stats();
  course::bench::measure_host(
      state, [&] { pool.free(pool.allocate(bytes, stream)); }, kPairs);
  // Re-checked after timing (the `recheck` counter of bench.h): the timed calls must have done
  // the pool's work, handing out the cached block, not something cheaper or costlier. After
  // them nothing is allocated, nothing new was reserved from the device, and the next request
  // still gets the same block.
  const d08::PoolStats after = pool.stats();
  void* last = pool.allocate(bytes, stream);
  pool.free(last);
  if (after.allocated_bytes != 0 || after.reserved_bytes != before.reserved_bytes ||
      after.segments != before.segments || last != first) {
    state.SkipWithError(
        "after timing, the pool no longer hands out its cached block (or holds more memory):"
        " the timed calls did not do what was checked before timing");
    return;
  }
  state.counters["recheck"] = 1;
}

void BM_cudaMalloc_free(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  course::bench::measure_host(
      state,
      [&] {
        void* p = nullptr;
        COURSE_CUDA_CHECK(cudaMalloc(&p, bytes));
        COURSE_CUDA_CHECK(cudaFree(p));
      },
      kPairs);
}

void BM_cudaMallocAsync_free(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  BenchStream stream;
  int device = 0;
  COURSE_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t mem_pool = nullptr;
  COURSE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&mem_pool, device));
  // By default the pool returns freed memory to the device at every synchronisation; a caching
  // allocator keeps it, so for a like-for-like comparison this one keeps it too.
  std::uint64_t keep_all = std::numeric_limits<std::uint64_t>::max(), before = 0;
  COURSE_CUDA_CHECK(cudaMemPoolGetAttribute(mem_pool, cudaMemPoolAttrReleaseThreshold, &before));
  COURSE_CUDA_CHECK(cudaMemPoolSetAttribute(mem_pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  course::bench::measure_host(
      state,
      [&] {
        void* p = nullptr;
        COURSE_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream));
        COURSE_CUDA_CHECK(cudaFreeAsync(p, stream));
      },
      kPairs, [&] { COURSE_CUDA_CHECK(cudaStreamSynchronize(stream)); });
  COURSE_CUDA_CHECK(cudaMemPoolSetAttribute(mem_pool, cudaMemPoolAttrReleaseThreshold, &before));
}

void sizes(benchmark::internal::Benchmark* b) {
  b->ArgName("bytes")->Arg(4096)->Arg(std::int64_t{64} << 20);
  course::bench::configure(b);
}

BENCHMARK(BM_pool_alloc_free)->Apply(sizes);
BENCHMARK(BM_cudaMalloc_free)->Apply(sizes);
BENCHMARK(BM_cudaMallocAsync_free)->Apply(sizes);

}  // namespace
