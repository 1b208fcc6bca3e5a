// Day 3 benchmarks.
//  - math/<impl>_<fn>: each PTX wrapper next to the math library's function, twice: terms = 1 on
//    2^26 floats (8 bytes per evaluation: DRAM decides, both should reach the copy ceiling) and
//    terms = 64 on 2^24 floats (64 evaluations per 8 bytes: the special function unit decides).
//    Counters: GB/s and %copy, Geval/s (function evaluations per second) and %sfu (of 16
//    evaluations per clock per SM, the MUFU rate of sm_80/sm_90).
//  - segment_*: the warp shuffles over 2^26 elements, in GB/s and % of the copy ceiling.
//  - gelu_*: GeLU with tanh.approx (float32, float16, bfloat16) and with tanhf, on 2^26 elements.
//    The key figure: gelu_fast float32 at 2^26.
// Every output is checked before timing and again after (course::bench::Recheck): `poison`
// poisons the output, `check` downloads and compares it, the same lambda both times. Inputs
// come from course::seed_for(salt), so from the run's seed (COURSE_SEED).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/check.h"
#include "course/device.h"
#include "course/random.h"
#include "course/reference/activation.h"
#include "course/reference/fastmath.h"
#include "lab.h"

namespace {

using course::DeviceBuffer;
using d03::MathFn;
namespace ref = course::reference;

constexpr std::int64_t kLarge = std::int64_t{1} << 26;
constexpr std::int64_t kComputeBoundN = std::int64_t{1} << 24;
constexpr int kComputeBoundTerms = 64;

// The check before timing uses the loosest documented bound of the approximate instructions
// (tanh.approx.f32, relative error 2^-10.987), doubled so that the rms term of the element
// tolerance covers GeLU's absolute error near y = 0 (see kTanhApproxTolerance in test_d03.cu).
// It only has to tell a correct kernel from a wrong one; the tests grade accuracy.
const double kTanhBound = std::exp2(-10.987);
const course::Tolerance kApproxCheck{2 * kTanhBound, 2 * kTanhBound};

// Approximate hardware math is held to its own tolerance, not to the dtype's default.
course::CompareOptions within(course::Tolerance tolerance) {
  course::CompareOptions options;
  options.tolerance = tolerance;
  return options;
}

// Evaluations per second the special function units can deliver: 16 per clock per SM on
// sm_80/sm_90 (CUDA C++ Programming Guide, arithmetic instruction throughput), at the peak clock.
double sfu_peak_per_second() {
  int khz = 0;
  COURSE_CUDA_CHECK(
      cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, course::device_facts().device));
  return 16.0 * course::device_facts().sm_count * khz * 1e3;
}

// Inputs where each function is finite and well conditioned.
std::vector<float> math_inputs(MathFn f, std::size_t n) {
  switch (f) {
    case MathFn::kExp2:
      return course::random_uniform<float>(n, course::seed_for(51), -20.0, 20.0);
    case MathFn::kLog2:
      return course::random_uniform<float>(n, course::seed_for(52), 0.5, 1000.0);
    case MathFn::kRsqrt:
      return course::random_uniform<float>(n, course::seed_for(53), 0.5, 1000.0);
    case MathFn::kTanh:
      return course::random_uniform<float>(n, course::seed_for(54), -4.0, 4.0);
  }
  return {};
}

double exact(MathFn f, double v) {
  switch (f) {
    case MathFn::kExp2:
      return ref::exp2(v);
    case MathFn::kLog2:
      return ref::log2(v);
    case MathFn::kRsqrt:
      return ref::rsqrt(v);
    case MathFn::kTanh:
      return ref::tanh(v);
  }
  return 0.0;
}

// range(0): n, range(1): terms. ptx: the wrappers of exercise 1; otherwise the math library.
void BM_math(benchmark::State& state, MathFn f, bool ptx) {
  const std::int64_t n = state.range(0);
  const int terms = static_cast<int>(state.range(1));
  const auto x = math_inputs(f, static_cast<std::size_t>(n));
  DeviceBuffer<float> dx(x), dy(static_cast<std::size_t>(n));
  const auto run = [&] {
    if (ptx) {
      d03::ptx_math(f, dx.data(), dy.data(), n, terms);
    } else {
      d03::library_math(f, dx.data(), dy.data(), n, terms);
    }
  };
  const auto poison = [&] { dy.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        dy.download(),
        [&](std::size_t i) {
          double sum = 0.0;
          for (int j = 0; j < terms; ++j)  // the same float32 arguments the GPU evaluated
            sum += exact(f, static_cast<double>(x[i] + static_cast<float>(j) * d03::kTermStep));
          return sum;
        },
        within(kApproxCheck));
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {8.0 * static_cast<double>(n), 0.0}, {poison, check});
  if (state.error_occurred()) return;
  const double seconds = state.counters["median_us"] * 1e-6;
  if (seconds > 0) {
    const double evals = static_cast<double>(n) * terms / seconds;
    state.counters["Geval/s"] = evals / 1e9;
    state.counters["%sfu"] = 100.0 * evals / sfu_peak_per_second();
  }
}

void math_sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "terms"})->Args({kLarge, 1})->Args({kComputeBoundN, kComputeBoundTerms});
}
BENCHMARK_CAPTURE(BM_math, ptx_exp2, MathFn::kExp2, true)
    ->Apply(course::bench::configure)
    ->Apply(math_sizes);
BENCHMARK_CAPTURE(BM_math, library_exp2, MathFn::kExp2, false)
    ->Apply(course::bench::configure)
    ->Apply(math_sizes);
BENCHMARK_CAPTURE(BM_math, ptx_log2, MathFn::kLog2, true)
    ->Apply(course::bench::configure)
    ->Apply(math_sizes);
BENCHMARK_CAPTURE(BM_math, library_log2, MathFn::kLog2, false)
    ->Apply(course::bench::configure)
    ->Apply(math_sizes);
BENCHMARK_CAPTURE(BM_math, ptx_rsqrt, MathFn::kRsqrt, true)
    ->Apply(course::bench::configure)
    ->Apply(math_sizes);
BENCHMARK_CAPTURE(BM_math, library_rsqrt, MathFn::kRsqrt, false)
    ->Apply(course::bench::configure)
    ->Apply(math_sizes);
BENCHMARK_CAPTURE(BM_math, ptx_tanh, MathFn::kTanh, true)
    ->Apply(course::bench::configure)
    ->Apply(math_sizes);
BENCHMARK_CAPTURE(BM_math, library_tanh, MathFn::kTanh, false)
    ->Apply(course::bench::configure)
    ->Apply(math_sizes);

// ------------------------------------------------------------------ warp shuffles

// The sum (or max) of x's segment s, from the host copy: the sampled reference.
template <class T, class Combine>
double segment_ref(const std::vector<T>& x, std::size_t s, double init, Combine combine) {
  double acc = init;
  const std::size_t end = std::min(x.size(), (s + 1) * d03::kSegment);
  for (std::size_t i = s * d03::kSegment; i < end; ++i) acc = combine(acc, course::to_double(x[i]));
  return acc;
}
const auto kPlus = [](double a, double b) { return a + b; };
const auto kMax = [](double a, double b) { return b > a ? b : a; };

void BM_segment_sum(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(61));
  const std::size_t segments = ref::segment_count(x.size(), d03::kSegment);
  DeviceBuffer<float> dx(x), out(segments);
  const auto run = [&] { d03::segment_sum(dx.data(), out.data(), n); };
  const auto poison = [&] { out.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        out.download(), [&](std::size_t s) { return segment_ref(x, s, 0.0, kPlus); });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(
      state, run,
      {4.0 * static_cast<double>(n + static_cast<std::int64_t>(segments)), static_cast<double>(n)},
      {poison, check});
}
BENCHMARK(BM_segment_sum)->Apply(course::bench::configure)->Arg(kLarge);

void BM_segment_max(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(62));
  const std::size_t segments = ref::segment_count(x.size(), d03::kSegment);
  DeviceBuffer<float> dx(x), out(segments);
  const auto run = [&] { d03::segment_max(dx.data(), out.data(), n); };
  const auto poison = [&] { out.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        out.download(), [&](std::size_t s) { return segment_ref(x, s, -INFINITY, kMax); });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run,
                         {4.0 * static_cast<double>(n + static_cast<std::int64_t>(segments)), 0.0},
                         {poison, check});
}
BENCHMARK(BM_segment_max)->Apply(course::bench::configure)->Arg(kLarge);

void BM_segment_broadcast(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const int src_lane = 5;
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(63));
  DeviceBuffer<float> dx(x), dy(static_cast<std::size_t>(n));
  const auto run = [&] { d03::segment_broadcast(dx.data(), dy.data(), n, src_lane); };
  const auto poison = [&] { dy.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(dy.download(), [&](std::size_t i) {
      const std::size_t src = i / d03::kSegment * d03::kSegment + src_lane;
      return src < x.size() ? static_cast<double>(x[src]) : 0.0;
    });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {8.0 * static_cast<double>(n), 0.0}, {poison, check});
}
BENCHMARK(BM_segment_broadcast)->Apply(course::bench::configure)->Arg(kLarge);

void BM_segment_scan(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(64));
  DeviceBuffer<float> dx(x), dy(static_cast<std::size_t>(n));
  const auto run = [&] { d03::segment_scan(dx.data(), dy.data(), n); };
  const auto poison = [&] { dy.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(dy.download(), [&](std::size_t i) {
      double sum = 0.0;
      for (std::size_t k = i / d03::kSegment * d03::kSegment; k <= i; ++k) sum += x[k];
      return sum;
    });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {8.0 * static_cast<double>(n), static_cast<double>(n)},
                         {poison, check});
}
BENCHMARK(BM_segment_scan)->Apply(course::bench::configure)->Arg(kLarge);

// Same bytes as the float32 sum: 2^25 doubles.
void BM_segment_sum_f64(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x = course::random_uniform<double>(static_cast<std::size_t>(n), course::seed_for(65));
  const std::size_t segments = ref::segment_count(x.size(), d03::kSegment);
  DeviceBuffer<double> dx(x), out(segments);
  const auto run = [&] { d03::segment_sum(dx.data(), out.data(), n); };
  const auto poison = [&] { out.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        out.download(), [&](std::size_t s) { return segment_ref(x, s, 0.0, kPlus); });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(
      state, run,
      {8.0 * static_cast<double>(n + static_cast<std::int64_t>(segments)), static_cast<double>(n)},
      {poison, check});
}
BENCHMARK(BM_segment_sum_f64)->Apply(course::bench::configure)->Arg(kLarge / 2);

// Same bytes again: 2^25 pairs of halves.
void BM_segment_max_pairs(benchmark::State& state) {
  const std::int64_t pairs = state.range(0);
  const auto x = course::random_uniform<course::half>(2 * static_cast<std::size_t>(pairs),
                                                      course::seed_for(66));
  const std::size_t segments = ref::segment_count(static_cast<std::size_t>(pairs), d03::kSegment);
  DeviceBuffer<course::half> dx(x), out(2 * segments);
  const auto run = [&] { d03::segment_max_pairs(dx.data(), out.data(), pairs); };
  const auto poison = [&] { out.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(out.download(), [&](std::size_t k) {
      // out[2s + c] = max over the pairs p of segment s of x[2p + c]
      const std::size_t s = k / 2, c = k % 2;
      double m = -INFINITY;
      const std::size_t end =
          std::min<std::size_t>(static_cast<std::size_t>(pairs), (s + 1) * d03::kSegment);
      for (std::size_t p = s * d03::kSegment; p < end; ++p)
        m = kMax(m, course::to_double(x[2 * p + c]));
      return m;
    });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(
      state, run, {4.0 * static_cast<double>(pairs + static_cast<std::int64_t>(segments)), 0.0},
      {poison, check});
}
BENCHMARK(BM_segment_max_pairs)->Apply(course::bench::configure)->Arg(kLarge / 2);

// ------------------------------------------------------------------ GeLU

// GeLU costs about 8 FLOPs per element besides the tanh (counted as one).
constexpr double kGeluFlops = 9.0;

template <class T>
void BM_gelu_fast(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x =
      course::random_uniform<T>(static_cast<std::size_t>(n), course::seed_for(71), -6.0, 6.0);
  DeviceBuffer<T> dx(x), dy(static_cast<std::size_t>(n));
  const auto run = [&] { d03::gelu_fast(dx.data(), dy.data(), n); };
  const auto poison = [&] { dy.poison(); };
  const course::Tolerance tol{course::DType<T>::tolerance.norm + kApproxCheck.norm,
                              course::DType<T>::tolerance.elem + kApproxCheck.elem};
  const auto check = [&] {
    return course::bench::compare_sampled(
        dy.download(), [&](std::size_t i) { return ref::gelu_tanh(course::to_double(x[i])); },
        within(tol));
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(
      state, run, {2.0 * sizeof(T) * static_cast<double>(n), kGeluFlops * static_cast<double>(n)},
      {poison, check});
  if (std::is_same_v<T, float> && n == kLarge) course::bench::mark_key(state);
}
BENCHMARK_TEMPLATE(BM_gelu_fast, float)->Apply(course::bench::configure)->Arg(kLarge);
BENCHMARK_TEMPLATE(BM_gelu_fast, course::half)->Apply(course::bench::configure)->Arg(kLarge);
BENCHMARK_TEMPLATE(BM_gelu_fast, course::bfloat16)->Apply(course::bench::configure)->Arg(kLarge);

void BM_gelu_tanhf(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x =
      course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(71), -6.0, 6.0);
  DeviceBuffer<float> dx(x), dy(static_cast<std::size_t>(n));
  const auto run = [&] { d03::gelu_tanhf(dx.data(), dy.data(), n); };
  const auto poison = [&] { dy.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(dy.download(),
                                          [&](std::size_t i) { return ref::gelu_tanh(x[i]); });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run,
                         {8.0 * static_cast<double>(n), kGeluFlops * static_cast<double>(n)},
                         {poison, check});
}
BENCHMARK(BM_gelu_tanhf)->Apply(course::bench::configure)->Arg(kLarge);

}  // namespace
