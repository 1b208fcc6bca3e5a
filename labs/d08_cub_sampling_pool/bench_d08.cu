// Day 8 benchmarks. Part 1: what one allocation and its free cost the HOST, for a size the
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
// nothing left allocated, nothing new reserved, the same block still handed out). The target
// (lesson 8 §7): a median of 1 us or less per pair.
// Part 2 (lesson 8 §11, §14), GPU work timed by course::bench::measure with a re-check:
//   BM_scan_1_reduce_then_scan, BM_scan_2_decoupled_lookback, BM_scan_cub (CUB's InclusiveSum)
//                             int32 inclusive scans, n = 2^20 and 2^28
//   BM_sample_0_sort_<filter>, BM_sample_1_pivot_<filter>   (filter: min_p, top_k, top_p)
//                             one token per row of a 64 x 131072 batch, the sorting baseline
//                             (cub::DeviceSegmentedRadixSort) next to the pivot search
// The day's headline (mark_key) is BM_scan_2_decoupled_lookback at n = 2^28: a GPU figure in
// GB/s with CUB's next to it (target: 90% of CUB's throughput).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/check.h"
#include "course/large.h"
#include "course/random.h"
#include "course/reference/sampling.h"
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

// ================================================================ Part 2: scans and sampling
// Scans of int32, 2^20 and 2^28 elements: bytes = 2 * 4n (x read once, y written once), the
// least any scan moves; reduce-then-scan moves 3 * 4n, so it shows up slower, not busier. CUB's
// scratch and ours come from the same kind of buffer, allocated once before timing.
using ScanRun = std::function<void(const std::int32_t*, std::int32_t*, std::int64_t)>;

void bench_scan(benchmark::State& state, const ScanRun& scan, bool key) {
  const std::int64_t n = state.range(0);
  const auto x = course::random_uniform<std::int32_t>(static_cast<std::size_t>(n),
                                                      course::seed_for(1), -1000, 1000);
  std::vector<std::int64_t> want(x.size());  // the reference, wrapped like int32 when read
  std::int64_t acc = 0;
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = acc += x[i];
  course::DeviceBuffer<std::int32_t> dx(x), dy(x.size());
  const auto run = [&] { scan(dx.data(), dy.data(), n); };
  const auto poison = [&] { course::poison_on_device(dy.data(), n); };
  const auto check = [&] {
    return course::bench::compare_sampled(dy.download(), [&](std::size_t i) {
      return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(want[i])));
    });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  if (key) course::bench::mark_key(state);
  course::bench::measure(state, run, {2.0 * 4.0 * static_cast<double>(n), 0.0}, {poison, check});
}

// Our scans' scratch: scan_temp_bytes(n), the size query of lesson §10.3.
ScanRun with_scratch(void (*scan)(const std::int32_t*, std::int32_t*, std::int64_t, void*,
                                  std::size_t)) {
  auto temp = std::make_shared<course::DeviceBuffer<char>>();
  return [scan, temp](const std::int32_t* x, std::int32_t* y, std::int64_t n) {
    if (temp->bytes() < d08::scan_temp_bytes(n))
      *temp = course::DeviceBuffer<char>(d08::scan_temp_bytes(n));
    scan(x, y, n, temp->data(), temp->bytes());
  };
}

constexpr std::int64_t kKeyScan = std::int64_t{1} << 28;

void BM_scan_1_reduce_then_scan(benchmark::State& state) {
  bench_scan(state, with_scratch(d08::scan_1_reduce_then_scan), false);
}
// The day's headline (mark_key): the one-pass scan at 2^28, next to CUB's in the same binary.
void BM_scan_2_decoupled_lookback(benchmark::State& state) {
  bench_scan(state, with_scratch(d08::scan_2_decoupled_lookback), state.range(0) == kKeyScan);
}
// CUB's two calls: the size query, then the scan with that much scratch.
void BM_scan_cub(benchmark::State& state) {
  auto temp = std::make_shared<course::DeviceBuffer<char>>();
  bench_scan(
      state,
      [temp](const std::int32_t* x, std::int32_t* y, std::int64_t n) {
        std::size_t bytes = 0;
        d08::scan_cub(nullptr, bytes, x, y, n);
        if (temp->bytes() < bytes) *temp = course::DeviceBuffer<char>(bytes);
        d08::scan_cub(temp->data(), bytes, x, y, n);
      },
      false);
}

void scan_sizes(benchmark::internal::Benchmark* b) {
  b->ArgName("n")->Arg(1 << 20)->Arg(kKeyScan);
  course::bench::configure(b);
}
BENCHMARK(BM_scan_1_reduce_then_scan)->Apply(scan_sizes);
BENCHMARK(BM_scan_2_decoupled_lookback)->Apply(scan_sizes);
BENCHMARK(BM_scan_cub)->Apply(scan_sizes);

// ---------------------------------------------------------------- sampling
// batch x vocab probabilities (the softmax of normal logits, stddev 2), one token per row.
// bytes = 4 * batch * vocab: every probability read once, the least any method reads (the pivot
// search reads each row several times, from L2 after the first; the sort writes and reads it
// several times). Checked before and after timing: every token inside the lenient allowed set
// of the float64 reference (course/reference/sampling.h), and the reference's token where the
// decision is certain.
using SampleFn = void (*)(const float*, std::int64_t, std::int64_t, const d08::SamplingParams&,
                          std::uint64_t, std::uint64_t, std::int32_t*);
constexpr double kSumTolerance = 3e-5;  // as test_d08.cu: float32 running sums

d08::SamplingParams params_of(d08::Filter filter) {
  d08::SamplingParams p;
  p.filter = filter;
  p.top_k = 50;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  return p;
}

void bench_sample(benchmark::State& state, SampleFn sample, d08::Filter filter) {
  const std::int64_t batch = state.range(0), vocab = state.range(1);
  const auto logits = course::random_normal<float>(static_cast<std::size_t>(batch * vocab),
                                                   course::seed_for(2), 0.0, 2.0);
  std::vector<float> probs(logits.size());
  for (std::int64_t r = 0; r < batch; ++r) {
    const float* l = logits.data() + r * vocab;
    const double m = *std::max_element(l, l + vocab);
    double sum = 0.0;
    for (std::int64_t i = 0; i < vocab; ++i) sum += std::exp(l[i] - m);
    for (std::int64_t i = 0; i < vocab; ++i)
      probs[static_cast<std::size_t>(r * vocab + i)] = static_cast<float>(std::exp(l[i] - m) / sum);
  }
  const d08::SamplingParams params = params_of(filter);
  const std::uint64_t seed = course::seed_for(3);
  std::vector<course::reference::Threshold> thresholds;
  for (std::int64_t r = 0; r < batch; ++r) {
    const float* row = probs.data() + r * vocab;
    const auto v = static_cast<std::size_t>(vocab);
    thresholds.push_back(
        filter == d08::Filter::kMinP ? course::reference::min_p_threshold(row, v, params.min_p)
        : filter == d08::Filter::kTopK
            ? course::reference::top_k_threshold(row, v, params.top_k)
            : course::reference::top_p_threshold(row, v, params.top_p, kSumTolerance));
  }
  course::DeviceBuffer<float> dprobs(probs);
  course::DeviceBuffer<std::int32_t> tokens(static_cast<std::size_t>(batch));
  const auto run = [&] { sample(dprobs.data(), batch, vocab, params, seed, 0, tokens.data()); };
  const auto poison = [&] { tokens.poison(); };
  // Each token as 1 (right) or 0 (wrong) against a reference of all ones: exact.
  const auto check = [&] {
    const auto got = tokens.download();
    std::vector<std::int32_t> right(got.size());
    for (std::int64_t r = 0; r < batch; ++r) {
      const float* row = probs.data() + r * vocab;
      const std::int32_t t = got[static_cast<std::size_t>(r)];
      const auto& th = thresholds[static_cast<std::size_t>(r)];
      bool ok = t >= 0 && t < vocab && row[t] >= th.lenient;
      if (ok && th.certain()) {
        std::int64_t exact = -1;
        const auto c = course::reference::draw_candidates(
            row, static_cast<std::size_t>(vocab), th.exact,
            d08::sampling_uniform(seed, static_cast<std::uint64_t>(r), 0), kSumTolerance, &exact);
        ok = std::find(c.begin(), c.end(), t) != c.end();
      }
      right[static_cast<std::size_t>(r)] = ok ? 1 : 0;
    }
    course::CompareOptions options;
    options.what = "token right (1) or outside the set / not the reference's (0)";
    return course::compare(right, std::vector<double>(right.size(), 1.0), options);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {4.0 * static_cast<double>(batch * vocab), 0.0},
                         {poison, check});
}

void BM_sample_0_sort_min_p(benchmark::State& s) {
  bench_sample(s, d08::sample_0_sort, d08::Filter::kMinP);
}
void BM_sample_1_pivot_min_p(benchmark::State& s) {
  bench_sample(s, d08::sample_1_pivot, d08::Filter::kMinP);
}
void BM_sample_0_sort_top_k(benchmark::State& s) {
  bench_sample(s, d08::sample_0_sort, d08::Filter::kTopK);
}
void BM_sample_1_pivot_top_k(benchmark::State& s) {
  bench_sample(s, d08::sample_1_pivot, d08::Filter::kTopK);
}
void BM_sample_0_sort_top_p(benchmark::State& s) {
  bench_sample(s, d08::sample_0_sort, d08::Filter::kTopP);
}
void BM_sample_1_pivot_top_p(benchmark::State& s) {
  bench_sample(s, d08::sample_1_pivot, d08::Filter::kTopP);
}

void sample_sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "vocab"})->Args({64, 131072});
  course::bench::configure(b);
}
BENCHMARK(BM_sample_0_sort_min_p)->Apply(sample_sizes);
BENCHMARK(BM_sample_1_pivot_min_p)->Apply(sample_sizes);
BENCHMARK(BM_sample_0_sort_top_k)->Apply(sample_sizes);
BENCHMARK(BM_sample_1_pivot_top_k)->Apply(sample_sizes);
BENCHMARK(BM_sample_0_sort_top_p)->Apply(sample_sizes);
BENCHMARK(BM_sample_1_pivot_top_p)->Apply(sample_sizes);

}  // namespace
