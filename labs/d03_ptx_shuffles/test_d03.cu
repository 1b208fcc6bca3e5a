// Day 3 tests. Each suite is one exercise of README.md.
//
// What a kernel of this day can get wrong, and the test that sees it:
//   - a PTX wrapper with another instruction, extra code around it, or the .ftz form (subnormal
//     inputs or results flushed): Ptx*.MeetsTheDocumentedErrorBound (subnormals included),
//     PtxExp2.IsWithinTwoUlpOfTheCorrectlyRoundedResult, Ptx*.Handles* (infinities, zeros,
//     NaN, overflow); the SASS checks ptx_*_is_mufu_*
//   - segment sizes that are not a multiple of 32 (1, 31, 33, 97, 1021, 2^20 + 3): the last
//     segment's lanes past the end LOAD (the padding after x holds NaN or 1e30, and memcheck,
//     graded on Day 3, sees a load past an exact buffer: *ExactInput.ReadsNothingPastTheEnd) or
//     hold the wrong identity (0 for max): Warp*.MatchesTheReferenceForEverySize,
//     WarpMaxTail.NegativeSegmentsIgnoreLanesPastTheEnd
//   - a maximum that drops NaN (fmaxf, max.f32, __hmax2): WarpMaxSpecialValues,
//     ShuffleHalf2Channels.PropagateNaNIndependently
//   - a broadcast source lane past the end that is not 0: WarpBroadcast (n33_lane7, n97_lane31)
//   - a scan that adds shfl.up's own value in lanes below delta, carries across segments, or
//     stores past n: WarpScanSegments.EverySegmentStartsFromZero
//   - a double shuffled as one 32-bit half, or summed through float: ShuffleDoublePrecision
//   - half2 channels mixed up: ShuffleHalf2 (channel b shifted by 2), ShuffleHalf2Channels
//   - an element or segment index in 32 bits: *LargeIndex (n = 2^31 + 2^24 + 17)
//   - the fast GeLU: the formula, the tail, unaligned pointers, rounding toward zero:
//     FastGelu.*, FastGeluExtremes, FastGeluRounding
//   - the launchers' limits (terms >= 1, n >= 0, 0 <= src_lane < 32, 4-byte aligned half pairs):
//     just outside throws, just inside works: PtxExp2Limits, WarpBroadcastLimits,
//     ShuffleHalf2Limits
//
// What the tests read back from the code under test (device results, exceptions) goes through
// an observation (course/observe.h), so that the grader can judge the student's values in the
// reference program.
//
// Exercise 1 is graded against the error bounds the PTX ISA documents for each approximate
// instruction (measured against float64, and printed, so you see how close to the bound the
// hardware really is). Exercises 2-4 compare with float64 references from
// course/reference/fastmath.h and course/reference/activation.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "course/buffer.h"
#include "course/large.h"
#include "course/random.h"
#include "course/reference/activation.h"
#include "course/reference/fastmath.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::DeviceBuffer;
using d03::MathFn;
namespace ref = course::reference;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---------------------------------------------------------------------------------------------
// The error bounds of the approximate instructions, as the PTX ISA documents them (section
// "Floating Point Instructions": ex2, lg2, rsqrt, tanh; lesson §3).
// ex2.approx.f32: at most 2 ulp from the correctly rounded result.
constexpr double kEx2MaxUlp = 2.0;
const double kLg2MaxAbsNearOne = std::exp2(-22.0);  // lg2.approx.f32: absolute error, x in (0.5, 2)
const double kLg2MaxRel = std::exp2(-22.0);         // ... relative error, other positive x
const double kRsqrtMaxRel = std::exp2(-22.9);       // rsqrt.approx.f32: relative error
// tanh.approx.f32: relative error at most 2^-10.987 (about 2^-11, i.e. 11 good bits of 24). A fast
// GeLU y = 0.5 x (1 + t) inherits it as an ABSOLUTE error of at most 0.5 |x| 2^-10.987: relative
// to y that is small where x > 0 (y >= 0.5 x) but unbounded where x << 0 and y -> 0, so the
// GeLU check bounds each element's error in terms of x (expect_gelu_within_tanh_bound), not y.
const double kTanhApproxTolerance = std::exp2(-10.987);

// Maxima and maxima of pairs only select a value, they never round: they must match exactly.
constexpr course::Tolerance kExact{0.0, 0.0};

std::string log2_text(double v) {
  if (v == 0.0) return "0";
  std::ostringstream s;
  s.precision(3);
  s << v << " = 2^" << std::log2(v);
  return s.str();
}

void sync() { COURSE_CUDA_CHECK(cudaDeviceSynchronize()); }

// True when some element still holds the poison: the kernel did not write it. Tests that give a
// pointed hint about a wrong VALUE check this first, so that an unwritten output reads as such.
template <class T>
bool any_unwritten(const std::vector<T>& v) {
  for (const T& e : v)
    if (course::DType<T>::is_poison(e)) return true;
  return false;
}

using course::expect_rejected;

// =============================================================================================
// Exercise 1: fast math in inline PTX.

struct Wrapper {
  MathFn fn;
  const char* name;  // the wrapper in kernel.cu
  const char* ptx;   // the instruction it must emit
  const char* todo;
};
const Wrapper kExp2{MathFn::kExp2, "ptx_exp2", "ex2.approx.f32", "d03.1a"};
const Wrapper kLog2{MathFn::kLog2, "ptx_log2", "lg2.approx.f32", "d03.1b"};
const Wrapper kRsqrt{MathFn::kRsqrt, "ptx_rsqrt", "rsqrt.approx.f32", "d03.1c"};
const Wrapper kTanh{MathFn::kTanh, "ptx_tanh", "tanh.approx.f32", "d03.1d"};

std::vector<float> run_ptx(const Wrapper& w, const std::vector<float>& x) {
  DeviceBuffer<float> dx(x), dy(x.size());
  dy.poison();
  d03::ptx_math(w.fn, dx.data(), dy.data(), static_cast<std::int64_t>(x.size()));
  sync();
  return dy.read_back();
}

// False (with a failure that says what to do) while the wrapper still returns the placeholder.
bool written(const Wrapper& w, const std::vector<float>& y) {
  std::size_t placeholders = 0;
  for (float v : y) placeholders += course::DType<float>::is_poison(v);
  if (placeholders == 0) return true;
  ADD_FAILURE() << w.name << " returned the starter's placeholder for " << placeholders << " of "
                << y.size() << " inputs: it is not written yet. TODO(" << w.todo
                << "): one asm volatile statement emitting " << w.ptx << " (lesson §2, §3).";
  return false;
}

// Inputs 2^u for u uniform in [lo, hi): every binade equally often, as a relative error needs.
std::vector<float> log_uniform(std::size_t n, std::uint64_t seed, double lo, double hi,
                               bool random_sign = false) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> x(n);
  for (auto& v : x) {
    v = static_cast<float>(std::exp2(u(gen)));
    if (random_sign && negative(gen)) v = -v;
  }
  return x;
}

// The largest error over x of `error(got, exact)`, with where it happened.
struct Worst {
  double error = 0.0;
  std::size_t at = 0;
};
template <class Exact, class Error>
Worst worst_error(const std::vector<float>& x, const std::vector<float>& got, Exact exact,
                  Error error) {
  Worst w;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = error(got[i], exact(static_cast<double>(x[i])));
    if (!(e <= w.error)) {  // also catches NaN errors
      w.error = e;
      w.at = i;
      if (std::isnan(e)) break;
    }
  }
  return w;
}

template <class Exact>
std::string element(const std::vector<float>& x, const std::vector<float>& got, std::size_t i,
                    Exact exact) {
  std::ostringstream s;
  s.precision(9);
  s << "x = " << x[i] << ": got " << got[i] << ", exact " << exact(static_cast<double>(x[i]));
  return s.str();
}

// Special values: exact expectations (the PTX ISA's tables of special cases), or "within the
// bound" for finite points. Collects every miss into one message.
struct SpecialCase {
  float x;
  double expected;  // NaN: the result must be NaN
  bool exact;       // true: bit-for-bit value (infinities, exact zeros and ones)
};
template <class Within>
void expect_special_values(const Wrapper& w, const std::vector<SpecialCase>& cases, Within within) {
  std::vector<float> x;
  for (const auto& c : cases) x.push_back(c.x);
  const auto got = run_ptx(w, x);
  if (!written(w, got)) return;
  std::ostringstream misses;
  int bad = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const SpecialCase& c = cases[i];
    const double g = got[i];
    bool ok;
    if (std::isnan(c.expected)) {
      ok = std::isnan(g);
    } else if (c.exact) {
      ok = g == c.expected;
    } else {
      ok = std::isfinite(g) && within(got[i], c.expected);
    }
    if (!ok) {
      ++bad;
      misses << "\n  " << w.name << "(" << c.x << ") = " << g << ", expected "
             << (c.exact || std::isnan(c.expected) ? "exactly " : "about ") << c.expected;
    }
  }
  EXPECT_EQ(bad, 0) << w.name << " gets " << bad << " special or extreme inputs wrong. The PTX "
                    << "instruction itself handles them (infinities, zeros, NaN, overflow): did "
                    << "you add code around it, or use another instruction than " << w.ptx << "?"
                    << misses.str();
}

// ---------------------------------------------------------------- 1a: ptx_exp2

class PtxExp2 : public course::GpuTest {};

TEST_F(PtxExp2, IsWithinTwoUlpOfTheCorrectlyRoundedResult) {
  // Every result normal: 2^-126 <= 2^x < 2^128.
  const auto x = course::random_uniform<float>((1 << 20) + 3, course::seed_for(11), -126.0, 128.0);
  const auto got = run_ptx(kExp2, x);
  if (!written(kExp2, got)) return;
  const auto exact = [](double v) { return ref::exp2(v); };
  const Worst ulp = worst_error(x, got, exact, ref::ulp_distance_f32);
  const Worst rel = worst_error(x, got, exact, ref::relative_error);
  course::report_measured("ptx_exp2", "ptx_exp2 on " + std::to_string(x.size()) +
                                          " inputs in [-126, 128): max " +
                                          std::to_string(ulp.error) + " ulp, max relative error " +
                                          log2_text(rel.error) + " (PTX ISA: 2 ulp)");
  EXPECT_LE(ulp.error, kEx2MaxUlp)
      << "ptx_exp2 is " << ulp.error << " ulp from the correctly rounded 2^x, more than the 2 ulp "
      << "of ex2.approx.f32: is the instruction ex2.approx.f32, with the result in %0 and x in "
      << "%1?\n  worst: " << element(x, got, ulp.at, exact) << course::seed_hint();
}

TEST_F(PtxExp2, HandlesInfinitiesZerosOverflowAndNaN) {
  const double nan = std::nan("");
  expect_special_values(
      kExp2,
      {{-kInf, 0.0, true},
       {kInf, kInf, true},
       {0.0f, 1.0, true},
       {-0.0f, 1.0, true},
       {kNaN, nan, true},
       {1.0f, 2.0, false},
       {-1.0f, 0.5, false},
       {0.5f, std::sqrt(2.0), false},
       {10.0f, 1024.0, false},
       {127.0f, std::ldexp(1.0, 127), false},
       {129.0f, kInf, true},
       {200.0f, kInf, true},
       {1e30f, kInf, true},  // overflow: +inf
       {-140.0f, std::ldexp(1.0, -140), false},
       {-149.0f, std::ldexp(1.0, -149), false},  // subnormal
       {-200.0f, 0.0, false},
       {-1e30f, 0.0, false}},  // underflow: 0
      [](float g, double e) { return ref::ulp_distance_f32(g, e) <= kEx2MaxUlp; });
}

class PtxExp2Limits : public course::GpuTest {};

TEST_F(PtxExp2Limits, RejectsNoTermsThenComputesOneTerm) {
  // lab.h: terms >= 1 and n >= 0. terms = 0 and n = -1 are just outside; n = 0 needs no pointer;
  // terms = 1 is the first value inside (y = ptx_exp2(x)).
  DeviceBuffer<float> dx(4), dy(4);
  expect_rejected([&] { d03::ptx_math(MathFn::kExp2, dx.data(), dy.data(), 4, 0); },
                  "ptx_math(exp2, n = 4, terms = 0)", "terms must be >= 1");
  expect_rejected([&] { d03::ptx_math(MathFn::kExp2, dx.data(), dy.data(), -1); },
                  "ptx_math(exp2, n = -1)", "n must be >= 0");
  COURSE_EXPECT_NO_THROW(d03::ptx_math(MathFn::kExp2, nullptr, nullptr, 0));
  const std::vector<float> x = {0.0f, 1.0f, -1.0f, 10.0f};
  const auto got = run_ptx(kExp2, x);
  if (!written(kExp2, got)) return;
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_LE(ref::ulp_distance_f32(got[i], ref::exp2(x[i])), kEx2MaxUlp)
        << "ptx_exp2(" << x[i] << ") = " << got[i] << ": one term is exactly ptx_exp2(x)";
}

// ---------------------------------------------------------------- 1b: ptx_log2

class PtxLog2 : public course::GpuTest {};

TEST_F(PtxLog2, MeetsTheDocumentedErrorBound) {
  const auto exact = [](double v) { return ref::log2(v); };
  // Near 1 the result is near 0, so the ISA bounds the ABSOLUTE error there...
  const auto near_one =
      course::random_uniform<float>((1 << 20) + 3, course::seed_for(12), 0.5, 2.0);
  const auto got_near = run_ptx(kLog2, near_one);
  if (!written(kLog2, got_near)) return;
  const Worst abs = worst_error(near_one, got_near, exact, ref::absolute_error);
  // ... and the relative error everywhere else (subnormal inputs included: no .ftz).
  auto far = log_uniform((1 << 20) + 3, course::seed_for(13), -149.0, 128.0);
  for (auto& v : far)
    if (v > 0.5f && v < 2.0f) v *= 8.0f;
  const auto got_far = run_ptx(kLog2, far);
  const Worst rel = worst_error(far, got_far, exact, ref::relative_error);
  course::report_measured("ptx_log2", "ptx_log2: max absolute error " + log2_text(abs.error) +
                                          " for x in (0.5, 2), max relative error " +
                                          log2_text(rel.error) +
                                          " elsewhere (PTX ISA: 2^-22 for both)");
  EXPECT_LE(abs.error, kLg2MaxAbsNearOne)
      << "ptx_log2 is off by more than 2^-22 near x = 1: is the instruction lg2.approx.f32?\n  "
      << "worst: " << element(near_one, got_near, abs.at, exact) << course::seed_hint();
  EXPECT_LE(rel.error, kLg2MaxRel)
      << "ptx_log2's relative error exceeds 2^-22 away from x = 1. Subnormal inputs need the "
      << "form without .ftz.\n  worst: " << element(far, got_far, rel.at, exact)
      << course::seed_hint();
}

TEST_F(PtxLog2, HandlesZerosNegativesInfinityAndNaN) {
  const double nan = std::nan("");
  expect_special_values(kLog2,
                        {{0.0f, -kInf, true},
                         {-0.0f, -kInf, true},
                         {kInf, kInf, true},
                         {-kInf, nan, true},
                         {-1.0f, nan, true},
                         {-3e38f, nan, true},
                         {kNaN, nan, true},
                         {1.0f, 0.0, false},
                         {2.0f, 1.0, false},
                         {1024.0f, 10.0, false},
                         {0.75f, std::log2(0.75), false},
                         {3e38f, std::log2(3e38), false},
                         {1e-40f, std::log2(double(1e-40f)), false}},  // subnormal
                        [](float g, double e) {
                          return std::fabs(e) < 1.0 ? ref::absolute_error(g, e) <= kLg2MaxAbsNearOne
                                                    : ref::relative_error(g, e) <= kLg2MaxRel;
                        });
}

// ---------------------------------------------------------------- 1c: ptx_rsqrt

class PtxRsqrt : public course::GpuTest {};

TEST_F(PtxRsqrt, MeetsTheDocumentedErrorBound) {
  const auto exact = [](double v) { return ref::rsqrt(v); };
  const auto x = log_uniform((1 << 20) + 3, course::seed_for(14), -149.0, 128.0);  // subnormals too
  const auto got = run_ptx(kRsqrt, x);
  if (!written(kRsqrt, got)) return;
  const Worst rel = worst_error(x, got, exact, ref::relative_error);
  course::report_measured("ptx_rsqrt", "ptx_rsqrt on " + std::to_string(x.size()) +
                                           " inputs in [2^-149, 2^128): " + "max relative error " +
                                           log2_text(rel.error) + " (PTX ISA: 2^-22.9)");
  EXPECT_LE(rel.error, kRsqrtMaxRel)
      << "ptx_rsqrt's relative error exceeds 2^-22.9: is the instruction rsqrt.approx.f32 (not "
      << "sqrt, not rcp of sqrt)? Subnormal inputs need the form without .ftz.\n  worst: "
      << element(x, got, rel.at, exact) << course::seed_hint();
}

TEST_F(PtxRsqrt, HandlesZerosInfinityNegativesAndNaN) {
  const double nan = std::nan("");
  expect_special_values(
      kRsqrt,
      {{0.0f, kInf, true},
       {-0.0f, -kInf, true},
       {kInf, 0.0, true},
       {-kInf, nan, true},
       {-1.0f, nan, true},
       {kNaN, nan, true},
       {4.0f, 0.5, false},
       {1.0f, 1.0, false},
       {3e38f, 1.0 / std::sqrt(3e38), false},
       {1e-40f, 1.0 / std::sqrt(double(1e-40f)), false}},  // a subnormal input
      [](float g, double e) { return ref::relative_error(g, e) <= kRsqrtMaxRel; });
}

// ---------------------------------------------------------------- 1d: ptx_tanh

class PtxTanh : public course::GpuTest {};

TEST_F(PtxTanh, MeetsTheDocumentedErrorBound) {
  const auto exact = [](double v) { return ref::tanh(v); };
  // Where GeLU uses it, and small magnitudes down to 2^-40 (where tanh(x) ~ x).
  auto x = course::random_uniform<float>((1 << 19) + 3, course::seed_for(15), -10.0, 10.0);
  const auto small = log_uniform((1 << 19), course::seed_for(16), -40.0, 4.0, /*random_sign=*/true);
  x.insert(x.end(), small.begin(), small.end());
  const auto got = run_ptx(kTanh, x);
  if (!written(kTanh, got)) return;
  const Worst rel = worst_error(x, got, exact, ref::relative_error);
  course::report_measured("ptx_tanh", "ptx_tanh on " + std::to_string(x.size()) +
                                          " inputs: max relative error " + log2_text(rel.error) +
                                          " (PTX ISA: 2^-10.987)");
  EXPECT_LE(rel.error, kTanhApproxTolerance)
      << "ptx_tanh's relative error exceeds 2^-10.987: is the instruction tanh.approx.f32?\n  "
      << "worst: " << element(x, got, rel.at, exact) << course::seed_hint();
}

TEST_F(PtxTanh, SaturatesAtInfinityAndKeepsNaN) {
  const double nan = std::nan("");
  expect_special_values(
      kTanh,
      {{kInf, 1.0, true},
       {-kInf, -1.0, true},
       {0.0f, 0.0, true},
       {-0.0f, 0.0, true},
       {kNaN, nan, true},
       {0.5f, std::tanh(0.5), false},
       {-2.0f, std::tanh(-2.0), false},
       {20.0f, 1.0, false},
       {-20.0f, -1.0, false},
       {1e30f, 1.0, false},
       {-3e38f, -1.0, false},
       {1e-6f, std::tanh(double(1e-6f)), false}},
      [](float g, double e) { return ref::relative_error(g, e) <= kTanhApproxTolerance; });
}

// =============================================================================================
// Exercises 2 and 3: warp shuffles over segments of 32.

std::size_t segments_of(std::size_t n) { return ref::segment_count(n, d03::kSegment); }

const std::int64_t kSegmentSizes[] = {1, 31, 32, 33, 97, 1021, (1 << 20) + 3};
std::string size_name(const ::testing::TestParamInfo<std::int64_t>& info) {
  return "n" + std::to_string(info.param);
}

// Where the input's buffer ends. kPadded: the first `n` elements are x and the next 64 hold
// `garbage`, so a lane past the end that USES what it loads picks it up and the result says
// so. kExact: the buffer ends at n, so a lane that loads past the end and throws the value
// away reads past the allocation, which only compute-sanitizer's memcheck (graded on Day 3)
// sees: the padding would hide it.
enum class InputEnd { kPadded, kExact };

template <class T>
DeviceBuffer<T> with_garbage_after(const std::vector<T>& x, T garbage,
                                   InputEnd end = InputEnd::kPadded) {
  std::vector<T> padded = x;
  if (end == InputEnd::kPadded) padded.resize(x.size() + 2 * d03::kSegment, garbage);
  return DeviceBuffer<T>(padded);
}

std::vector<float> run_segment_sum(const std::vector<float>& x, InputEnd end = InputEnd::kPadded) {
  auto dx = with_garbage_after(x, kNaN, end);
  DeviceBuffer<float> out(segments_of(x.size()));
  out.poison();
  d03::segment_sum(dx.data(), out.data(), static_cast<std::int64_t>(x.size()));
  sync();
  return out.read_back();
}

std::vector<float> run_segment_max(const std::vector<float>& x, float garbage,
                                   InputEnd end = InputEnd::kPadded) {
  auto dx = with_garbage_after(x, garbage, end);
  DeviceBuffer<float> out(segments_of(x.size()));
  out.poison();
  d03::segment_max(dx.data(), out.data(), static_cast<std::int64_t>(x.size()));
  sync();
  return out.read_back();
}

// ---------------------------------------------------------------- 2a: warp sum

class WarpSum : public course::GpuTest, public ::testing::WithParamInterface<std::int64_t> {};

TEST_P(WarpSum, MatchesTheReferenceForEverySize) {
  // Memory past the end holds NaN: a lane past n that loads instead of contributing 0 poisons
  // the last segment's sum.
  const auto x =
      course::random_uniform<float>(static_cast<std::size_t>(GetParam()), course::seed_for(21));
  course::CompareOptions options;
  options.what = "segment sums (out[s] = sum of x[32s .. 32s+31])";
  COURSE_EXPECT_MATCH(run_segment_sum(x), ref::segment_sums(course::as_doubles(x)), options);
}
INSTANTIATE_TEST_SUITE_P(Sizes, WarpSum, ::testing::ValuesIn(kSegmentSizes), size_name);

class WarpSumSpecialValues : public course::GpuTest {};

TEST_F(WarpSumSpecialValues, PropagatesInfinityAndNaN) {
  // Segment 0: one +inf. 1: a NaN in the last lane. 2: +inf and -inf (NaN). 3: ordinary values.
  // 4: a short last segment of 5.
  std::vector<float> x = course::random_uniform<float>(4 * 32 + 5, course::seed_for(22));
  x[7] = kInf;
  x[32 + 31] = kNaN;
  x[64 + 3] = kInf;
  x[64 + 20] = -kInf;
  course::CompareOptions options;
  options.what = "segment sums with inf and NaN";
  COURSE_EXPECT_MATCH(run_segment_sum(x), ref::segment_sums(course::as_doubles(x)), options);
}

// ---------------------------------------------------------------- 2b: warp max

class WarpMax : public course::GpuTest, public ::testing::WithParamInterface<std::int64_t> {};

TEST_P(WarpMax, MatchesTheReferenceForEverySize) {
  const auto x =
      course::random_uniform<float>(static_cast<std::size_t>(GetParam()), course::seed_for(23));
  course::CompareOptions options;
  options.what = "segment maxima";
  options.tolerance = kExact;
  COURSE_EXPECT_MATCH(run_segment_max(x, kNaN), ref::segment_max(course::as_doubles(x)), options);
}
INSTANTIATE_TEST_SUITE_P(Sizes, WarpMax, ::testing::ValuesIn(kSegmentSizes), size_name);

class WarpMaxTail : public course::GpuTest {};

TEST_F(WarpMaxTail, NegativeSegmentsIgnoreLanesPastTheEnd) {
  // All values negative; the last segment holds 13 of them. Lanes 13..31 must hold -inf: with 0
  // the maximum would be 0, and loading past the end would find the +1e30 placed there.
  const auto x = course::random_uniform<float>(2 * 32 + 13, course::seed_for(24), -2.0, -1.0);
  const auto got = run_segment_max(x, 1e30f);
  const auto want = ref::segment_max(course::as_doubles(x));
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(any_unwritten(got)) << "segment maxima were never written: is segment_reduce_kernel "
                                      "written (TODO d03.2a)?";
  const float last = got.back();
  EXPECT_FALSE(last == 0.0f) << "the last segment's maximum is 0, but every element is negative: "
                                "lanes past the end must hold the identity of max, -inf, not 0";
  EXPECT_FALSE(last == 1e30f) << "the last segment's maximum is the value stored AFTER the end of "
                                 "x: lanes past n must not load";
  course::CompareOptions options;
  options.what = "segment maxima of negative values";
  options.tolerance = kExact;
  COURSE_EXPECT_MATCH(got, want, options);
}

class WarpMaxSpecialValues : public course::GpuTest {};

TEST_F(WarpMaxSpecialValues, PropagatesNaNAndHandlesInfinities) {
  // Segment 0: NaN in lane 5. 1: NaN in lane 31 (the last to be combined in some orders).
  // 2: +inf. 3: every lane -inf. 4: negative values around -0. 5: ordinary. 6: short, with a NaN.
  std::vector<float> x = course::random_uniform<float>(6 * 32 + 9, course::seed_for(25));
  x[5] = kNaN;
  x[32 + 31] = kNaN;
  x[64 + 17] = kInf;
  for (int k = 0; k < 32; ++k) x[96 + k] = -kInf;
  for (int k = 0; k < 32; ++k) x[128 + k] = -std::fabs(x[128 + k]);
  x[128 + 9] = -0.0f;
  x[192 + 8] = kNaN;
  const auto got = run_segment_max(x, -kInf);
  const auto want = ref::segment_max(course::as_doubles(x));
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(any_unwritten(got)) << "segment maxima were never written: is segment_reduce_kernel "
                                      "written (TODO d03.2a)?";
  EXPECT_TRUE(std::isnan(got[0]) && std::isnan(got[1]) && std::isnan(got[6]))
      << "a segment holding a NaN must have NaN as its maximum, but the NaN vanished: fmaxf and "
         "max.f32 return the OTHER operand when one is NaN. Test for NaN (v != v) or use "
         "max.NaN.f32 (lesson §4)";
  course::CompareOptions options;
  options.what = "segment maxima with NaN and inf";
  options.tolerance = kExact;
  COURSE_EXPECT_MATCH(got, want, options);
}

// ---------------------------------------------------------------- 2c: warp broadcast

struct BroadcastCase {
  std::int64_t n;
  int src_lane;
};
class WarpBroadcast : public course::GpuTest,
                      public ::testing::WithParamInterface<BroadcastCase> {};

std::vector<float> run_segment_broadcast(const std::vector<float>& x, int src_lane,
                                         InputEnd end = InputEnd::kPadded) {
  auto dx = with_garbage_after(x, kNaN, end);  // a source lane past the end must give 0, not this
  DeviceBuffer<float> dy(x.size());
  dy.poison();
  d03::segment_broadcast(dx.data(), dy.data(), static_cast<std::int64_t>(x.size()), src_lane);
  sync();
  return dy.read_back();
}

TEST_P(WarpBroadcast, EveryLaneReceivesTheSourceLane) {
  const BroadcastCase c = GetParam();
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(c.n), course::seed_for(26));
  course::CompareOptions options;
  options.what = "broadcast from lane " + std::to_string(c.src_lane) +
                 " (y[i] = x[32 * (i / 32) + lane], 0 past the end)";
  options.tolerance = kExact;
  COURSE_EXPECT_MATCH(run_segment_broadcast(x, c.src_lane),
                      ref::segment_broadcast(course::as_doubles(x), c.src_lane), options);
}
INSTANTIATE_TEST_SUITE_P(Lanes, WarpBroadcast,
                         ::testing::Values(BroadcastCase{1, 0}, BroadcastCase{33, 0},
                                           BroadcastCase{33, 7}, BroadcastCase{97, 31},
                                           BroadcastCase{1021, 31},
                                           BroadcastCase{(1 << 20) + 3, 13}),
                         [](const ::testing::TestParamInfo<BroadcastCase>& p) {
                           return "n" + std::to_string(p.param.n) + "_lane" +
                                  std::to_string(p.param.src_lane);
                         });

class WarpBroadcastLimits : public course::GpuTest {};

TEST_F(WarpBroadcastLimits, RejectsSourceLanesOutsideTheSegment) {
  // lab.h: 0 <= src_lane < 32. -1 and 32 are just outside (a shuffle from lane 32 would wrap to
  // lane 0, from -1 to lane 31: a wrong answer, not an error); 0 and 31 are the first inside.
  const auto x = course::random_uniform<float>(33, course::seed_for(61));
  DeviceBuffer<float> dx(x), dy(x.size());
  for (const int lane : {-1, 32})
    expect_rejected([&] { d03::segment_broadcast(dx.data(), dy.data(), 33, lane); },
                    "segment_broadcast(n = 33, src_lane = " + std::to_string(lane) + ")",
                    "src_lane must be in [0, 32)");
  expect_rejected([&] { d03::segment_broadcast(dx.data(), dy.data(), -1, 0); },
                  "segment_broadcast(n = -1)", "n must be >= 0");
  COURSE_EXPECT_NO_THROW(d03::segment_broadcast(nullptr, nullptr, 0, 0));
  sync();
  for (const int lane : {0, 31}) {
    course::CompareOptions options;
    options.what = "broadcast from lane " + std::to_string(lane) + " of 33 elements";
    options.tolerance = kExact;
    COURSE_EXPECT_MATCH(run_segment_broadcast(x, lane),
                        ref::segment_broadcast(course::as_doubles(x), lane), options);
  }
}

// ---------------------------------------------------------------- 2d: warp scan

std::vector<float> run_segment_scan(const std::vector<float>& x, std::size_t guard = 0,
                                    InputEnd end = InputEnd::kPadded) {
  auto dx = with_garbage_after(x, kNaN, end);
  DeviceBuffer<float> dy(x.size() + guard);
  dy.poison();
  d03::segment_scan(dx.data(), dy.data(), static_cast<std::int64_t>(x.size()));
  sync();
  return dy.read_back();
}

class WarpScan : public course::GpuTest, public ::testing::WithParamInterface<std::int64_t> {};

TEST_P(WarpScan, MatchesTheReferenceForEverySize) {
  const auto x =
      course::random_uniform<float>(static_cast<std::size_t>(GetParam()), course::seed_for(27));
  course::CompareOptions options;
  options.what = "inclusive scan per segment";
  COURSE_EXPECT_MATCH(run_segment_scan(x), ref::segment_inclusive_scan(course::as_doubles(x)),
                      options);
}
INSTANTIATE_TEST_SUITE_P(Sizes, WarpScan, ::testing::ValuesIn(kSegmentSizes), size_name);

// ---------------------------------------------------------------- the input's end, for memcheck
// The same four segment operations on an input whose buffer ends at n (InputEnd::kExact), so
// that a load past the end is one past the allocation: memcheck's to see, the result's to check.
class SegmentsOfExactInput : public course::GpuTest {
 protected:
  const std::vector<float> x_ = course::random_uniform<float>(33, course::seed_for(60));
  const std::vector<double> xd_ = course::as_doubles(x_);
  static course::CompareOptions options(const std::string& what, course::Tolerance tolerance) {
    course::CompareOptions o;
    o.what = what + " of 33 elements in a buffer of exactly 33";
    o.tolerance = tolerance;
    return o;
  }
};
using WarpSumExactInput = SegmentsOfExactInput;
using WarpMaxExactInput = SegmentsOfExactInput;
using WarpBroadcastExactInput = SegmentsOfExactInput;
using WarpScanExactInput = SegmentsOfExactInput;

TEST_F(WarpSumExactInput, ReadsNothingPastTheEnd) {
  COURSE_EXPECT_MATCH(run_segment_sum(x_, InputEnd::kExact), ref::segment_sums(xd_),
                      options("segment sums", course::CompareOptions{}.tolerance));
}

TEST_F(WarpMaxExactInput, ReadsNothingPastTheEnd) {
  COURSE_EXPECT_MATCH(run_segment_max(x_, kNaN, InputEnd::kExact), ref::segment_max(xd_),
                      options("segment maxima", kExact));
}

TEST_F(WarpBroadcastExactInput, ReadsNothingPastTheEnd) {
  COURSE_EXPECT_MATCH(run_segment_broadcast(x_, 7, InputEnd::kExact),
                      ref::segment_broadcast(xd_, 7), options("broadcast from lane 7", kExact));
}

TEST_F(WarpScanExactInput, ReadsNothingPastTheEnd) {
  COURSE_EXPECT_MATCH(run_segment_scan(x_, 0, InputEnd::kExact), ref::segment_inclusive_scan(xd_),
                      options("segment scans", course::CompareOptions{}.tolerance));
}

class WarpScanSegments : public course::GpuTest {};

TEST_F(WarpScanSegments, EverySegmentStartsFromZero) {
  // All ones: y[i] must be exactly (i % 32) + 1. Adding the value a lane gets back from shfl.up
  // when lane < delta (its own) counts it twice; carrying over from the previous segment makes
  // the counts run past 32. Elements after n must stay untouched.
  const std::size_t n = 100, guard = 28;
  const auto y = run_segment_scan(std::vector<float>(n, 1.0f), guard);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_FALSE(course::DType<float>::is_poison(y[i]))
        << "y[" << i << "] was never written: is segment_scan_kernel written (TODO d03.2d)?";
    ASSERT_EQ(y[i], static_cast<float>(i % 32 + 1))
        << "scan of all ones: y[" << i << "] should be " << i % 32 + 1 << " (lane " << i % 32
        << " of segment " << i / 32 << "). Add the value from lane - delta only when "
        << "lane >= delta, and start every segment from its own first element (lesson §5)";
  }
  for (std::size_t i = n; i < n + guard; ++i)
    ASSERT_TRUE(course::DType<float>::is_poison(y[i]))
        << "y[" << i << "] was written but n = " << n << ": lanes past the end must not store";
}

// ---------------------------------------------------------------- 3a: the double shuffle

class ShuffleDouble : public course::GpuTest, public ::testing::WithParamInterface<std::int64_t> {};

std::vector<double> run_segment_sum_f64(const std::vector<double>& x) {
  auto dx = with_garbage_after(x, std::nan(""));
  DeviceBuffer<double> out(segments_of(x.size()));
  out.poison();
  d03::segment_sum(dx.data(), out.data(), static_cast<std::int64_t>(x.size()));
  sync();
  return out.read_back();
}

TEST_P(ShuffleDouble, SumsFloat64SegmentsForEverySize) {
  const auto x =
      course::random_uniform<double>(static_cast<std::size_t>(GetParam()), course::seed_for(31));
  course::CompareOptions options;
  options.what = "float64 segment sums";
  COURSE_EXPECT_MATCH(run_segment_sum_f64(x), ref::segment_sums(x), options);
}
INSTANTIATE_TEST_SUITE_P(Sizes, ShuffleDouble, ::testing::ValuesIn(kSegmentSizes), size_name);

class ShuffleDoublePrecision : public course::GpuTest {};

TEST_F(ShuffleDoublePrecision, KeepsAllSixtyFourBits) {
  // 1 + k 2^-30: the 2^-30 steps are far below float32's resolution at 32 (2^-19), so a sum that
  // passes through float anywhere (a shuffle of only 32 bits, an overload not in sight) loses them.
  std::vector<double> x(3 * 32);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = 1.0 + std::ldexp(static_cast<double>(k), -30);
  const auto got = run_segment_sum_f64(x);
  const auto want = ref::segment_sums(x);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(any_unwritten(got)) << "the float64 segment sums were never written: "
                                      "segment_reduce_kernel (TODO d03.2a) and shfl_xor(double) "
                                      "(TODO d03.3a)";
  for (std::size_t s = 0; s < want.size(); ++s)
    EXPECT_NEAR(got[s], want[s], 1e-12 * want[s])
        << "segment " << s << ": the float64 sum lost its low bits. Shuffle BOTH 32-bit halves "
        << "(bit_cast<uint2>), and check that warp_sum sees the double overload of shfl_xor, "
        << "not the float one (lesson §6)";
}

// ---------------------------------------------------------------- 3b: the half2 shuffle

std::vector<course::half> run_segment_max_pairs(const std::vector<course::half>& x) {
  const std::size_t pairs = x.size() / 2;
  auto dx = with_garbage_after(x, course::from_double<course::half>(std::nan("")));
  DeviceBuffer<course::half> out(2 * segments_of(pairs));
  out.poison();
  d03::segment_max_pairs(dx.data(), out.data(), static_cast<std::int64_t>(pairs));
  sync();
  return out.read_back();
}

// The reference: the max of each channel (even elements a, odd elements b), interleaved again.
std::vector<double> pair_max_reference(const std::vector<course::half>& x) {
  const auto xd = course::as_doubles(x);
  std::vector<double> a, b;
  for (std::size_t i = 0; i + 1 < xd.size(); i += 2) {
    a.push_back(xd[i]);
    b.push_back(xd[i + 1]);
  }
  const auto ma = ref::segment_max(a), mb = ref::segment_max(b);
  std::vector<double> out;
  for (std::size_t s = 0; s < ma.size(); ++s) {
    out.push_back(ma[s]);
    out.push_back(mb[s]);
  }
  return out;
}

class ShuffleHalf2 : public course::GpuTest, public ::testing::WithParamInterface<std::int64_t> {};

TEST_P(ShuffleHalf2, ReducesBothChannelsForEverySize) {
  // Channel b is shifted up by 2, so a mixed-up channel shows as a wrong value, not a lucky one.
  const auto pairs = static_cast<std::size_t>(GetParam());
  const auto a = course::random_uniform<float>(pairs, course::seed_for(32), -1.0, 1.0);
  const auto b = course::random_uniform<float>(pairs, course::seed_for(33), 1.0, 3.0);
  std::vector<course::half> x(2 * pairs);
  for (std::size_t i = 0; i < pairs; ++i) {
    x[2 * i] = course::from_double<course::half>(a[i]);
    x[2 * i + 1] = course::from_double<course::half>(b[i]);
  }
  course::CompareOptions options;
  options.what = "per-channel segment maxima of half pairs (out[2s] = max a, out[2s+1] = max b)";
  options.tolerance = kExact;
  COURSE_EXPECT_MATCH(run_segment_max_pairs(x), pair_max_reference(x), options);
}
INSTANTIATE_TEST_SUITE_P(Sizes, ShuffleHalf2, ::testing::ValuesIn(kSegmentSizes), size_name);

class ShuffleHalf2Channels : public course::GpuTest {};

TEST_F(ShuffleHalf2Channels, PropagateNaNIndependently) {
  // Segment 0: NaN in channel b only. Segment 1: NaN in channel a only. Segment 2: -inf in a
  // everywhere, +inf once in b. Segment 3: 7 pairs, all negative.
  const std::size_t pairs = 3 * 32 + 7;
  const auto v = course::random_uniform<float>(2 * pairs, course::seed_for(34), -60000.0, 60000.0);
  std::vector<course::half> x(2 * pairs);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = course::from_double<course::half>(v[i]);
  const course::half nan = course::from_double<course::half>(std::nan(""));
  x[2 * 3 + 1] = nan;
  x[2 * (32 + 30)] = nan;
  for (std::size_t p = 64; p < 96; ++p) x[2 * p] = course::from_double<course::half>(-kInf);
  x[2 * 70 + 1] = course::from_double<course::half>(kInf);
  for (std::size_t p = 96; p < pairs; ++p)
    for (int c = 0; c < 2; ++c)
      x[2 * p + c] = course::from_double<course::half>(-std::fabs(v[2 * p + c]) - 1.0);
  const auto got = run_segment_max_pairs(x);
  ASSERT_EQ(got.size(), 8u);
  ASSERT_FALSE(any_unwritten(got)) << "the pair maxima were never written: segment_reduce_kernel "
                                      "(TODO d03.2a), shfl_xor(__half2) and warp_max(__half2) "
                                      "(TODO d03.3b)";
  EXPECT_TRUE(std::isnan(course::to_double(got[1])) && !std::isnan(course::to_double(got[0])))
      << "segment 0 has a NaN in channel b only: out[1] must be NaN and out[0] must not. A "
      << "NaN crossing channels means the two halves were mixed up; a NaN vanishing means the "
      << "maximum drops NaN (use __hmax2_nan)";
  course::CompareOptions options;
  options.what = "per-channel maxima with NaN and inf";
  options.tolerance = kExact;
  COURSE_EXPECT_MATCH(got, pair_max_reference(x), options);
}

class ShuffleHalf2Limits : public course::GpuTest {};

TEST_F(ShuffleHalf2Limits, RejectsPointersNotFourByteAligned) {
  // lab.h: x and out must be 4-byte aligned, whole __half2 pairs (a 4-byte load from x + 1 would
  // be misaligned: a fault). pairs = -1 is outside; pairs = 0 needs no pointer.
  const std::size_t pairs = 33;
  DeviceBuffer<course::half> dx(2 * pairs + 2), dout(2 * segments_of(pairs) + 2);
  expect_rejected([&] { d03::segment_max_pairs(dx.data() + 1, dout.data(), 33); },
                  "segment_max_pairs(x + 1)", "x must be 4-byte aligned");
  expect_rejected([&] { d03::segment_max_pairs(dx.data(), dout.data() + 1, 33); },
                  "segment_max_pairs(out + 1)", "out must be 4-byte aligned");
  expect_rejected([&] { d03::segment_max_pairs(dx.data(), dout.data(), -1); },
                  "segment_max_pairs(pairs = -1)", "pairs must be >= 0");
  COURSE_EXPECT_NO_THROW(d03::segment_max_pairs(nullptr, nullptr, 0));
  sync();
  const auto v = course::random_uniform<float>(2 * pairs, course::seed_for(62), -1.0, 1.0);
  std::vector<course::half> x(2 * pairs);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = course::from_double<course::half>(v[i] + (i % 2 ? 2.0 : 0.0));
  course::CompareOptions options;
  options.what = "per-channel segment maxima of 33 half pairs at 4-byte aligned pointers";
  options.tolerance = kExact;
  COURSE_EXPECT_MATCH(run_segment_max_pairs(x), pair_max_reference(x), options);
}

// =============================================================================================
// Exercise 4: GeLU with tanh.approx.

// Rounding a result to T: at most unit_roundoff * |y| for normal results, and half the spacing
// of the subnormals (rounding_floor) below them (float16's subnormals start at 6.1e-5).
template <class T>
constexpr double unit_roundoff() {
  if constexpr (std::is_same_v<T, float>) return 0x1p-24;
  if constexpr (std::is_same_v<T, course::half>) return 0x1p-11;
  return 0x1p-8;  // bfloat16
}
template <class T>
constexpr double rounding_floor() {
  if constexpr (std::is_same_v<T, float>) return 0x1p-150;
  if constexpr (std::is_same_v<T, course::half>) return 0x1p-25;
  return 0x1p-134;  // bfloat16: float32's exponent range
}

// Two checks. First the harness's diagnosis of what was written (never written, the tail, NaN
// or inf where they do not belong), accepting any finite difference. Then each element against
// the error tanh.approx may cause, 0.5 |x| 2^-10.987 (kTanhApproxTolerance), plus the rounding of
// the result to T and a few float32 roundings inside.
template <class T>
void expect_gelu_within_tanh_bound(const std::vector<T>& x, const std::vector<T>& got,
                                   const std::string& what) {
  const auto xd = course::as_doubles(x);
  const auto want = ref::gelu_tanh(xd);
  course::CompareOptions written;
  written.what = what;
  written.tolerance = {std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
  COURSE_EXPECT_MATCH(got, want, written);
  if (::testing::Test::HasFailure()) return;

  std::size_t bad = 0, worst = 0;
  double worst_ratio = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = course::to_double(got[i]), r = want[i];
    if (!std::isfinite(r) || !std::isfinite(g)) continue;  // checked above
    const double from_tanh = 0.5 * std::fabs(xd[i]) * kTanhApproxTolerance;
    const double allowed = from_tanh + unit_roundoff<T>() * (std::fabs(r) + from_tanh) +
                           rounding_floor<T>() + 8 * 0x1p-24 * (std::fabs(r) + std::fabs(xd[i]));
    const double ratio = std::fabs(g - r) / allowed;
    if (ratio > 1.0) ++bad;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  EXPECT_EQ(bad, 0u) << bad << " of " << got.size() << " elements of " << what
                     << " are further from GeLU than tanh.approx's error can explain (|error| <= "
                     << "0.5 |x| 2^-10.987 + rounding). Check the formula: 0.5 x (1 + tanh(k (x + "
                     << "0.044715 x^3))) with k = sqrt(2/pi) = 0.7978845608.\n  worst: x = "
                     << xd[worst] << ", expected " << want[worst] << ", got "
                     << course::to_double(got[worst]) << " (" << worst_ratio
                     << " times the allowed error)" << course::seed_hint();
}

template <class T>
std::vector<T> run_gelu_fast(const std::vector<T>& x, std::size_t offset = 0) {
  // offset > 0 shifts both pointers by that many elements: no longer 16-byte aligned.
  DeviceBuffer<T> dx(x.size() + offset), dy(x.size() + offset);
  dx.upload(x, offset);
  dy.poison();
  d03::gelu_fast(dx.data() + offset, dy.data() + offset, static_cast<std::int64_t>(x.size()));
  sync();
  return dy.read_back(offset);
}

const char* kGeluWhat = "gelu_fast output (it calls your ptx_tanh: exercise 1d comes first)";

// One test per dtype (float32, float16, bfloat16) of each check.
template <class T>
void expect_every_size_matches() {
  // Sizes below, at and past the vector width (4 floats, 8 halves) and with a tail.
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{7}, std::size_t{8},
        std::size_t{33}, std::size_t{4099}, std::size_t{(1 << 20) + 3}}) {
    SCOPED_TRACE(std::string(course::DType<T>::name) + ", n = " + std::to_string(n));
    const auto x = course::random_uniform<T>(n, course::seed_for(41 + n), -6.0, 6.0);
    expect_gelu_within_tanh_bound(x, run_gelu_fast(x), kGeluWhat);
    if (::testing::Test::HasFailure()) return;
  }
}

template <class T>
void expect_unaligned_pointers_work() {
  const auto x = course::random_uniform<T>(4099, course::seed_for(42), -6.0, 6.0);
  expect_gelu_within_tanh_bound(x, run_gelu_fast(x, /*offset=*/1),
                                "gelu_fast output at pointers offset by one element (not 16-byte "
                                "aligned: the launcher must take the scalar path)");
}

class FastGelu : public course::GpuTest {};

TEST_F(FastGelu, Float32MatchesTheReferenceForEverySize) { expect_every_size_matches<float>(); }
TEST_F(FastGelu, Float16MatchesTheReferenceForEverySize) {
  expect_every_size_matches<course::half>();
}
TEST_F(FastGelu, Bfloat16MatchesTheReferenceForEverySize) {
  expect_every_size_matches<course::bfloat16>();
}
TEST_F(FastGelu, Float32HandlesPointersThatAreNotSixteenByteAligned) {
  expect_unaligned_pointers_work<float>();
}
TEST_F(FastGelu, Float16HandlesPointersThatAreNotSixteenByteAligned) {
  expect_unaligned_pointers_work<course::half>();
}
TEST_F(FastGelu, Bfloat16HandlesPointersThatAreNotSixteenByteAligned) {
  expect_unaligned_pointers_work<course::bfloat16>();
}

class FastGeluExtremes : public course::GpuTest {};

TEST_F(FastGeluExtremes, HandlesLargeMagnitudesZerosInfinityAndNaN) {
  // Large |x|: x^3 overflows float32 to inf, tanh(+-inf) = +-1, and GeLU must come out as x
  // (x > 0) or 0 (x < 0), not NaN. (-inf is left out on purpose: the formula gives
  // -inf * 0 = NaN there, as PyTorch does.)
  const std::vector<float> x = {1e4f, -1e4f, 1e30f,  -1e30f,  1e38f, -1e38f, 65504.0f, -65504.0f,
                                0.0f, -0.0f, 1e-30f, -1e-30f, kInf,  kNaN,   3.0f,     -3.0f};
  expect_gelu_within_tanh_bound(x, run_gelu_fast(x), "gelu_fast of extreme values");
}

class FastGeluError : public course::GpuTest {};

TEST_F(FastGeluError, IsReportedNextToTheTanhfBaseline) {
  // How much error does tanh.approx cost? The largest |error| / (0.5 |x|), i.e. the error of
  // tanh as GeLU sees it, for the fast GeLU and for the tanhf baseline, on the same inputs.
  const std::size_t n = (1 << 20) + 3;
  const auto x = course::random_uniform<float>(n, course::seed_for(43), -6.0, 6.0);
  const auto fast = run_gelu_fast(x);
  expect_gelu_within_tanh_bound(x, fast, kGeluWhat);
  if (HasFailure()) return;
  DeviceBuffer<float> dx(x), dy(n);
  dy.poison();
  d03::gelu_tanhf(dx.data(), dy.data(), static_cast<std::int64_t>(n));
  sync();
  const auto baseline = dy.read_back();
  const auto worst = [&](const std::vector<float>& y) {
    double w = 0.0;
    for (std::size_t i = 0; i < n; ++i)
      if (x[i] != 0.0f)
        w = std::max(w, std::fabs(y[i] - ref::gelu_tanh(x[i])) / (0.5 * std::fabs(x[i])));
    return w;
  };
  course::report_measured("gelu_error", "GeLU on " + std::to_string(n) +
                                            " inputs in [-6, 6): max |error| / "
                                            "(0.5 |x|) = " +
                                            log2_text(worst(fast)) + " with tanh.approx, " +
                                            log2_text(worst(baseline)) +
                                            " with tanhf (bound for tanh.approx: 2^-10.987)");
}

// =============================================================================================
// 64-bit indices (the *LargeIndex suites): n = 2^31 + 2^24 + 17 elements, where a segment's first
// index 32 s or an element index computed in 32 bits wraps. The input is filled on the GPU with a
// pattern the host recomputes at any index (course/large.h); the outputs are checked at the
// start, around 2^31 (segment 2^26), at the end and at a few hundred places in between. They run
// alone on the GPU (lab.json's serial_suites).
constexpr std::int64_t kLargeN = course::kLargeCount;

// The segments worth checking: the first, those around element 2^31, the last (17 elements),
// and random ones.
std::vector<std::int64_t> large_sample_segments(std::int64_t segments, std::uint64_t seed) {
  std::vector<std::int64_t> at = course::large_sample_indices(segments, seed);
  for (std::int64_t s = course::kTwoTo31 / d03::kSegment - 40;
       s < course::kTwoTo31 / d03::kSegment + 40; ++s)
    if (s >= 0 && s < segments) at.push_back(s);
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

class WarpSumLargeIndex : public course::GpuTest {};

TEST_F(WarpSumLargeIndex, SumsSegmentsPastTwoToThe31) {
  const std::int64_t n = kLargeN, segments = (n + d03::kSegment - 1) / d03::kSegment;
  COURSE_SKIP_UNLESS_GPU_MEMORY(static_cast<std::size_t>(n + segments) * sizeof(float));  // 8.3 GiB
  const course::Pattern p{course::seed_for(901), -1.0, 1.0};
  DeviceBuffer<float> x(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(segments));
  course::fill_pattern(x.data(), n, p);
  course::poison_on_device(out.data(), segments);
  d03::segment_sum(x.data(), out.data(), n);
  sync();
  const auto at = large_sample_segments(segments, course::seed_for(902));
  std::vector<double> want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    for (std::int64_t i = at[k] * d03::kSegment; i < std::min(n, (at[k] + 1) * d03::kSegment); ++i)
      want[k] += course::pattern_double_value<float>(p, i);
  course::CompareOptions options;
  options.what =
      "segment sums of n = 2^31 + 2^24 + 17 elements (out[s] = x[32 s] + ... + x[32 s + 31]; "
      "segment 2^26 starts at element 2^31; TODO d03.2a: the index in 64 bits)";
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(out.data(), segments, at), want, at, options);
}

class WarpBroadcastLargeIndex : public course::GpuTest {};

TEST_F(WarpBroadcastLargeIndex, BroadcastsInSegmentsPastTwoToThe31) {
  const std::int64_t n = kLargeN;
  const int src_lane = 13;  // the last segment holds 17 elements: lane 13 is one of them
  COURSE_SKIP_UNLESS_GPU_MEMORY(2 * static_cast<std::size_t>(n) * sizeof(float));  // 16 GiB
  const course::Pattern p{course::seed_for(903), -1.0, 1.0};
  DeviceBuffer<float> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  course::fill_pattern(x.data(), n, p);
  course::poison_on_device(y.data(), n);
  d03::segment_broadcast(x.data(), y.data(), n, src_lane);
  sync();
  const auto at = course::large_sample_indices(n, course::seed_for(904));
  std::vector<double> want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    want[k] =
        course::pattern_double_value<float>(p, at[k] / d03::kSegment * d03::kSegment + src_lane);
  course::CompareOptions options;
  options.tolerance = kExact;
  options.what =
      "broadcast from lane 13 over n = 2^31 + 2^24 + 17 elements (TODO d03.2c: the index in "
      "64 bits)";
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data(), n, at), want, at, options);
}

class WarpScanLargeIndex : public course::GpuTest {};

TEST_F(WarpScanLargeIndex, ScansSegmentsPastTwoToThe31) {
  const std::int64_t n = kLargeN;
  COURSE_SKIP_UNLESS_GPU_MEMORY(2 * static_cast<std::size_t>(n) * sizeof(float));  // 16 GiB
  const course::Pattern p{course::seed_for(905), -1.0, 1.0};
  DeviceBuffer<float> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  course::fill_pattern(x.data(), n, p);
  course::poison_on_device(y.data(), n);
  d03::segment_scan(x.data(), y.data(), n);
  sync();
  const auto at = course::large_sample_indices(n, course::seed_for(906));
  std::vector<double> want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    for (std::int64_t i = at[k] / d03::kSegment * d03::kSegment; i <= at[k]; ++i)
      want[k] += course::pattern_double_value<float>(p, i);
  course::CompareOptions options;
  options.what =
      "inclusive scan per segment over n = 2^31 + 2^24 + 17 elements (TODO d03.2d: the "
      "index in 64 bits)";
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data(), n, at), want, at, options);
}

class FastGeluLargeIndex : public course::GpuTest {};

TEST_F(FastGeluLargeIndex, ComputesElementsPastTwoToThe31) {
  // bfloat16 (8 x 2^31 elements per 16-byte vector path, 4 GiB per array), then the same with
  // pointers one element past a 16-byte boundary (the element-by-element path).
  using T = course::bfloat16;
  const std::int64_t n = kLargeN;
  COURSE_SKIP_UNLESS_GPU_MEMORY(2 * static_cast<std::size_t>(n + 1) * sizeof(T));  // 8 GiB
  const course::Pattern p{course::seed_for(907), -6.0, 6.0};
  DeviceBuffer<T> x(static_cast<std::size_t>(n + 1)), y(static_cast<std::size_t>(n + 1));
  const auto at = course::large_sample_indices(n, course::seed_for(908));
  for (const std::int64_t offset : {0, 1}) {
    course::fill_pattern(x.data() + offset, n, p);
    course::poison_on_device(y.data(), n + 1);
    d03::gelu_fast(x.data() + offset, y.data() + offset, n);
    sync();
    std::vector<double> want(at.size());
    for (std::size_t k = 0; k < at.size(); ++k)
      want[k] = ref::gelu_tanh(course::pattern_double_value<T>(p, at[k]));
    course::CompareOptions options;
    options.what = std::string("gelu_fast<bfloat16> over n = 2^31 + 2^24 + 17 elements") +
                   (offset ? " at pointers not 16-byte aligned" : "") +
                   " (TODO d03.4: the index in 64 bits)";
    COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data() + offset, n, at), want, at, options);
    if (HasFailure()) return;
  }
}

// =============================================================================================
// Rounding (FastGeluRounding): the fast GeLU computes in float32 and must round to the NEAREST
// bfloat16 (course::from_float). Truncating is off by at most one bfloat16 step, which the
// tolerance allows; course::check_rounding asks for the exact value wherever tanh.approx's error
// (0.5 |x| 2^-10.987, kTanhApproxTolerance), a few float32 roundings and the final rounding
// leave no doubt. float16 is left out: tanh.approx's error is as large as half a float16 step,
// so almost no element would be certain.
class FastGeluRounding : public course::GpuTest {};

TEST_F(FastGeluRounding, Bfloat16RoundsTheFloat32ResultToTheNearestValue) {
  using T = course::bfloat16;
  // Mostly positive x, where tanh.approx's error is small next to y (y >= x / 2): most elements
  // are then clear of a rounding midpoint.
  const auto x = course::random_uniform<T>(8 * 4099 + 5, course::seed_for(909), -1.0, 6.0);
  const auto got = run_gelu_fast(x);
  const auto xd = course::as_doubles(x);
  const auto want = ref::gelu_tanh(xd);
  course::CompareOptions options;
  options.what = "gelu_fast<bfloat16> output (TODO d03.4)";
  COURSE_EXPECT_MATCH(got, want, options);
  if (HasFailure()) return;
  std::vector<double> bound(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    bound[i] = 0.5 * std::fabs(xd[i]) * kTanhApproxTolerance + 16 * 0x1p-24 * std::fabs(want[i]) +
               std::fabs(xd[i]) * 0x1p-22;
  const course::RoundingCheck c = course::check_rounding(got, want, bound, options);
  EXPECT_TRUE(c.ok) << c.message << course::seed_hint();
  EXPECT_GT(c.checked, x.size() / 2) << "only " << c.checked << " of " << x.size()
                                     << " elements could be checked: the test's bound is too wide";
}

}  // namespace
