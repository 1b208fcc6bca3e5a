// Day 6 benchmarks: one per variant. Every output is checked against the float64 reference
// (sampled, for the large ones) before anything is timed; GB/s counts the fewest bytes the
// operation must move, as bench.h says, and %copy compares that rate with the read + write rate
// of a large device-to-device copy on the same GPU.
//   row sums         bytes = read x + write one float per row
//   sums             bytes = n * 4 READ (nothing of size is written). Reading is the whole job,
//                    so the fair ceiling is the copy's read + write rate: a sum at 90 %copy
//                    reads as fast as a copy moves bytes in both directions together.
//   RMSNorm          bytes = read x + write y + read w (once)
//   fused add + RMS  bytes = read x, residual + write residual, y + read w
//   LayerNorm        bytes = read x + write y + read gamma, beta
//   online softmax   bytes = read x + write y: the minimum. The kernel reads x twice (once
//                    for the max and the sum, once to write), so 100 %copy is out of reach
//                    unless the second read hits in L2.
// The headline (mark_key): RMSNorm, bfloat16, 16384 x 4096.
// Every output is checked before timing and again after (course::bench::Recheck): `poison`
// poisons the outputs (and restores an input the work updates in place), `check` downloads and
// compares them, the same lambda both times. Inputs come from course::seed_for(salt), so from
// the run's seed (COURSE_SEED).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/random.h"
#include "course/reference/norm.h"
#include "course/reference/softmax.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::half;
namespace ref = course::reference;

constexpr float kEps = 1e-6f;

// How often the sums are rerun to count distinct results (lesson §3).
constexpr int kReproducibilityRuns = 20;

// A float32 sum's error is bounded by (depth) * u * sum|x| (see test_d06.cu); the inputs here
// are all positive (uniform in [0, 1)), so sum|x| = sum x and the bound is relative to the sum.
constexpr course::Tolerance kSumTolerance{256.0 / (1 << 24), 256.0 / (1 << 24)};

// ---------------------------------------------------------------- row sums
// range(0): rows, range(1): cols; blocks of 256 threads, one per row. bytes = read x + write
// the sums.
void BM_row_sums(benchmark::State& state) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const auto n = static_cast<std::size_t>(rows * cols);
  const auto x = course::random_uniform<float>(n, course::seed_for(11), 0.0, 1.0);
  DeviceBuffer<float> dx(x), sums(static_cast<std::size_t>(rows));
  const auto run = [&] { d06::row_sums(dx.data(), sums.data(), rows, cols, 256); };
  const auto poison = [&] { sums.poison(); };
  const auto xd = course::as_doubles(x);
  const auto want =
      ref::row_sums(xd, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
  const auto check = [&] {
    course::CompareOptions options;
    options.tolerance = kSumTolerance;  // positive inputs: the bound is relative to each sum
    options.what = "the row sums";
    return course::compare(sums.download(), want, options);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(
      state, run,
      {4.0 * static_cast<double>(n) + 4.0 * static_cast<double>(rows), static_cast<double>(n)},
      {poison, check});
}
// 16384 rows of 4096 floats: 256 MiB, far past the 50 MB L2.
BENCHMARK(BM_row_sums)
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "cols"})
    ->Args({16384, 4096});

// ---------------------------------------------------------------- sums
// range(0): n. variant 0: two-pass (deterministic), 1: atomic.
void bench_sum(benchmark::State& state, bool atomic) {
  const std::int64_t n = state.range(0);
  const auto x =
      course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(1), 0.0, 1.0);
  DeviceBuffer<float> dx(x), partials(d06::kSumMaxPartials), out(1);
  const auto run = [&] {
    if (atomic)
      d06::sum_atomic(dx.data(), n, out.data());
    else
      d06::sum_two_pass(dx.data(), n, partials.data(), out.data());
  };
  // The atomic sum adds into *out, so its launcher must zero it on every call: a poisoned *out
  // comes out right only if it does. The two-pass sum's second pass reads the partials: poisoned
  // too, so that a first pass skipped on later calls cannot leave the previous call's there.
  const auto poison = [&] {
    out.poison();
    partials.poison();
  };
  const double want = ref::sum(course::as_doubles(x));
  const auto check = [&] {
    course::CompareOptions options;
    options.tolerance = kSumTolerance;
    options.what = atomic ? "the atomic sum" : "the two-pass sum";
    return course::compare(out.download(), std::vector<double>{want}, options);
  };
  // Correctness first, then how many different results repeated runs give.
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  std::set<std::uint32_t> distinct;
  for (int i = 0; i < kReproducibilityRuns; ++i) {
    run();
    const float got = out.download()[0];
    std::uint32_t bits;
    std::memcpy(&bits, &got, 4);
    distinct.insert(bits);
  }
  course::bench::measure(state, run, {4.0 * static_cast<double>(n), static_cast<double>(n)},
                         {poison, check});
  state.counters["distinct_results"] = static_cast<double>(distinct.size());
}

void BM_sum_1_two_pass(benchmark::State& state) { bench_sum(state, false); }
void BM_sum_2_atomic(benchmark::State& state) { bench_sum(state, true); }
// 2^26 floats = 256 MiB (far past the 50 MB L2), and a smaller size for the launch overheads.
BENCHMARK(BM_sum_1_two_pass)
    ->Apply(course::bench::configure)
    ->ArgName("n")
    ->Arg(1 << 20)
    ->Arg(1 << 26);
BENCHMARK(BM_sum_2_atomic)
    ->Apply(course::bench::configure)
    ->ArgName("n")
    ->Arg(1 << 20)
    ->Arg(1 << 26);

// ---------------------------------------------------------------- row-wise normalisations
// The reference at element i of a [rows, hidden] output, one row's statistic computed on first
// use: the sampled check touches a few elements of many rows.
class RowStatistic {
 public:
  RowStatistic(std::size_t rows, std::function<double(std::size_t)> compute)
      : values_(rows, std::nan("")), done_(rows, false), compute_(std::move(compute)) {}
  double operator()(std::size_t row) {
    if (!done_[row]) {
      values_[row] = compute_(row);
      done_[row] = true;
    }
    return values_[row];
  }

 private:
  std::vector<double> values_;
  std::vector<bool> done_;
  std::function<double(std::size_t)> compute_;
};

bool is_key(std::int64_t rows, std::int64_t hidden) { return rows == 16384 && hidden == 4096; }

// range(0): rows, range(1): hidden.
template <class T>
void BM_rmsnorm(benchmark::State& state) {
  const std::int64_t rows = state.range(0), hidden = state.range(1);
  const auto n = static_cast<std::size_t>(rows * hidden);
  const auto x = course::random_uniform<T>(n, course::seed_for(2), -2.0, 2.0);
  const auto w =
      course::random_uniform<T>(static_cast<std::size_t>(hidden), course::seed_for(3), -2.0, 2.0);
  DeviceBuffer<T> dx(x), dw(w), dy(n);
  const auto run = [&] { d06::rmsnorm(dx.data(), dw.data(), dy.data(), rows, hidden, kEps); };
  const auto poison = [&] { dy.poison(); };
  const auto xd = course::as_doubles(x), wd = course::as_doubles(w);
  RowStatistic inv_rms(
      rows, [&](std::size_t r) { return ref::rms_inverse(xd.data() + r * hidden, hidden, kEps); });
  const auto check = [&] {
    return course::bench::compare_sampled(
        dy.download(), [&](std::size_t i) { return xd[i] * inv_rms(i / hidden) * wd[i % hidden]; });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  const double bytes =
      static_cast<double>(sizeof(T)) * (2.0 * static_cast<double>(n) + static_cast<double>(hidden));
  course::bench::measure(state, run, {bytes, 4.0 * static_cast<double>(n)}, {poison, check});
  if (std::is_same_v<T, bfloat16> && is_key(rows, hidden)) course::bench::mark_key(state);
}

void rmsnorm_shapes(benchmark::internal::Benchmark* b) {
  course::bench::configure(b);
  b->ArgNames({"rows", "hidden"});
  b->Args({16384, 4096});
  for (std::int64_t hidden : {128, 1024, 8192, 16384}) b->Args({16384, hidden});
  b->Args({16384, 4097});  // not a multiple of the vector width: one element at a time
}

BENCHMARK_TEMPLATE(BM_rmsnorm, bfloat16)->Name("BM_rmsnorm_bf16")->Apply(rmsnorm_shapes);
BENCHMARK_TEMPLATE(BM_rmsnorm, half)
    ->Name("BM_rmsnorm_f16")
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "hidden"})
    ->Args({16384, 4096});
BENCHMARK_TEMPLATE(BM_rmsnorm, float)
    ->Name("BM_rmsnorm_f32")
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "hidden"})
    ->Args({16384, 4096});

template <class T>
void BM_fused_add_rmsnorm(benchmark::State& state) {
  const std::int64_t rows = state.range(0), hidden = state.range(1);
  const auto n = static_cast<std::size_t>(rows * hidden);
  const auto x = course::random_uniform<T>(n, course::seed_for(4));
  const auto residual = course::random_uniform<T>(n, course::seed_for(5));
  const auto w =
      course::random_uniform<T>(static_cast<std::size_t>(hidden), course::seed_for(6), -2.0, 2.0);
  DeviceBuffer<T> dx(x), dres(residual), dres0(residual), dw(w), dy(n);
  const auto run = [&] {
    d06::fused_add_rmsnorm(dx.data(), dres.data(), dw.data(), dy.data(), rows, hidden, kEps);
  };
  // Timed runs would keep adding x into the residual. The residual is an input as well as an
  // output, so it cannot be poisoned: before every timed call the original residual is copied
  // back from a device copy (dres0) and y is poisoned, so that every call, audited or not, must
  // produce the same two outputs as the first call.
  const auto poison = [&] {
    COURSE_CUDA_CHECK(
        cudaMemcpy(dres.data(), dres0.data(), dres.bytes(), cudaMemcpyDeviceToDevice));
    dy.poison();
  };
  std::vector<double> sum(n);
  for (std::size_t i = 0; i < n; ++i)
    sum[i] = course::to_double(x[i]) + course::to_double(residual[i]);
  const auto wd = course::as_doubles(w);
  RowStatistic inv_rms(
      rows, [&](std::size_t r) { return ref::rms_inverse(sum.data() + r * hidden, hidden, kEps); });
  const auto check = [&] {
    course::CompareOptions options;
    options.what = "sampled residual (written in place)";
    auto both = course::bench::compare_sampled(
        dres.download(), [&](std::size_t i) { return sum[i]; }, options);
    if (both.ok)
      both = course::bench::compare_sampled(dy.download(), [&](std::size_t i) {
        return sum[i] * inv_rms(i / hidden) * wd[i % hidden];
      });
    return both;
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  const double bytes =
      static_cast<double>(sizeof(T)) * (4.0 * static_cast<double>(n) + static_cast<double>(hidden));
  course::bench::measure(state, run, {bytes, 5.0 * static_cast<double>(n)}, {poison, check});
}
BENCHMARK_TEMPLATE(BM_fused_add_rmsnorm, bfloat16)
    ->Name("BM_fused_add_rmsnorm_bf16")
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "hidden"})
    ->Args({16384, 4096})
    ->Args({16384, 8192});

template <class T>
void BM_layernorm(benchmark::State& state) {
  const std::int64_t rows = state.range(0), hidden = state.range(1);
  const auto n = static_cast<std::size_t>(rows * hidden);
  const auto x = course::random_uniform<T>(n, course::seed_for(7), -2.0, 2.0);
  const auto gamma =
      course::random_uniform<T>(static_cast<std::size_t>(hidden), course::seed_for(8), -2.0, 2.0);
  const auto beta =
      course::random_uniform<T>(static_cast<std::size_t>(hidden), course::seed_for(9));
  DeviceBuffer<T> dx(x), dg(gamma), db(beta), dy(n);
  const auto run = [&] {
    d06::layernorm(dx.data(), dg.data(), db.data(), dy.data(), nullptr, nullptr, rows, hidden,
                   1e-5f);
  };
  const auto poison = [&] { dy.poison(); };
  const auto xd = course::as_doubles(x), gd = course::as_doubles(gamma),
             bd = course::as_doubles(beta);
  // One row's (mean, rstd) from the reference on that row alone.
  std::vector<double> mean(rows, std::nan("")), rstd(rows, std::nan(""));
  const auto stats = [&](std::size_t r) {
    if (std::isnan(mean[r])) {
      const std::vector<double> row(xd.begin() + r * hidden, xd.begin() + (r + 1) * hidden);
      const auto one = ref::layernorm(row, gd, bd, 1, hidden, 1e-5f);
      mean[r] = one.mean[0];
      rstd[r] = one.rstd[0];
    }
  };
  const auto check = [&] {
    return course::bench::compare_sampled(dy.download(), [&](std::size_t i) {
      const std::size_t r = i / hidden, c = i % hidden;
      stats(r);
      return (xd[i] - mean[r]) * rstd[r] * gd[c] + bd[c];
    });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  const double bytes = static_cast<double>(sizeof(T)) *
                       (2.0 * static_cast<double>(n) + 2.0 * static_cast<double>(hidden));
  course::bench::measure(state, run, {bytes, 6.0 * static_cast<double>(n)}, {poison, check});
}
BENCHMARK_TEMPLATE(BM_layernorm, bfloat16)
    ->Name("BM_layernorm_bf16")
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "hidden"})
    ->Args({16384, 4096})
    ->Args({16384, 1024});

// range(0): rows, range(1): cols.
template <class T>
void BM_softmax_online(benchmark::State& state) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const auto n = static_cast<std::size_t>(rows * cols);
  const auto x = course::random_uniform<T>(n, course::seed_for(10), -8.0, 8.0);
  DeviceBuffer<T> dx(x), dy(n);
  const auto run = [&] { d06::softmax_online(dx.data(), dy.data(), rows, cols); };
  const auto poison = [&] { dy.poison(); };
  const auto xd = course::as_doubles(x);
  // One row's (max, sum of exp) on first use.
  std::vector<double> row_max(rows, std::nan("")), row_sum(rows, std::nan(""));
  const auto check = [&] {
    return course::bench::compare_sampled(dy.download(), [&](std::size_t i) {
      const std::size_t r = i / cols;
      if (std::isnan(row_max[r])) {
        double m = -INFINITY, s = 0.0;
        for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, xd[r * cols + c]);
        for (std::int64_t c = 0; c < cols; ++c) s += std::exp(xd[r * cols + c] - m);
        row_max[r] = m;
        row_sum[r] = s;
      }
      return std::exp(xd[i] - row_max[r]) / row_sum[r];
    });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run,
                         {2.0 * sizeof(T) * static_cast<double>(n), 4.0 * static_cast<double>(n)},
                         {poison, check});
}
BENCHMARK_TEMPLATE(BM_softmax_online, float)
    ->Name("BM_softmax_online_f32")
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "cols"})
    ->Args({4096, 32768})
    ->Args({512, 262144});
BENCHMARK_TEMPLATE(BM_softmax_online, bfloat16)
    ->Name("BM_softmax_online_bf16")
    ->Apply(course::bench::configure)
    ->ArgNames({"rows", "cols"})
    ->Args({4096, 32768})
    ->Args({512, 262144});

}  // namespace
