// Day 4 benchmarks: every transpose variant, for float32, float16 and bfloat16, on a square
// 8192 x 8192 matrix, a non-square one and one whose sides are multiples of nothing useful;
// next to a device-to-device cudaMemcpy of the same bytes, the ceiling a transpose can approach
// (a transpose reads and writes each element once, exactly like a copy).
// The headline (mark_key) is transpose_5_vectorized on 8192 x 8192 float32.
// Every output is checked before timing and again after (course::bench::Recheck): `poison`
// poisons the output, `check` downloads and compares it, the same lambda both times.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/check.h"
#include "course/random.h"
#include "course/reference/transpose.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::half;

template <class T>
using Launcher = void (*)(const T*, T*, std::int64_t, std::int64_t);

// The input of each shape, drawn once per process: 64 M random values take longer to draw than
// a benchmark takes to run. From the run's seed (COURSE_SEED), through course::seed_for.
template <class T>
const std::vector<T>& input(std::int64_t rows, std::int64_t cols) {
  static std::map<std::pair<std::int64_t, std::int64_t>, std::vector<T>> inputs;
  std::vector<T>& v = inputs[{rows, cols}];
  if (v.empty())
    v = course::random_uniform<T>(static_cast<std::size_t>(rows * cols), course::seed_for(4));
  return v;
}

// The fewest bytes a transpose (or a copy) moves: every element read once and written once.
template <class T>
course::bench::Traffic traffic(std::int64_t rows, std::int64_t cols) {
  return {2.0 * static_cast<double>(sizeof(T)) * static_cast<double>(rows * cols), 0.0};
}

// range(0) = rows, range(1) = cols. Checks a sample of the output against the input, times, and
// checks the output of a timed call again.
template <class T>
void run_transpose(benchmark::State& state, Launcher<T> launch, bool key) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const std::vector<T>& host_in = input<T>(rows, cols);
  DeviceBuffer<T> in(host_in), out(host_in.size());
  const auto run = [&] { launch(in.data(), out.data(), rows, cols); };
  const auto poison = [&] { out.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(out.download(), [&](std::size_t i) {
      return course::to_double(host_in[course::reference::transpose_source_index(
          static_cast<std::size_t>(rows), static_cast<std::size_t>(cols), i)]);
    });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, traffic<T>(rows, cols), {poison, check});
  if (key) course::bench::mark_key(state);
}

template <class T>
void BM_transpose_1_naive(benchmark::State& state) {
  run_transpose<T>(state, &d04::transpose_1_naive<T>, false);
}
template <class T>
void BM_transpose_2_smem(benchmark::State& state) {
  run_transpose<T>(state, &d04::transpose_2_smem<T>, false);
}
template <class T>
void BM_transpose_3_padded(benchmark::State& state) {
  run_transpose<T>(state, &d04::transpose_3_padded<T>, false);
}
template <class T>
void BM_transpose_4_swizzled(benchmark::State& state) {
  run_transpose<T>(state, &d04::transpose_4_swizzled<T>, false);
}
template <class T>
void BM_transpose_5_vectorized(benchmark::State& state) {
  const bool key = std::is_same_v<T, float> && state.range(0) == 8192 && state.range(1) == 8192;
  run_transpose<T>(state, &d04::transpose_5_vectorized<T>, key);
}

// The baseline: the same bytes, copied by the driver's device-to-device cudaMemcpy.
template <class T>
void BM_copy_cudaMemcpy(benchmark::State& state) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const std::vector<T>& host_in = input<T>(rows, cols);
  DeviceBuffer<T> in(host_in), out(host_in.size());
  const auto copy = [&] {
    COURSE_CUDA_CHECK(cudaMemcpyAsync(out.data(), in.data(), in.bytes(), cudaMemcpyDeviceToDevice));
  };
  const auto poison = [&] { out.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        out.download(), [&](std::size_t i) { return course::to_double(host_in[i]); });
  };
  if (!course::bench::first_run_verified(state, poison, copy, check)) return;
  course::bench::measure(state, copy, traffic<T>(rows, cols), {poison, check});
}

// Manual timing (course::bench::configure), and the shapes: square; non-square (a different
// aspect of the same bytes); odd sides, which no tile, vector or 128-byte line divides
// (variant 5 takes its element-by-element kernel there).
void setup(benchmark::internal::Benchmark* b) {
  course::bench::configure(b);
  b->ArgNames({"rows", "cols"});
  b->Args({8192, 8192});
  b->Args({4096, 16384});
  b->Args({4097, 8191});
}

BENCHMARK_TEMPLATE(BM_copy_cudaMemcpy, float)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_1_naive, float)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_2_smem, float)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_3_padded, float)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_4_swizzled, float)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_5_vectorized, float)->Apply(setup);

BENCHMARK_TEMPLATE(BM_copy_cudaMemcpy, half)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_1_naive, half)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_2_smem, half)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_3_padded, half)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_4_swizzled, half)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_5_vectorized, half)->Apply(setup);

// bfloat16 moves the same bytes as half, so its copy baseline is half's.
BENCHMARK_TEMPLATE(BM_transpose_1_naive, bfloat16)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_2_smem, bfloat16)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_3_padded, bfloat16)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_4_swizzled, bfloat16)->Apply(setup);
BENCHMARK_TEMPLATE(BM_transpose_5_vectorized, bfloat16)->Apply(setup);

}  // namespace
