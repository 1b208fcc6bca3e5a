// Day 5 benchmarks: row softmax (warp per row, block per row, block sizes, 16-bit types) in GB/s
// against the copy ceiling; stream compaction (ballot, cooperative groups, CUB) and key counting
// (one atomic per element vs one per distinct key in a warp).
//
// Softmax bytes: the row is read once and written once, 2 * rows * cols * sizeof(T), however
// many times a kernel actually reads it (a three-pass kernel pays for its extra reads in time).
// The day's headline: softmax_2_block_per_row, float32, 8192 x 8192.
//
// Every output is checked before timing and again after (course::bench::Recheck): `poison`
// poisons the output, `check` downloads and compares it, the same lambda both times. Inputs come
// from course::seed_for(salt), so from the run's seed (COURSE_SEED).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/random.h"
#include "course/reference/compaction.h"
#include "course/reference/softmax.h"
#include "lab.h"

namespace {

using course::DeviceBuffer;

// Host inputs are drawn once per size and reused by every benchmark of that size: drawing
// 2^27 random numbers takes longer than the benchmark itself.
template <class T>
const std::vector<T>& cached_uniform(std::size_t n, double lo, double hi) {
  static std::map<std::tuple<std::size_t, double, double>, std::vector<T>> cache;
  const auto key = std::make_tuple(n, lo, hi);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, course::random_uniform<T>(n, course::seed_for(42), lo, hi)).first;
  return it->second;
}

// ---------------------------------------------------------------------------------------------
// Softmax. range(0) = rows, range(1) = cols, range(2) = block threads (block per row; 0: the
// launcher chooses).
enum class Variant { kWarpPerRow, kBlockPerRow };

template <class T>
void bench_softmax(benchmark::State& state, Variant variant) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const int threads = variant == Variant::kBlockPerRow ? static_cast<int>(state.range(2)) : 0;
  const auto n = static_cast<std::size_t>(rows * cols);
  const std::vector<T>& x = cached_uniform<T>(n, -8.0, 8.0);
  DeviceBuffer<T> dx(x), dy(n);
  const auto run = [&] {
    if (variant == Variant::kWarpPerRow) {
      d05::softmax_1_warp_per_row(dx.data(), dy.data(), rows, cols);
    } else {
      d05::softmax_2_block_per_row(dx.data(), dy.data(), rows, cols, threads);
    }
  };
  const auto poison = [&] { dy.poison(); };
  // Check a sample of rows against the float64 reference, one row at a time.
  std::int64_t ref_row = -1;
  std::vector<double> ref;
  const auto ref_at = [&](std::size_t i) {
    const auto r = static_cast<std::int64_t>(i) / cols;
    if (r != ref_row) {
      const auto begin = x.begin() + r * cols;
      ref = course::reference::softmax_rows(course::as_doubles(std::vector<T>(begin, begin + cols)),
                                            1, static_cast<std::size_t>(cols));
      ref_row = r;
    }
    return ref[i - static_cast<std::size_t>(r * cols)];
  };
  constexpr std::size_t kSamples = 1024;  // each sampled row costs a float64 softmax of the row
  const auto check = [&] {
    return course::bench::compare_sampled(dy.download(), ref_at, {}, kSamples);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {2.0 * static_cast<double>(n) * sizeof(T), 0.0},
                         {poison, check});
}

void BM_softmax_1_warp_per_row(benchmark::State& state) {
  bench_softmax<float>(state, Variant::kWarpPerRow);
}
BENCHMARK(BM_softmax_1_warp_per_row)
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "cols"})
    ->Args({65536, 128})
    ->Args({32768, 1024})
    ->Args({16384, 2048})
    ->Args({8192, 8192})
    ->Args({4096, 32000});

void BM_softmax_2_block_per_row(benchmark::State& state) {
  bench_softmax<float>(state, Variant::kBlockPerRow);
  if (state.range(0) == 8192 && state.range(1) == 8192 && state.range(2) == 0)
    course::bench::mark_key(state);
}
BENCHMARK(BM_softmax_2_block_per_row)
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "cols", "threads"})
    ->Args({8192, 8192, 0})  // the headline
    ->Args({8192, 8192, 128})
    ->Args({8192, 8192, 256})
    ->Args({8192, 8192, 512})
    ->Args({8192, 8192, 1024})
    ->Args({32768, 1024, 0})
    ->Args({16384, 2048, 0})
    ->Args({4096, 32000, 0})
    ->Args({1024, 131072, 0});  // past the registers: the three-pass path

void BM_softmax_1_warp_per_row_float16(benchmark::State& state) {
  bench_softmax<course::half>(state, Variant::kWarpPerRow);
}
BENCHMARK(BM_softmax_1_warp_per_row_float16)
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "cols"})
    ->Args({32768, 1024});

void BM_softmax_2_block_per_row_float16(benchmark::State& state) {
  bench_softmax<course::half>(state, Variant::kBlockPerRow);
}
BENCHMARK(BM_softmax_2_block_per_row_float16)
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "cols", "threads"})
    ->Args({8192, 8192, 0})
    ->Args({4096, 32000, 0});

void BM_softmax_2_block_per_row_bfloat16(benchmark::State& state) {
  bench_softmax<course::bfloat16>(state, Variant::kBlockPerRow);
}
BENCHMARK(BM_softmax_2_block_per_row_bfloat16)
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "cols", "threads"})
    ->Args({8192, 8192, 0});

// ---------------------------------------------------------------------------------------------
// Stream compaction. range(0) = n, range(1) = percentage of elements kept (inputs uniform in
// [-1, 1), threshold 1 - 2p). Bytes: n floats read + the kept ones written.
using CompactFn = std::int64_t (*)(const float*, std::int64_t, float, float*);

void bench_compaction(benchmark::State& state, CompactFn compact) {
  const std::int64_t n = state.range(0);
  const float threshold = 1.0f - 2.0f * static_cast<float>(state.range(1)) / 100.0f;
  const std::vector<float>& x = cached_uniform<float>(static_cast<std::size_t>(n), -1.0, 1.0);
  DeviceBuffer<float> dx(x), dout(static_cast<std::size_t>(n));
  const auto expected = course::reference::compact_greater(course::as_doubles(x), threshold);
  const auto want = static_cast<std::int64_t>(expected.size());
  // The count a call returns is part of its output: every call, timed ones included, keeps it
  // here, so that the re-check judges the audited call's count with its elements.
  std::int64_t count = -1;
  const auto run = [&] { count = compact(dx.data(), n, threshold, dout.data()); };
  const auto poison = [&] {
    count = -1;
    dout.poison();
  };
  const auto check = [&] {
    if (count != want) {
      course::Comparison wrong;  // not ok
      wrong.message = "wrong count: " + std::to_string(count) + " instead of " +
                      std::to_string(want) + " elements greater than the threshold";
      return wrong;
    }
    return course::bench::compare_sampled(dout.download(0, static_cast<std::size_t>(count)),
                                          [&](std::size_t i) { return expected[i]; });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {4.0 * static_cast<double>(n + want), 0.0}, {poison, check});
  state.counters["kept"] = static_cast<double>(want);
}

void BM_compact_0_cub(benchmark::State& state) { bench_compaction(state, d05::compact_cub); }
void BM_compact_1_ballot(benchmark::State& state) {
  bench_compaction(state, d05::compact_1_ballot);
}
void BM_compact_2_cooperative_groups(benchmark::State& state) {
  bench_compaction(state, d05::compact_2_cooperative_groups);
}
void compaction_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "kept_%"});
  for (int percent : {0, 50, 100}) b->Args({1 << 26, percent});
  b->Args({1 << 20, 50});
}
BENCHMARK(BM_compact_0_cub)->Apply(course::bench::configure)->Apply(compaction_args);
BENCHMARK(BM_compact_1_ballot)->Apply(course::bench::configure)->Apply(compaction_args);
BENCHMARK(BM_compact_2_cooperative_groups)->Apply(course::bench::configure)->Apply(compaction_args);

// ---------------------------------------------------------------------------------------------
// Counting keys. range(0) = n, range(1) = bins, range(2) = 1: every key the same (worst
// contention), 0: uniform random keys. Bytes: the keys read once, the counts written once.
using CountFn = void (*)(const std::int32_t*, std::int64_t, std::uint32_t*, int);

void bench_count_keys(benchmark::State& state, CountFn count_keys) {
  const std::int64_t n = state.range(0);
  const int bins = static_cast<int>(state.range(1));
  const bool all_equal = state.range(2) == 1;
  const auto keys = all_equal ? std::vector<std::int32_t>(static_cast<std::size_t>(n), bins / 2)
                              : course::random_uniform<std::int32_t>(
                                    static_cast<std::size_t>(n), course::seed_for(7), 0, bins - 1);
  DeviceBuffer<std::int32_t> dkeys(keys);
  DeviceBuffer<std::uint32_t> counts(static_cast<std::size_t>(bins));
  const auto run = [&] { count_keys(dkeys.data(), n, counts.data(), bins); };
  // The atomics add into counts, which the launcher must zero first (lab.h: overwritten, not
  // added to). Poisoned counts come out right only if it does so on every call: a launcher
  // that zeroed them once, or added to the previous call's counts, fails the re-check.
  const auto poison = [&] { counts.poison(); };
  const auto want = course::reference::count_keys(keys, static_cast<std::size_t>(bins));
  const auto check = [&] {
    course::CompareOptions options;
    options.what = "counts";
    return course::compare(counts.download(), want, options);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {4.0 * static_cast<double>(n + bins), 0.0}, {poison, check});
}

void BM_count_keys_0_atomic(benchmark::State& state) {
  bench_count_keys(state, d05::count_keys_0_atomic);
}
void BM_count_keys_1_match(benchmark::State& state) {
  bench_count_keys(state, d05::count_keys_1_match);
}
void count_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "bins", "all_equal"});
  b->Args({1 << 24, 1024, 1});
  b->Args({1 << 24, 32, 0});
  b->Args({1 << 24, 1024, 0});
}
BENCHMARK(BM_count_keys_0_atomic)->Apply(course::bench::configure)->Apply(count_args);
BENCHMARK(BM_count_keys_1_match)->Apply(course::bench::configure)->Apply(count_args);

}  // namespace
