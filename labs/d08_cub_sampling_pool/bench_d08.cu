// Day 8 benchmarks, part 1: what one allocation and its free cost the HOST, for a size the
// allocator has already seen (lesson 8 §7):
//   BM_pool_alloc_free        CachingPool::allocate + free on a stream (CudaDeviceMemory backend)
//   BM_cudaMalloc_free        cudaMalloc + cudaFree
//   BM_cudaMallocAsync_free   cudaMallocAsync + cudaFreeAsync on a stream, from the device's
//                             default memory pool with its release threshold raised to "never",
//                             so that it keeps freed memory as the caching pool does
// Timing: these are host calls, not GPU work, so course::bench::measure (CUDA events around
// work queued on a stream, L2 flushes) does not apply: the figure that matters is how long the
// calling thread is held. Each iteration times kPairs allocate + free pairs back to back with
// std::chrono::steady_clock and reports the time of one pair as manual time; median_us is the
// median of those per-iteration times and spread_% is (p90 - p10) / median, as in bench.h.
// Work queued by cudaFreeAsync is drained after each iteration, outside the timed region.
// Verified before timed: the pool must hand the same block out again (a pool that called
// cudaMalloc every time would be timed as cudaMalloc), and re-checked after (recheck = 1:
// nothing left allocated, nothing new reserved, the same block still handed out); the headline
// (mark_key) is the pool at 4 KiB. The target (lesson 8 §7): a median of 1 us or less per pair.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <chrono>
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

// Runs the benchmark loop: each iteration times kPairs calls of `pair`, then `drain` (untimed).
void time_pairs(benchmark::State& state, const std::function<void()>& pair,
                const std::function<void()>& drain) {
  std::vector<double> samples;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPairs; ++i) pair();
    const auto stop = std::chrono::steady_clock::now();
    drain();
    const double seconds = std::chrono::duration<double>(stop - start).count() / kPairs;
    state.SetIterationTime(seconds);
    samples.push_back(seconds);
  }
  if (samples.empty()) return;
  const double median = course::bench::percentile(samples, 0.5);
  state.counters["median_us"] = median * 1e6;
  state.counters["spread_%"] =
      median > 0.0
          ? (course::bench::percentile(samples, 0.9) - course::bench::percentile(samples, 0.1)) /
                median * 100.0
          : 0.0;
}

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
  time_pairs(
      state, [&] { pool.free(pool.allocate(bytes, stream)); }, [] {});
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
  time_pairs(
      state,
      [&] {
        void* p = nullptr;
        COURSE_CUDA_CHECK(cudaMalloc(&p, bytes));
        COURSE_CUDA_CHECK(cudaFree(p));
      },
      [] {});
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
  time_pairs(
      state,
      [&] {
        void* p = nullptr;
        COURSE_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream));
        COURSE_CUDA_CHECK(cudaFreeAsync(p, stream));
      },
      [&] { COURSE_CUDA_CHECK(cudaStreamSynchronize(stream)); });
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
