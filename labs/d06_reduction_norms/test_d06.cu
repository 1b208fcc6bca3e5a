// Day 6 tests. Each suite is one exercise of README.md (a suite named ExerciseSomething counts
// toward Exercise); each test runs in its own process. Outputs are poisoned before every run, so
// an element the kernel never wrote is reported as such, and guard elements around every output
// must keep their poison.
//
// What a kernel of this day can get wrong, and the test that sees it:
//   block_sum reads the warp sums before every warp wrote them (no barrier)
//                                      racecheck; RowSum.*, DeterministicSum.*
//   block_sum adds slots past the last warp, or another row's slots (blockDim.y > 1)
//                                      RowSum.* (96 threads), RmsNorm.* (257 short rows)
//   rows not a multiple of the block or the vector width (1, 31, 33, 1000, 4097, 100003)
//                                      RowSum.*, RmsNorm.*, FusedAddRmsNorm.*, LayerNorm.*,
//                                      OnlineSoftmax.*
//   the head before the first 16-byte boundary or the tail of the whole-array sums skipped
//                                      DeterministicSum.* and AtomicSum.* (_misaligned, n 31, 33)
//   the grid-stride loop of the sums (more vectors than threads, unrolled remainder)
//                                      DeterministicSum.* (n = 2^24 + 7)
//   a float atomic or a race in the "deterministic" sum, or partials added to, not written
//                                      DeterministicSumRuns.GiveBitwiseIdentical...
//   *out not zeroed before the atomic adds; an empty array not summed to 0
//                                      AtomicSum.* (out poisoned first), *SumLimits.*
//   NaN or infinity dropped or replaced  *EdgeCases.NaN*, DeterministicSumEdgeCases.Propagates*
//   a single float accumulator over millions of values (accuracy)
//                                      DeterministicSumEdgeCases.StaysAccurate*, RowSumEdgeCases.*
//   eps outside the square root, 0 / 0 on an all-zero row
//                                      RmsNormEdgeCases.SmallInputs*, RmsNormEdgeCases.AllZero*
//   the fused kernel normalises the rounded residual, or never writes the residual back
//                                      FusedAddRmsNormPrecision.*, FusedAddRmsNorm.*
//   y == x (written over its input) read after it was written
//                                      FusedAddRmsNormEdgeCases.WritesTheOutputOverTheInput*
//   LayerNorm's variance as E[x^2] - mean^2, a NaN variance clamped away, an empty Welford
//   side merged (0 / 0)               LayerNormStatistics.*, LayerNormEdgeCases.*, LayerNorm.*
//   mean/rstd written when their pointers are null, or not written
//                                      LayerNormEdgeCases.SkipsTheStatistics*, LayerNorm.*
//   online softmax without rescaling the running sum, -inf rows, exp overflow
//                                      OnlineSoftmaxEdgeCases.*
//   16-bit outputs truncated instead of rounded to nearest   *Rounding.*
//   16-byte loads on misaligned pointers or odd row lengths (or the tail of a row dropped)
//                                      *EdgeCases.HandlesPointersNotAlignedTo16Bytes, 4097 shapes
//   a store past the end of a row or of the output   expect_guards_untouched in every test;
//                                      memcheck
//   row * hidden or blockIdx.x * cols in 32 bits      *LargeIndex.* (2^31 + elements)
//   the largest split (kMaxHidden one element at a time: 16 per thread of 1024)
//                                      RmsNormLimits.*
//   the launchers' promises (block sizes, 1 <= hidden <= kMaxHidden, cols >= 1, rows >= 0,
//   overlapping buffers, n = 0 and rows = 0 with null pointers)   *Limits.*
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "course/buffer.h"
#include "course/large.h"
#include "course/random.h"
#include "course/reference/norm.h"
#include "course/reference/softmax.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::half;
namespace ref = course::reference;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string hex_bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", b);
  return buf;
}

// ---------------------------------------------------------------- dtypes
enum class Dtype { f32, f16, bf16 };
const Dtype kDtypes[] = {Dtype::f32, Dtype::f16, Dtype::bf16};

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::f32:
      return "f32";
    case Dtype::f16:
      return "f16";
    case Dtype::bf16:
      return "bf16";
  }
  return "?";
}

// Calls f(T{}) with the element type named by d: one test body, three dtypes.
template <class F>
void with_dtype(Dtype d, F&& f) {
  switch (d) {
    case Dtype::f32:
      f(float{});
      return;
    case Dtype::f16:
      f(half{});
      return;
    case Dtype::bf16:
      f(bfloat16{});
      return;
  }
}

// n values of T from values given as float64 (rounded to T, as the GPU will see them).
template <class T>
std::vector<T> to_dtype(const std::vector<double>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = course::from_double<T>(v[i]);
  return out;
}

using course::expect_guards_untouched;
using course::Guarded;

void synchronize() { COURSE_CUDA_CHECK(cudaDeviceSynchronize()); }

// ---------------------------------------------------------------- how close a float sum must be
// A float32 sum cannot be held to a tolerance relative to |sum|: when positive and negative
// values cancel, the sum is small while the rounding errors made on the way are not. The
// classical bound (Higham, Accuracy and Stability of Numerical Algorithms, §4) for a sum
// computed as each thread adding L values in order and then a tree of depth D is
//   |computed - exact| <= (L + D) u sum|x|,   u = 2^-24 (float32's unit roundoff),
// so the error is measured against sum|x|. kSumErrorUnits = 256 admits any reasonable GPU
// reduction (a few hundred values per thread, then trees over warps, blocks and partials: real
// errors are far smaller, as they are random and mostly cancel). A single float accumulator
// running over millions of values is not a reasonable reduction, and fails.
constexpr double kFloatUnitRoundoff = 1.0 / (1 << 24);
constexpr double kSumErrorUnits = 256;

// Empty when `got` is close enough to `want` (the exact sum of values whose absolute values
// add up to abs_sum); otherwise what is wrong, in words.
std::string sum_problem(float got, double want, double abs_sum, const std::string& what) {
  if (course::DType<float>::is_poison(got))
    return what +
           " was never written (it still holds the poison value): the kernel did not "
           "store its result. Is the TODO still there?";
  if (std::isnan(want)) {
    if (std::isnan(got)) return "";
    return what + " is " + number(got) +
           " but an input is NaN (or +inf and -inf meet), so the "
           "sum must be NaN: additions propagate NaN by themselves, so do not skip values "
           "or replace them";
  }
  if (std::isinf(want)) {
    if (got == want) return "";
    return what + " is " + number(got) + " but the inputs include " + number(want) +
           " and the sum must be " + number(want);
  }
  if (!std::isfinite(got))
    return what + " is " + number(got) + " where the exact sum is " + number(want) +
           ": look for a read past the end of x, an uninitialised shared-memory slot, or an "
           "output that was not set to 0 before the blocks added into it";
  const double error = std::fabs(static_cast<double>(got) - want);
  const double allowed = kSumErrorUnits * kFloatUnitRoundoff * abs_sum;
  if (error <= allowed) return "";
  return what + ": expected " + number(want) + ", got " + number(got) + " (error " + number(error) +
         ", allowed " + number(allowed) +
         " = 256 u sum|x|). Values were skipped or counted twice "
         "(check the first elements before the 16-byte boundary, the tail, the grid-stride loop "
         "and which warps' sums the block adds), or the accumulation order loses precision.";
}

// ================================================================ Exercise 1: block reduction

struct RowSumCase {
  std::int64_t cols;
  int block_threads;
};

class RowSum : public course::GpuTest, public ::testing::WithParamInterface<RowSumCase> {};

// Sums of every row, checked one by one; reports up to three bad rows.
void expect_row_sums(const std::vector<float>& x, std::int64_t rows, std::int64_t cols,
                     int block_threads) {
  DeviceBuffer<float> dx(x);
  Guarded<float> sums(static_cast<std::size_t>(rows), 0);
  d06::row_sums(dx.data(), sums.data(), rows, cols, block_threads);
  synchronize();
  const auto got = sums.read_back();
  const auto xd = course::as_doubles(x);
  const auto want =
      ref::row_sums(xd, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
  int reported = 0;
  for (std::int64_t r = 0; r < rows && reported < 3; ++r) {
    const std::vector<double> row(xd.begin() + r * cols, xd.begin() + (r + 1) * cols);
    const std::string problem =
        sum_problem(got[r], want[r], ref::sum_abs(row),
                    "sums[" + std::to_string(r) + "] (row " + std::to_string(r) + " of " +
                        std::to_string(rows) + ", " + std::to_string(cols) +
                        " columns, blocks of " + std::to_string(block_threads) + " threads)");
    if (!problem.empty()) {
      ADD_FAILURE() << problem << course::seed_hint();
      ++reported;
    }
  }
  expect_guards_untouched(sums, "sums");
}

TEST_P(RowSum, MatchesTheReferenceForEveryRowLengthAndBlockSize) {
  const RowSumCase c = GetParam();
  const std::int64_t rows = 7;
  expect_row_sums(course::random_uniform<float>(rows * c.cols, course::seed_for(1)), rows, c.cols,
                  c.block_threads);
}

std::vector<RowSumCase> row_sum_cases() {
  std::vector<RowSumCase> cases;
  for (std::int64_t cols : {1, 31, 33, 1000, 4097, 100003})
    for (int block : {32, 96, 256, 1024}) cases.push_back({cols, block});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Shapes, RowSum, ::testing::ValuesIn(row_sum_cases()),
                         [](const auto& info) {
                           return "cols" + std::to_string(info.param.cols) + "_block" +
                                  std::to_string(info.param.block_threads);
                         });

class RowSumEdgeCases : public course::GpuTest {};

TEST_F(RowSumEdgeCases, NaNInARowMakesOnlyThatRowsSumNaN) {
  const std::int64_t rows = 5, cols = 1000;
  auto x = course::random_uniform<float>(rows * cols, course::seed_for(2));
  x[2 * cols + 517] = std::numeric_limits<float>::quiet_NaN();
  expect_row_sums(x, rows, cols, 256);
}

TEST_F(RowSumEdgeCases, LargeMagnitudesAreSummedAccurately) {
  const std::int64_t rows = 5, cols = 4097;
  expect_row_sums(course::random_uniform<float>(rows * cols, course::seed_for(3), -3e30, 3e30),
                  rows, cols, 256);
}

// The launchers' promises at their edges (lab.h): what is allowed works, what is not is refused
// with course::InvalidArgument before anything reaches the GPU, and nothing to do (rows = 0,
// n = 0) launches nothing even with null pointers. Each *Limits test first checks results at
// the allowed edge, so that it fails (with the result's message) until the kernel is written.
const char* const kLimitHint =
    "The launchers in kernel.cu check their arguments with course::require before launching: "
    "keep those checks as they are given.";

class RowSumLimits : public course::GpuTest {};

TEST_F(RowSumLimits, TakesBlocksOf32To1024ThreadsAndRefusesTheRest) {
  const std::int64_t rows = 3, cols = 100;
  const auto x = course::random_uniform<float>(rows * cols, course::seed_for(4));
  for (int block : {32, 1024}) expect_row_sums(x, rows, cols, block);
  if (HasFailure()) return;
  DeviceBuffer<float> dx(x), sums(rows);
  for (int block : {0, 16, 48, 1056}) {
    SCOPED_TRACE("row_sums with block_threads = " + std::to_string(block) +
                 ": lab.h allows only multiples of 32 in [32, 1024]. " + kLimitHint);
    COURSE_EXPECT_THROW(d06::row_sums(dx.data(), sums.data(), rows, cols, block),
                        course::InvalidArgument);
  }
  {
    SCOPED_TRACE(std::string("row_sums with cols = 0. ") + kLimitHint);
    COURSE_EXPECT_THROW(d06::row_sums(dx.data(), sums.data(), rows, 0, 256),
                        course::InvalidArgument);
  }
  SCOPED_TRACE("row_sums with rows = 0 has nothing to do and must not look at its pointers");
  COURSE_EXPECT_NO_THROW(d06::row_sums(nullptr, nullptr, 0, cols, 256));
}

// ================================================================ Exercise 2: deterministic sum

struct SumCase {
  std::int64_t n;
  int offset;  // elements: 1 makes x not 16-byte aligned
};

const std::int64_t kSumSizes[] = {1, 31, 33, 1021, 65537, 1000003, (1 << 24) + 7};

std::vector<SumCase> sum_cases() {
  std::vector<SumCase> cases;
  for (std::int64_t n : kSumSizes)
    for (int offset : {0, 1}) cases.push_back({n, offset});
  return cases;
}

std::string sum_case_name(const ::testing::TestParamInfo<SumCase>& info) {
  return "n" + std::to_string(info.param.n) + (info.param.offset ? "_misaligned" : "");
}

// Runs sum_two_pass (or sum_atomic) once on x placed `offset` elements into its buffer.
struct SumRun {
  Guarded<float> x;
  Guarded<float> out{1, 0};
  DeviceBuffer<float> partials{static_cast<std::size_t>(d06::kSumMaxPartials)};
  SumRun(const std::vector<float>& host, int offset) : x(host, static_cast<std::size_t>(offset)) {}

  float two_pass() {
    out.buffer.poison();
    d06::sum_two_pass(x.data(), static_cast<std::int64_t>(x.size), partials.data(), out.data());
    synchronize();
    return out.read_back()[0];
  }
  float atomic() {
    out.buffer.poison();
    d06::sum_atomic(x.data(), static_cast<std::int64_t>(x.size), out.data());
    synchronize();
    return out.read_back()[0];
  }
};

void expect_sum(float got, const std::vector<float>& x, const std::string& what) {
  const auto xd = course::as_doubles(x);
  const std::string problem = sum_problem(got, ref::sum(xd), ref::sum_abs(xd), what);
  if (!problem.empty()) ADD_FAILURE() << problem << course::seed_hint();
}

class DeterministicSum : public course::GpuTest, public ::testing::WithParamInterface<SumCase> {};

TEST_P(DeterministicSum, MatchesTheReferenceForEverySize) {
  const SumCase c = GetParam();
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(c.n), course::seed_for(11));
  SumRun run(x, c.offset);
  run.partials.poison();  // what the scratch space held before must not matter
  expect_sum(run.two_pass(), x, "the sum of " + std::to_string(c.n) + " floats");
  expect_guards_untouched(run.out, "out (one float)");
}
INSTANTIATE_TEST_SUITE_P(Sizes, DeterministicSum, ::testing::ValuesIn(sum_cases()), sum_case_name);

class DeterministicSumRuns : public course::GpuTest {};

TEST_F(DeterministicSumRuns, GiveBitwiseIdenticalResultsWhateverThePartialsHeld) {
  const std::int64_t n = (1 << 24) + 7;
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(12));
  SumRun run(x, 0);
  run.partials.poison();
  const float first = run.two_pass();
  const std::string problem =
      sum_problem(first, ref::sum(course::as_doubles(x)), ref::sum_abs(course::as_doubles(x)),
                  "the first run's sum");
  ASSERT_TRUE(problem.empty()) << problem << course::seed_hint();
  constexpr int kRuns = 10;
  for (int k = 1; k < kRuns; ++k) {
    // The scratch space holds, in turn, NaNs, zeros and the previous run's partials.
    if (k % 3 == 1) run.partials.poison();
    if (k % 3 == 2) run.partials.fill(0.0f);
    const float again = run.two_pass();
    ASSERT_EQ(hex_bits(again), hex_bits(first))
        << "run " << k << " gave " << number(again) << " but run 0 gave " << number(first)
        << " from the same input: the result depends on timing or on what `partials` held. A "
           "float atomicAdd in the result path, a race on shared memory, or a partial sum that "
           "is added to instead of written makes it so (lesson §3).";
  }
}

class DeterministicSumEdgeCases : public course::GpuTest {};

TEST_F(DeterministicSumEdgeCases, PropagatesNaNAndInfinity) {
  const std::int64_t n = 100003;
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  auto base = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(13));
  auto with_nan = base;
  with_nan[77777] = nan;
  expect_sum(SumRun(with_nan, 0).two_pass(), with_nan, "the sum with a NaN at index 77777");
  auto with_inf = base;
  with_inf[n - 1] = inf;
  expect_sum(SumRun(with_inf, 0).two_pass(), with_inf, "the sum with +inf as the last element");
  auto with_both = with_inf;
  with_both[3] = -inf;
  expect_sum(SumRun(with_both, 0).two_pass(), with_both, "the sum holding both +inf and -inf");
}

TEST_F(DeterministicSumEdgeCases, StaysAccurateForLargeMagnitudes) {
  const auto huge = course::random_uniform<float>(1000003, course::seed_for(14), -3e30, 3e30);
  expect_sum(SumRun(huge, 0).two_pass(), huge, "the sum of values in [-3e30, 3e30]");
  // All positive, 2^24 of them: a running float total passes 2^24 early on, and after that
  // adding a value near 1.5e6 rounds off more than a reduction tree ever does.
  const auto positive =
      course::random_uniform<float>((1 << 24) + 7, course::seed_for(15), 1e6, 2e6);
  expect_sum(SumRun(positive, 0).two_pass(), positive, "the sum of 2^24 + 7 values in [1e6, 2e6]");
}

// ================================================================ Exercise 3: atomic sum

class AtomicSum : public course::GpuTest, public ::testing::WithParamInterface<SumCase> {};

TEST_P(AtomicSum, IsAccurateThoughNotReproducible) {
  const SumCase c = GetParam();
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(c.n), course::seed_for(21));
  SumRun run(x, c.offset);
  // out holds NaN before the call: the launcher must set it to 0 before the blocks add to it.
  expect_sum(run.atomic(), x, "the atomic sum of " + std::to_string(c.n) + " floats");
  expect_guards_untouched(run.out, "out (one float)");
}
INSTANTIATE_TEST_SUITE_P(Sizes, AtomicSum, ::testing::ValuesIn(sum_cases()), sum_case_name);

// One element, then none: the sum of an empty array is 0, written over the poison in *out (lab.h:
// *out = x[0] + ... + x[n - 1]); n < 0 and a null out are refused. run(SumRun&) sums a SumRun;
// call(x, n, out) calls the launcher itself.
template <class Run, class Call>
void expect_sum_limits(Run run, Call call, const std::string& who) {
  const auto one = course::random_uniform<float>(1, course::seed_for(16), 1.0, 2.0);
  SumRun single(one, 0);
  expect_sum(run(single), one, who + " of one float");
  if (::testing::Test::HasFailure()) return;
  SumRun empty(std::vector<float>{}, 0);
  const float zero = run(empty);
  EXPECT_EQ(hex_bits(zero), hex_bits(0.0f))
      << who << " of n = 0 elements gave " << number(zero)
      << (course::DType<float>::is_poison(zero) ? " (the poison: *out was never written)" : "")
      << " instead of 0: with nothing to add, the launcher must still set *out to 0";
  SCOPED_TRACE(who + " with n = -1, or with a null out. " + kLimitHint);
  COURSE_EXPECT_THROW(call(single.x.data(), -1, single.out.data()), course::InvalidArgument);
  COURSE_EXPECT_THROW(call(single.x.data(), 1, nullptr), course::InvalidArgument);
}

class DeterministicSumLimits : public course::GpuTest {};

TEST_F(DeterministicSumLimits, SumsOneElementAndAnEmptyArray) {
  DeviceBuffer<float> partials(static_cast<std::size_t>(d06::kSumMaxPartials));
  expect_sum_limits([](SumRun& r) { return r.two_pass(); },
                    [&](const float* x, std::int64_t n, float* out) {
                      d06::sum_two_pass(x, n, partials.data(), out);
                    },
                    "sum_two_pass");
}

class AtomicSumLimits : public course::GpuTest {};

TEST_F(AtomicSumLimits, SumsOneElementAndAnEmptyArray) {
  expect_sum_limits([](SumRun& r) { return r.atomic(); },
                    [](const float* x, std::int64_t n, float* out) { d06::sum_atomic(x, n, out); },
                    "sum_atomic");
}

// ================================================================ Exercises 4-6: shapes
struct RowCase {
  Dtype dtype;
  std::int64_t rows, hidden;
};

// Hidden sizes from one element to the largest, odd ones (not a multiple of the vector width)
// included; short rows get many rows (one warp per row, several rows per block).
const std::int64_t kHiddens[] = {1, 33, 128, 1000, 4096, 4097, 16384};

std::vector<RowCase> row_cases() {
  std::vector<RowCase> cases;
  for (Dtype d : kDtypes)
    for (std::int64_t hidden : kHiddens) cases.push_back({d, hidden <= 128 ? 257 : 37, hidden});
  return cases;
}

std::string row_case_name(const ::testing::TestParamInfo<RowCase>& info) {
  return std::string(dtype_name(info.param.dtype)) + "_" + std::to_string(info.param.rows) + "x" +
         std::to_string(info.param.hidden);
}

std::string dtype_param_name(const ::testing::TestParamInfo<Dtype>& info) {
  return dtype_name(info.param);
}

std::string shape_text(std::int64_t rows, std::int64_t hidden) {
  return " [" + std::to_string(rows) + " x " + std::to_string(hidden) + "]";
}

// ================================================================ Exercise 4: RMSNorm

constexpr float kRmsEps = 1e-6f;

template <class T>
void expect_rmsnorm(const std::vector<T>& x, const std::vector<T>& w, std::int64_t rows,
                    std::int64_t hidden, std::size_t offset = 0) {
  Guarded<T> dx(x, offset), dw(w, offset), dy(x.size(), offset);
  d06::rmsnorm(dx.data(), dw.data(), dy.data(), rows, hidden, kRmsEps);
  synchronize();
  course::CompareOptions o;
  o.cols = hidden;
  o.what = std::string("y") + shape_text(rows, hidden);
  COURSE_EXPECT_MATCH(
      dy.read_back(),
      ref::rmsnorm(course::as_doubles(x), course::as_doubles(w), rows, hidden, kRmsEps), o);
  expect_guards_untouched(dy, "y");
}

template <class T>
void rmsnorm_on_random(std::int64_t rows, std::int64_t hidden, std::size_t offset = 0,
                       double scale = 2.0) {
  expect_rmsnorm(course::random_uniform<T>(rows * hidden, course::seed_for(31), -scale, scale),
                 course::random_uniform<T>(hidden, course::seed_for(32), -2.0, 2.0), rows, hidden,
                 offset);
}

class RmsNorm : public course::GpuTest, public ::testing::WithParamInterface<RowCase> {};

TEST_P(RmsNorm, MatchesTheReference) {
  const RowCase c = GetParam();
  with_dtype(c.dtype, [&](auto tag) { rmsnorm_on_random<decltype(tag)>(c.rows, c.hidden); });
}
INSTANTIATE_TEST_SUITE_P(Shapes, RmsNorm, ::testing::ValuesIn(row_cases()), row_case_name);

class RmsNormEdgeCases : public course::GpuTest, public ::testing::WithParamInterface<Dtype> {};

TEST_P(RmsNormEdgeCases, HandlesPointersNotAlignedTo16Bytes) {
  // Every pointer one element past a 16-byte boundary: the 16-byte loads cannot be used.
  with_dtype(GetParam(), [&](auto tag) { rmsnorm_on_random<decltype(tag)>(37, 4096, 1); });
}

TEST_P(RmsNormEdgeCases, NaNInARowMakesOnlyThatRowNaN) {
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    auto x = course::random_uniform<T>(5 * 1000, course::seed_for(33), -2.0, 2.0);
    x[2 * 1000 + 517] = course::from_double<T>(kNaN);
    expect_rmsnorm(x, course::random_uniform<T>(1000, course::seed_for(34), -2.0, 2.0), 5, 1000);
  });
}

TEST_P(RmsNormEdgeCases, AllZeroRowGivesZerosNotNaN) {
  // Row 1 holds +0 and -0: mean(x^2) = 0, and only eps keeps 0 / sqrt(0) from being NaN.
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    const std::int64_t rows = 3, hidden = 4096;
    auto x = course::random_uniform<T>(rows * hidden, course::seed_for(35), -2.0, 2.0);
    for (std::int64_t c = 0; c < hidden; ++c)
      x[hidden + c] = course::from_double<T>(c % 2 ? -0.0 : 0.0);
    expect_rmsnorm(x, course::random_uniform<T>(hidden, course::seed_for(36), -2.0, 2.0), rows,
                   hidden);
  });
}

TEST_P(RmsNormEdgeCases, SmallInputsShowThatEpsIsInsideTheSquareRoot) {
  // |x| < 1e-3: mean(x^2) ~ 3e-7 is comparable to eps = 1e-6, so 1/sqrt(mean + eps) and
  // 1/(sqrt(mean) + eps) differ by a factor of about two.
  with_dtype(GetParam(), [&](auto tag) { rmsnorm_on_random<decltype(tag)>(8, 4096, 0, 1e-3); });
}

TEST_P(RmsNormEdgeCases, HandlesLargeMagnitudes) {
  // As large as float32 squares allow (x^2 summed over a row must stay below 3.4e38) or, for
  // float16, as large as the type holds.
  const Dtype d = GetParam();
  with_dtype(d, [&](auto tag) {
    rmsnorm_on_random<decltype(tag)>(8, 4096, 0, d == Dtype::f16 ? 6e4 : 1e15);
  });
}
INSTANTIATE_TEST_SUITE_P(Dtypes, RmsNormEdgeCases, ::testing::ValuesIn(kDtypes), dtype_param_name);

// Every row-wise launcher refuses hidden outside [1, kMaxHidden] and rows < 0 (lab.h).
// call(rows, hidden) calls it on buffers large enough for 2 rows of kMaxHidden + 1 elements, so
// that a launcher that forgot a check still touches only its own memory.
constexpr std::int64_t kLimitBufferElements = 2 * (d06::kMaxHidden + 1);

void expect_refuses_bad_rows(const std::string& who,
                             const std::function<void(std::int64_t, std::int64_t)>& call) {
  for (const std::int64_t hidden : {std::int64_t{0}, d06::kMaxHidden + 1}) {
    SCOPED_TRACE(who + " with hidden = " + std::to_string(hidden) +
                 ": lab.h allows 1 <= hidden <= kMaxHidden = " + std::to_string(d06::kMaxHidden) +
                 ". " + kLimitHint);
    COURSE_EXPECT_THROW(call(2, hidden), course::InvalidArgument);
  }
  SCOPED_TRACE(who + " with rows = -1. " + kLimitHint);
  COURSE_EXPECT_THROW(call(-1, 128), course::InvalidArgument);
}

class RmsNormLimits : public course::GpuTest {};

TEST_F(RmsNormLimits, TakesHiddenFrom1ToKMaxHiddenAndRefusesTheRest) {
  // hidden = 1, and hidden = kMaxHidden with pointers off the 16-byte grid: one element at a
  // time, the largest split there is (16 elements in each of 1024 threads).
  rmsnorm_on_random<float>(3, 1);
  rmsnorm_on_random<bfloat16>(2, d06::kMaxHidden, 1);
  if (HasFailure()) return;
  DeviceBuffer<float> x(kLimitBufferElements), w(kLimitBufferElements), y(kLimitBufferElements);
  expect_refuses_bad_rows("rmsnorm", [&](std::int64_t rows, std::int64_t hidden) {
    d06::rmsnorm(x.data(), w.data(), y.data(), rows, hidden, kRmsEps);
  });
  SCOPED_TRACE("rmsnorm with rows = 0 has nothing to do and must not look at its pointers");
  const float* none = nullptr;
  COURSE_EXPECT_NO_THROW(d06::rmsnorm(none, none, nullptr, 0, 4096, kRmsEps));
}

// ================================================================ Exercise 5: fused add + RMSNorm

template <class T>
void expect_fused_add_rmsnorm(const std::vector<T>& x, const std::vector<T>& residual,
                              const std::vector<T>& w, std::int64_t rows, std::int64_t hidden,
                              std::size_t offset, bool in_place) {
  Guarded<T> dx(x, offset), dres(residual, offset), dw(w, offset), dy(x.size(), offset);
  T* y = in_place ? dx.data() : dy.data();
  d06::fused_add_rmsnorm(dx.data(), dres.data(), dw.data(), y, rows, hidden, kRmsEps);
  synchronize();
  const auto want = ref::fused_add_rmsnorm(course::as_doubles(x), course::as_doubles(residual),
                                           course::as_doubles(w), rows, hidden, kRmsEps);
  course::CompareOptions o;
  o.cols = hidden;
  o.what = "residual" + shape_text(rows, hidden) + " (must be updated in place to x + residual)";
  const auto residual_after = dres.read_back();
  if (std::memcmp(residual_after.data(), residual.data(), residual.size() * sizeof(T)) == 0)
    ADD_FAILURE() << "residual still holds exactly its input values: the kernel must write "
                     "x + residual back into it (TODO d06.5)";
  else
    COURSE_EXPECT_MATCH(residual_after, want.residual, o);
  expect_guards_untouched(dres, "residual");
  o.what = std::string(in_place ? "y, written over x," : "y") + shape_text(rows, hidden) +
           " (rmsnorm of the new residual)";
  const auto y_after = in_place ? dx.read_back() : dy.read_back();
  if (in_place && std::memcmp(y_after.data(), x.data(), x.size() * sizeof(T)) == 0)
    ADD_FAILURE() << "y is x here, and x still holds exactly its input values: the output was "
                     "never written over it";
  else
    COURSE_EXPECT_MATCH(y_after, want.y, o);
  expect_guards_untouched(in_place ? dx : dy, in_place ? "x (= y)" : "y");
  if (!in_place) {
    const auto x_after = dx.read_back();
    EXPECT_EQ(0, std::memcmp(x_after.data(), x.data(), x.size() * sizeof(T)))
        << "x was modified: fused_add_rmsnorm only reads x (the sum goes to residual, the "
           "output to y)";
  }
}

template <class T>
void fused_on_random(std::int64_t rows, std::int64_t hidden, std::size_t offset, bool in_place) {
  expect_fused_add_rmsnorm(course::random_uniform<T>(rows * hidden, course::seed_for(41)),
                           course::random_uniform<T>(rows * hidden, course::seed_for(42)),
                           course::random_uniform<T>(hidden, course::seed_for(43), -2.0, 2.0), rows,
                           hidden, offset, in_place);
}

class FusedAddRmsNorm : public course::GpuTest, public ::testing::WithParamInterface<RowCase> {};

TEST_P(FusedAddRmsNorm, UpdatesTheResidualInPlaceAndNormalisesIt) {
  const RowCase c = GetParam();
  with_dtype(c.dtype,
             [&](auto tag) { fused_on_random<decltype(tag)>(c.rows, c.hidden, 0, false); });
}
INSTANTIATE_TEST_SUITE_P(Shapes, FusedAddRmsNorm, ::testing::ValuesIn(row_cases()), row_case_name);

class FusedAddRmsNormEdgeCases : public course::GpuTest,
                                 public ::testing::WithParamInterface<Dtype> {};

TEST_P(FusedAddRmsNormEdgeCases, WritesTheOutputOverTheInputLikeVllm) {
  with_dtype(GetParam(), [&](auto tag) {
    fused_on_random<decltype(tag)>(37, 4096, 0, true);
    fused_on_random<decltype(tag)>(37, 4097, 0, true);
  });
}

TEST_P(FusedAddRmsNormEdgeCases, HandlesPointersNotAlignedTo16Bytes) {
  with_dtype(GetParam(), [&](auto tag) { fused_on_random<decltype(tag)>(37, 4096, 1, false); });
}

TEST_P(FusedAddRmsNormEdgeCases, NaNInXSpoilsOneResidualElementAndTheWholeRowOfY) {
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    auto x = course::random_uniform<T>(5 * 1000, course::seed_for(44));
    x[3 * 1000 + 5] = course::from_double<T>(kNaN);
    expect_fused_add_rmsnorm(x, course::random_uniform<T>(5 * 1000, course::seed_for(45)),
                             course::random_uniform<T>(1000, course::seed_for(46), -2.0, 2.0), 5,
                             1000, 0, false);
  });
}
INSTANTIATE_TEST_SUITE_P(Dtypes, FusedAddRmsNormEdgeCases, ::testing::ValuesIn(kDtypes),
                         dtype_param_name);

class FusedAddRmsNormLimits : public course::GpuTest {};

TEST_F(FusedAddRmsNormLimits, TakesHiddenFrom1ToKMaxHiddenAndRefusesOverlaps) {
  fused_on_random<float>(3, 1, 0, false);
  fused_on_random<bfloat16>(2, d06::kMaxHidden, 1, true);
  if (HasFailure()) return;
  DeviceBuffer<float> x(kLimitBufferElements), r(kLimitBufferElements), w(kLimitBufferElements),
      y(kLimitBufferElements);
  expect_refuses_bad_rows("fused_add_rmsnorm", [&](std::int64_t rows, std::int64_t hidden) {
    d06::fused_add_rmsnorm(x.data(), r.data(), w.data(), y.data(), rows, hidden, kRmsEps);
  });
  // y may be x; the residual may overlap nothing (lab.h): it is read and written by the same
  // threads that write y, and a shared element would be read after another thread wrote it.
  const std::tuple<const char*, float*, float*> overlapping[] = {
      {"residual == y", y.data(), y.data()},
      {"residual == x", x.data(), y.data()},
      {"residual starting 100 elements into x", x.data() + 100, y.data()}};
  for (const auto& [what, residual, out] : overlapping) {
    SCOPED_TRACE(std::string("fused_add_rmsnorm with ") + what + ": lab.h forbids it. " +
                 kLimitHint);
    COURSE_EXPECT_THROW(d06::fused_add_rmsnorm(x.data(), residual, w.data(), out, 4, 1000, kRmsEps),
                        course::InvalidArgument);
  }
  SCOPED_TRACE(
      "fused_add_rmsnorm with rows = 0 has nothing to do and must not look at its pointers");
  const float* none = nullptr;
  COURSE_EXPECT_NO_THROW(d06::fused_add_rmsnorm(none, nullptr, none, nullptr, 0, 4096, kRmsEps));
}

// ================================================================ Exercise 6: LayerNorm (Welford)

constexpr float kLayerNormEps = 1e-5f;

// Rows with different means: x[r, c] = offset_r + U(-1, 1), offset_r in [-2, 2].
std::vector<double> rows_with_offsets(std::int64_t rows, std::int64_t hidden, std::uint64_t seed) {
  const auto noise = course::random_uniform<double>(rows * hidden, seed);
  const auto offsets = course::random_uniform<double>(rows, seed + 1, -2.0, 2.0);
  std::vector<double> x(noise.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = offsets[i / hidden] + noise[i];
  return x;
}

struct LayerNormCheck {
  bool statistics = true;                     // pass mean/rstd pointers (else null)
  course::Tolerance y_tolerance{-1.0, -1.0};  // negative: the dtype's default
};

template <class T>
void expect_layernorm(const std::vector<T>& x, std::int64_t rows, std::int64_t hidden,
                      std::size_t offset = 0, LayerNormCheck check = {}) {
  const auto gamma = course::random_uniform<T>(hidden, course::seed_for(51), -2.0, 2.0);
  const auto beta = course::random_uniform<T>(hidden, course::seed_for(52), -1.0, 1.0);
  Guarded<T> dx(x, offset), dg(gamma, offset), db(beta, offset), dy(x.size(), offset);
  Guarded<float> mean(rows, 0), rstd(rows, 0);
  d06::layernorm(dx.data(), dg.data(), db.data(), dy.data(),
                 check.statistics ? mean.data() : nullptr, check.statistics ? rstd.data() : nullptr,
                 rows, hidden, kLayerNormEps);
  synchronize();
  const auto want = ref::layernorm(course::as_doubles(x), course::as_doubles(gamma),
                                   course::as_doubles(beta), rows, hidden, kLayerNormEps);
  course::CompareOptions o;
  o.cols = hidden;
  o.tolerance = check.y_tolerance;
  o.what = std::string("y") + shape_text(rows, hidden);
  COURSE_EXPECT_MATCH(dy.read_back(), want.y, o);
  expect_guards_untouched(dy, "y");
  if (check.statistics) {
    course::CompareOptions s;
    s.what = "mean (one float per row, written by one thread of the row)";
    COURSE_EXPECT_MATCH(mean.read_back(), want.mean, s);
    s.what = "rstd = 1 / sqrt(var + eps) (one float per row; var is the biased variance, / hidden)";
    COURSE_EXPECT_MATCH(rstd.read_back(), want.rstd, s);
  }
  expect_guards_untouched(mean, "mean");
  expect_guards_untouched(rstd, "rstd");
}

class LayerNorm : public course::GpuTest, public ::testing::WithParamInterface<RowCase> {};

TEST_P(LayerNorm, MatchesTheReferenceAndItsStatistics) {
  const RowCase c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    expect_layernorm(to_dtype<T>(rows_with_offsets(c.rows, c.hidden, course::seed_for(53))), c.rows,
                     c.hidden);
  });
}
INSTANTIATE_TEST_SUITE_P(Shapes, LayerNorm, ::testing::ValuesIn(row_cases()), row_case_name);

class LayerNormEdgeCases : public course::GpuTest, public ::testing::WithParamInterface<Dtype> {};

TEST_P(LayerNormEdgeCases, HandlesPointersNotAlignedTo16Bytes) {
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    expect_layernorm(to_dtype<T>(rows_with_offsets(37, 4096, course::seed_for(54))), 37, 4096, 1);
  });
}

TEST_P(LayerNormEdgeCases, SkipsTheStatisticsWhenTheirPointersAreNull) {
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    LayerNormCheck check;
    check.statistics = false;
    expect_layernorm(to_dtype<T>(rows_with_offsets(37, 1000, course::seed_for(55))), 37, 1000, 0,
                     check);
  });
}

TEST_P(LayerNormEdgeCases, ConstantRowsGiveBeta) {
  // Variance 0: y = 0 * rstd * gamma + beta. A variance computed as E[x^2] - mean^2 comes out
  // slightly negative or positive instead of 0, and the row is NaN or noise.
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    const std::int64_t rows = 4, hidden = 4096;
    std::vector<double> x(rows * hidden);
    const double values[] = {3.7, -1234.5, 0.1, 77.7};
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = values[i / hidden];
    expect_layernorm(to_dtype<T>(x), rows, hidden);
  });
}

TEST_P(LayerNormEdgeCases, NaNInARowMakesOnlyThatRowAndItsStatisticsNaN) {
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    auto x = rows_with_offsets(5, 1000, course::seed_for(56));
    x[1 * 1000 + 999] = kNaN;
    expect_layernorm(to_dtype<T>(x), 5, 1000);
  });
}
INSTANTIATE_TEST_SUITE_P(Dtypes, LayerNormEdgeCases, ::testing::ValuesIn(kDtypes),
                         dtype_param_name);

class LayerNormLimits : public course::GpuTest {};

TEST_F(LayerNormLimits, TakesHiddenFrom1ToKMaxHiddenAndRefusesTheRest) {
  // hidden = 1: the variance of one value is 0, and y = beta.
  expect_layernorm(to_dtype<float>(rows_with_offsets(3, 1, course::seed_for(58))), 3, 1);
  expect_layernorm(to_dtype<bfloat16>(rows_with_offsets(2, d06::kMaxHidden, course::seed_for(59))),
                   2, d06::kMaxHidden, 1);
  if (HasFailure()) return;
  DeviceBuffer<float> x(kLimitBufferElements), g(kLimitBufferElements), b(kLimitBufferElements),
      y(kLimitBufferElements), stats(4);
  expect_refuses_bad_rows("layernorm", [&](std::int64_t rows, std::int64_t hidden) {
    d06::layernorm(x.data(), g.data(), b.data(), y.data(), stats.data(), stats.data() + 2, rows,
                   hidden, kLayerNormEps);
  });
  SCOPED_TRACE("layernorm with rows = 0 has nothing to do and must not look at its pointers");
  const float* none = nullptr;
  COURSE_EXPECT_NO_THROW(
      d06::layernorm(none, none, none, nullptr, nullptr, nullptr, 0, 4096, kLayerNormEps));
}

class LayerNormStatistics : public course::GpuTest {};

TEST_F(LayerNormStatistics, StayAccurateWhenTheMeanIsLargeComparedToTheSpread) {
  // x = 1000 + U(-1, 1) in float32. E[x^2] ~ 1e6 and mean^2 ~ 1e6 agree in their first six
  // digits, so var = E[x^2] - mean^2 in float32 keeps almost none (errors of 10-100%); Welford
  // never forms those large squares. mean and rstd are held to the float32 default.
  // kShiftedTolerance, for y only: x - mean cancels the 1000, so its absolute error is about
  // ulp(1000) = 6e-5 whatever the algorithm (the inputs themselves are only that precise), ~1e-4
  // relative to the spread of the row. 1e-3 in norm leaves room for that and still catches a
  // wrong variance by orders of magnitude.
  constexpr course::Tolerance kShiftedTolerance{1e-3, 1e-2};
  const std::int64_t rows = 16, hidden = 4096;
  auto x = course::random_uniform<double>(rows * hidden, course::seed_for(57));
  for (double& v : x) v += 1000.0;
  LayerNormCheck check;
  check.y_tolerance = kShiftedTolerance;
  expect_layernorm(to_dtype<float>(x), rows, hidden, 0, check);
}

// ================================================================ Exercise 7: online softmax

template <class T>
void expect_softmax(const std::vector<T>& x, std::int64_t rows, std::int64_t cols,
                    std::size_t offset = 0) {
  Guarded<T> dx(x, offset), dy(x.size(), offset);
  d06::softmax_online(dx.data(), dy.data(), rows, cols);
  synchronize();
  course::CompareOptions o;
  o.cols = cols;
  o.what = std::string("y") + shape_text(rows, cols);
  COURSE_EXPECT_MATCH(dy.read_back(), ref::softmax_rows(course::as_doubles(x), rows, cols), o);
  expect_guards_untouched(dy, "y");
}

struct SoftmaxCase {
  Dtype dtype;
  std::int64_t rows, cols;
};

// float16 stops at 65543 columns: the probabilities of a 262144-wide row are all below 2^-14,
// where float16 is subnormal with a fixed spacing of 2^-24 (a few percent of each value), and the
// test would measure the format, not the kernel. bfloat16 has float32's exponent range.
std::vector<SoftmaxCase> softmax_cases() {
  std::vector<SoftmaxCase> cases;
  for (Dtype d : kDtypes)
    for (std::int64_t cols : {1, 33, 1000, 4097, 65536 + 7, 262144})
      if (!(d == Dtype::f16 && cols > 65536 + 7)) cases.push_back({d, cols <= 4097 ? 37 : 5, cols});
  return cases;
}

class OnlineSoftmax : public course::GpuTest, public ::testing::WithParamInterface<SoftmaxCase> {};

TEST_P(OnlineSoftmax, MatchesTheReference) {
  const SoftmaxCase c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    expect_softmax(course::random_uniform<T>(c.rows * c.cols, course::seed_for(61), -8.0, 8.0),
                   c.rows, c.cols);
  });
}
INSTANTIATE_TEST_SUITE_P(Shapes, OnlineSoftmax, ::testing::ValuesIn(softmax_cases()),
                         [](const auto& info) {
                           return std::string(dtype_name(info.param.dtype)) + "_" +
                                  std::to_string(info.param.rows) + "x" +
                                  std::to_string(info.param.cols);
                         });

class OnlineSoftmaxEdgeCases : public course::GpuTest,
                               public ::testing::WithParamInterface<Dtype> {};

TEST_P(OnlineSoftmaxEdgeCases, RescalesTheSumWhenTheMaximumChanges) {
  // Row 0 rises from start to end (a new maximum at every element), row 1 falls, row 2 is
  // noise with its maximum in the very last element: every order of "max found" happens.
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t cols : {4096, 100003}) {
      std::vector<double> x =
          course::random_uniform<double>(3 * cols, course::seed_for(62), -8.0, 8.0);
      for (std::int64_t c = 0; c < cols; ++c) {
        x[c] = 20.0 * static_cast<double>(c) / static_cast<double>(cols);
        x[cols + c] = -x[c];
      }
      x[3 * cols - 1] = 30.0;
      expect_softmax(to_dtype<T>(x), 3, cols);
    }
  });
}

TEST_P(OnlineSoftmaxEdgeCases, MaskedEntriesGiveZeroAndAFullyMaskedRowIsNaN) {
  // -inf is how attention masks an entry out. Row 0: every third entry masked. Row 1: all
  // masked (NaN, as PyTorch). Row 2: masked up to its last entry, which gets probability 1.
  // Row 3: only its first entry is not masked.
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    const std::int64_t cols = 1000;
    std::vector<double> x =
        course::random_uniform<double>(4 * cols, course::seed_for(63), -8.0, 8.0);
    for (std::int64_t c = 0; c < cols; ++c) {
      if (c % 3 == 0) x[c] = -kInf;
      x[cols + c] = -kInf;
      if (c < cols - 1) x[2 * cols + c] = -kInf;
      if (c > 0) x[3 * cols + c] = -kInf;
    }
    expect_softmax(to_dtype<T>(x), 4, cols);
  });
}

TEST_P(OnlineSoftmaxEdgeCases, NaNOrPlusInfinityMakesOnlyItsRowNaN) {
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    const std::int64_t cols = 1000;
    std::vector<double> x =
        course::random_uniform<double>(3 * cols, course::seed_for(64), -8.0, 8.0);
    x[500] = kNaN;
    x[cols + 10] = kInf;
    expect_softmax(to_dtype<T>(x), 3, cols);
  });
}

TEST_P(OnlineSoftmaxEdgeCases, LargeValuesDoNotOverflow) {
  // exp(30000) overflows every float type: only x - max keeps the exponents <= 0.
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    auto x = course::random_uniform<double>(5 * 4096, course::seed_for(65), -20.0, 20.0);
    for (double& v : x) v += 30000.0;
    expect_softmax(to_dtype<T>(x), 5, 4096);
  });
}

TEST_P(OnlineSoftmaxEdgeCases, HandlesPointersNotAlignedTo16Bytes) {
  with_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    expect_softmax(course::random_uniform<T>(5 * 4096, course::seed_for(66), -8.0, 8.0), 5, 4096,
                   1);
  });
}
INSTANTIATE_TEST_SUITE_P(Dtypes, OnlineSoftmaxEdgeCases, ::testing::ValuesIn(kDtypes),
                         dtype_param_name);

class OnlineSoftmaxLimits : public course::GpuTest {};

TEST_F(OnlineSoftmaxLimits, TakesRowsOfOneColumnAndRefusesNone) {
  // One column: every probability is exactly 1.
  expect_softmax(course::random_uniform<float>(5, course::seed_for(67), -8.0, 8.0), 5, 1);
  if (HasFailure()) return;
  DeviceBuffer<float> x(64), y(64);
  const std::pair<std::int64_t, std::int64_t> refused[] = {{2, 0}, {-1, 4}};  // (rows, cols)
  for (const auto& [rows, cols] : refused) {
    SCOPED_TRACE("softmax_online with rows = " + std::to_string(rows) + ", cols = " +
                 std::to_string(cols) + ": lab.h needs cols >= 1, rows >= 0. " + kLimitHint);
    COURSE_EXPECT_THROW(d06::softmax_online(x.data(), y.data(), rows, cols),
                        course::InvalidArgument);
  }
  SCOPED_TRACE("softmax_online with rows = 0 has nothing to do and must not look at its pointers");
  const float* none = nullptr;
  COURSE_EXPECT_NO_THROW(d06::softmax_online(none, nullptr, 0, 4096));
}

// ================================================================ 64-bit indices
// The *LargeIndex suites: inputs of just over 2^31 elements, where the flat index row * cols + c
// (or an element index of the whole-array sums) wraps if any part of it is computed in 32 bits.
// They are filled on the GPU with a pattern the host recomputes at any index (course/large.h)
// and checked where it matters: whole rows at the start, around 2^31 and at the end. They run
// alone on the GPU (lab.json's serial_suites).
constexpr std::int64_t kLargeN = course::kLargeCount;  // 2^31 + 2^24 + 17
using course::large_rows;

std::string large_shape_text(std::int64_t rows, std::int64_t cols) {
  return shape_text(rows, cols) + " (2^31 + " + std::to_string(rows * cols - course::kTwoTo31) +
         " elements)";
}

// The float64 values of the pattern at the given flat indices.
template <class T>
std::vector<double> pattern_at(const course::Pattern& p, const std::vector<std::int64_t>& at) {
  std::vector<double> out(at.size());
  for (std::size_t k = 0; k < at.size(); ++k) out[k] = course::pattern_double_value<T>(p, at[k]);
  return out;
}

class RowSumLargeIndex : public course::GpuTest {};

TEST_F(RowSumLargeIndex, SumsRowsPastTwoToThe31) {
  const std::int64_t cols = 4099, rows = large_rows(cols), n = rows * cols;
  COURSE_SKIP_UNLESS_GPU_MEMORY(static_cast<std::size_t>(n) * sizeof(float));  // 8 GiB
  const course::Pattern p{course::seed_for(601), -1.0, 1.0};
  DeviceBuffer<float> x(static_cast<std::size_t>(n)), sums(static_cast<std::size_t>(rows));
  course::fill_pattern(x.data(), n, p);
  course::poison_on_device(sums.data(), rows);
  d06::row_sums(x.data(), sums.data(), rows, cols, 256);
  synchronize();
  const auto sampled = course::large_sample_rows(rows, cols, course::seed_for(602));
  const auto got = course::gather(sums.data(), rows, sampled);
  for (std::size_t k = 0; k < sampled.size(); ++k) {
    const std::int64_t r = sampled[k];
    std::vector<std::int64_t> at(static_cast<std::size_t>(cols));
    for (std::int64_t c = 0; c < cols; ++c) at[static_cast<std::size_t>(c)] = r * cols + c;
    const auto row = pattern_at<float>(p, at);
    const std::string problem =
        sum_problem(got[k], ref::sum(row), ref::sum_abs(row),
                    "sums[" + std::to_string(r) + "] of" + large_shape_text(rows, cols) +
                        ", its elements " + course::describe_index(r * cols) + " to " +
                        course::describe_index(r * cols + cols - 1) +
                        " (TODO d06.1b: the row's offset blockIdx.x * cols in 64 bits)");
    if (!problem.empty()) {
      ADD_FAILURE() << problem << course::seed_hint();
      return;
    }
  }
}

// The whole-array sums over n = 2^31 + 2^24 + 17 elements that are all 0 except five powers of
// two, at indices 5, 2^31 - 1, 2^31, 2^31 + 2^23 + 7 and n - 1: the exact sum is 31, and any other
// result says which of them were missed (or counted twice).
template <class Sum>
void expect_large_sum(Sum sum, const char* who, const char* todo) {
  const std::int64_t n = kLargeN;
  const std::int64_t spikes[] = {5, course::kTwoTo31 - 1, course::kTwoTo31,
                                 course::kTwoTo31 + (1 << 23) + 7, n - 1};
  DeviceBuffer<float> x(static_cast<std::size_t>(n)), out(1);
  COURSE_CUDA_CHECK(cudaMemset(x.data(), 0, x.bytes()));
  float value = 1.0f;
  for (const std::int64_t i : spikes) {
    COURSE_CUDA_CHECK(cudaMemcpy(x.data() + i, &value, sizeof value, cudaMemcpyHostToDevice));
    value *= 2.0f;
  }
  out.poison();
  sum(x.data(), n, out.data());
  synchronize();
  const float got = out.read_back()[0];
  if (course::DType<float>::is_poison(got)) {
    ADD_FAILURE() << who << " never wrote *out (it still holds the poison value): is the TODO "
                  << "still there? (" << todo << ")";
    return;
  }
  if (got == 31.0f) return;
  std::ostringstream missed;
  if (got >= 0.0f && got < 31.0f && got == std::floor(got)) {
    const int bits = static_cast<int>(got);
    for (int b = 0; b < 5; ++b)
      if (!(bits >> b & 1)) missed << " " << course::describe_index(spikes[b]);
  }
  ADD_FAILURE() << who << " of n = 2^31 + 2^24 + 17 elements, all 0 except 1, 2, 4, 8 and 16 at "
                << "indices 5, 2^31 - 1, 2^31, 2^31 + 2^23 + 7 and n - 1, gave " << number(got)
                << " instead of 31"
                << (missed.str().empty()
                        ? std::string(": elements were counted twice or read "
                                      "at the wrong index")
                        : ": the elements at index" + missed.str() + " were not added")
                << ". Compute the element indices and the grid-stride steps in 64 bits (" << todo
                << ").";
}

constexpr std::size_t kLargeSumBytes = kLargeN * sizeof(float) + (1u << 20);  // 8 GiB

class DeterministicSumLargeIndex : public course::GpuTest {};

TEST_F(DeterministicSumLargeIndex, AddsElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeSumBytes);
  DeviceBuffer<float> partials(static_cast<std::size_t>(d06::kSumMaxPartials));
  partials.poison();
  expect_large_sum([&](const float* x, std::int64_t n,
                       float* out) { d06::sum_two_pass(x, n, partials.data(), out); },
                   "sum_two_pass", "TODO d06.2a, d06.2b");
}

class AtomicSumLargeIndex : public course::GpuTest {};

TEST_F(AtomicSumLargeIndex, AddsElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeSumBytes);
  expect_large_sum([](const float* x, std::int64_t n, float* out) { d06::sum_atomic(x, n, out); },
                   "sum_atomic", "TODO d06.3");
}

// The row-wise kernels on bfloat16 [rows, hidden], hidden = 4096 (16-byte vectors) and 4099
// (one element at a time), rows * hidden just over 2^31; whole sampled rows are checked against
// the float64 reference of those rows.
const std::int64_t kLargeHiddens[] = {4096, 4099};
constexpr std::size_t kLargeRowBytes = (course::kLargeCount + 4099) * sizeof(bfloat16);  // 4 GiB

struct LargeRows {
  std::int64_t rows, hidden, n;
  std::vector<std::int64_t> sampled;  // rows to check
  std::vector<std::int64_t> at;       // their flat indices
  explicit LargeRows(std::int64_t h)
      : rows(large_rows(h)),
        hidden(h),
        n(rows * h),
        sampled(course::large_sample_rows(rows, h, course::seed_for(611))),
        at(course::indices_of_rows(sampled, h)) {}
};

class RmsNormLargeIndex : public course::GpuTest {};

TEST_F(RmsNormLargeIndex, NormalisesRowsPastTwoToThe31) {
  using T = bfloat16;
  COURSE_SKIP_UNLESS_GPU_MEMORY(2 * kLargeRowBytes);
  for (const std::int64_t hidden : kLargeHiddens) {
    const LargeRows s(hidden);
    const course::Pattern p{course::seed_for(612), -2.0, 2.0};
    const auto w = course::random_uniform<T>(hidden, course::seed_for(613), -2.0, 2.0);
    DeviceBuffer<T> x(static_cast<std::size_t>(s.n)), y(static_cast<std::size_t>(s.n)), dw(w);
    course::fill_pattern(x.data(), s.n, p);
    course::poison_on_device(y.data(), s.n);
    d06::rmsnorm(x.data(), dw.data(), y.data(), s.rows, hidden, kRmsEps);
    synchronize();
    course::CompareOptions o;
    o.cols = hidden;
    o.what = "y of rmsnorm" + large_shape_text(s.rows, hidden) +
             " (TODO d06.4: row * hidden in "
             "64 bits)";
    COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data(), s.n, s.at),
                                ref::rmsnorm(pattern_at<T>(p, s.at), course::as_doubles(w),
                                             s.sampled.size(), hidden, kRmsEps),
                                s.at, o);
    if (HasFailure()) return;
  }
}

class FusedAddRmsNormLargeIndex : public course::GpuTest {};

TEST_F(FusedAddRmsNormLargeIndex, UpdatesAndNormalisesRowsPastTwoToThe31) {
  using T = bfloat16;
  COURSE_SKIP_UNLESS_GPU_MEMORY(3 * kLargeRowBytes);  // x, residual, y: 12 GiB
  for (const std::int64_t hidden : kLargeHiddens) {
    const LargeRows s(hidden);
    const course::Pattern px{course::seed_for(621), -1.0, 1.0},
        pr{course::seed_for(622), -1.0, 1.0};
    const auto w = course::random_uniform<T>(hidden, course::seed_for(623), -2.0, 2.0);
    DeviceBuffer<T> x(static_cast<std::size_t>(s.n)), residual(static_cast<std::size_t>(s.n)),
        y(static_cast<std::size_t>(s.n)), dw(w);
    course::fill_pattern(x.data(), s.n, px);
    course::fill_pattern(residual.data(), s.n, pr);
    course::poison_on_device(y.data(), s.n);
    d06::fused_add_rmsnorm(x.data(), residual.data(), dw.data(), y.data(), s.rows, hidden, kRmsEps);
    synchronize();
    const auto want =
        ref::fused_add_rmsnorm(pattern_at<T>(px, s.at), pattern_at<T>(pr, s.at),
                               course::as_doubles(w), s.sampled.size(), hidden, kRmsEps);
    course::CompareOptions o;
    o.cols = hidden;
    o.what = "residual (x + residual, in place) of fused_add_rmsnorm" +
             large_shape_text(s.rows, hidden) + " (TODO d06.5: the row's offset in 64 bits)";
    COURSE_EXPECT_SAMPLES_MATCH(course::gather(residual.data(), s.n, s.at), want.residual, s.at, o);
    o.what = "y of fused_add_rmsnorm" + large_shape_text(s.rows, hidden) +
             " (TODO d06.5: the row's offset in 64 bits)";
    COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data(), s.n, s.at), want.y, s.at, o);
    if (HasFailure()) return;
  }
}

class LayerNormLargeIndex : public course::GpuTest {};

TEST_F(LayerNormLargeIndex, NormalisesRowsPastTwoToThe31) {
  using T = bfloat16;
  COURSE_SKIP_UNLESS_GPU_MEMORY(2 * kLargeRowBytes + (8u << 20));
  for (const std::int64_t hidden : kLargeHiddens) {
    const LargeRows s(hidden);
    const course::Pattern p{course::seed_for(631), -1.0, 3.0};
    const auto gamma = course::random_uniform<T>(hidden, course::seed_for(632), -2.0, 2.0);
    const auto beta = course::random_uniform<T>(hidden, course::seed_for(633), -1.0, 1.0);
    DeviceBuffer<T> x(static_cast<std::size_t>(s.n)), y(static_cast<std::size_t>(s.n)), dg(gamma),
        db(beta);
    DeviceBuffer<float> mean(static_cast<std::size_t>(s.rows)),
        rstd(static_cast<std::size_t>(s.rows));
    course::fill_pattern(x.data(), s.n, p);
    course::poison_on_device(y.data(), s.n);
    course::poison_on_device(mean.data(), s.rows);
    course::poison_on_device(rstd.data(), s.rows);
    d06::layernorm(x.data(), dg.data(), db.data(), y.data(), mean.data(), rstd.data(), s.rows,
                   hidden, kLayerNormEps);
    synchronize();
    const auto want =
        ref::layernorm(pattern_at<T>(p, s.at), course::as_doubles(gamma), course::as_doubles(beta),
                       s.sampled.size(), hidden, kLayerNormEps);
    course::CompareOptions o;
    o.cols = hidden;
    o.what = "y of layernorm" + large_shape_text(s.rows, hidden) +
             " (TODO d06.6c: row * hidden "
             "in 64 bits)";
    COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data(), s.n, s.at), want.y, s.at, o);
    course::CompareOptions so;
    so.what = "mean of the sampled rows of layernorm" + large_shape_text(s.rows, hidden);
    COURSE_EXPECT_MATCH(course::gather(mean.data(), s.rows, s.sampled), want.mean, so);
    so.what = "rstd of the sampled rows of layernorm" + large_shape_text(s.rows, hidden);
    COURSE_EXPECT_MATCH(course::gather(rstd.data(), s.rows, s.sampled), want.rstd, so);
    if (HasFailure()) return;
  }
}

class OnlineSoftmaxLargeIndex : public course::GpuTest {};

TEST_F(OnlineSoftmaxLargeIndex, NormalisesRowsPastTwoToThe31) {
  // Long rows (32768 columns: 16-byte vectors; 32771: one element at a time).
  using T = bfloat16;
  COURSE_SKIP_UNLESS_GPU_MEMORY(2 * (course::kLargeCount + 32771) * sizeof(T));  // 8 GiB
  for (const std::int64_t cols : {32768, 32771}) {
    const std::int64_t rows = large_rows(cols), n = rows * cols;
    const auto sampled = course::large_sample_rows(rows, cols, course::seed_for(641));
    const auto at = course::indices_of_rows(sampled, cols);
    const course::Pattern p{course::seed_for(642), -8.0, 8.0};
    DeviceBuffer<T> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
    course::fill_pattern(x.data(), n, p);
    course::poison_on_device(y.data(), n);
    d06::softmax_online(x.data(), y.data(), rows, cols);
    synchronize();
    course::CompareOptions o;
    o.cols = cols;
    o.what = "y of softmax_online" + large_shape_text(rows, cols) +
             " (TODO d06.7c: the row's "
             "offset in 64 bits)";
    COURSE_EXPECT_SAMPLES_MATCH(
        course::gather(y.data(), n, at),
        ref::softmax_rows(pattern_at<T>(p, at), sampled.size(), static_cast<std::size_t>(cols)), at,
        o);
    if (HasFailure()) return;
  }
}

// ================================================================ rounding to 16 bits
// The *Rounding suites: every normalisation computes in float32 and rounds each output once, to
// the NEAREST 16-bit value (course::from_float). Truncating is off by at most one step, which
// the tolerances allow; course::check_rounding asks for the exact value wherever the float32
// result cannot have crossed a rounding midpoint. The float32 error bounds, before the final
// rounding, in units of float32's unit roundoff u = 2^-24:
constexpr double kU = 0x1p-24;
// RMSNorm: the sum of squares (one u per value a thread adds in turn, up to 16 of them in the
// reference's split, plus the warp and block trees; up to 128 in a one-warp-per-row split), half
// of that through rsqrt, rsqrtf's 2 ulps and the products: 256 u, relative to y.
constexpr double kRmsNormFloatError = 256 * kU;
// x + residual: one float32 addition.
constexpr double kResidualFloatError = 2 * kU;
// LayerNorm: Welford's mean and M2 carry errors of the same order; (x - mean) loses the mean's
// error in absolute terms. Bound: 256 u of ((|x| + |mean|) rstd |gamma| + |beta|).
constexpr double kLayerNormErrorUnits = 256;
// Online softmax: __expf is within 2 + 1.17 |x - max| ulps (about 21 for logits in [-8, 8)),
// each rescale of the running sum adds one __expf more, the row's sum adds one u per value a
// thread adds in turn, __fdividef 2 ulps: (4 cols / 32 + 512) u, relative to y.
double online_softmax_float_error(std::int64_t cols) {
  return (4.0 * static_cast<double>(cols) / 32.0 + 512.0) * kU;
}

const Dtype k16BitDtypes[] = {Dtype::f16, Dtype::bf16};

// with_dtype for the 16-bit types only.
template <class F>
void with_16bit_dtype(Dtype d, F&& f) {
  if (d == Dtype::f16) return f(half{});
  if (d == Dtype::bf16) return f(bfloat16{});
  ADD_FAILURE() << "the rounding tests are for float16 and bfloat16 outputs";
}

template <class T>
bool expect_rounded(const std::vector<T>& got, const std::vector<double>& want,
                    const std::vector<double>& bound, const course::CompareOptions& o,
                    const std::string& extra_hint = "") {
  const course::RoundingCheck c = course::check_rounding(got, want, bound, o);
  if (!c.ok) ADD_FAILURE() << extra_hint << c.message << course::seed_hint();
  EXPECT_GT(c.checked, got.size() / 2)
      << "only " << c.checked << " of " << got.size() << " elements of " << o.what
      << " could be checked: the test's float32 error bound is too wide for this dtype";
  return c.ok;
}

std::vector<double> relative_bound(const std::vector<double>& want, double relative) {
  std::vector<double> b(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) b[i] = relative * std::fabs(want[i]);
  return b;
}

class RmsNormRounding : public course::GpuTest, public ::testing::WithParamInterface<Dtype> {};

TEST_P(RmsNormRounding, RoundsTheFloat32ResultToTheNearest16BitValue) {
  with_16bit_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    for (const std::int64_t hidden : {4096, 4097}) {
      const std::int64_t rows = 37;
      const auto x = course::random_uniform<T>(rows * hidden, course::seed_for(651), -2.0, 2.0);
      const auto w = course::random_uniform<T>(hidden, course::seed_for(652), -2.0, 2.0);
      DeviceBuffer<T> dx(x), dw(w), dy(x.size());
      dy.poison();
      d06::rmsnorm(dx.data(), dw.data(), dy.data(), rows, hidden, kRmsEps);
      synchronize();
      const auto got = dy.read_back();
      const auto want =
          ref::rmsnorm(course::as_doubles(x), course::as_doubles(w), rows, hidden, kRmsEps);
      course::CompareOptions o;
      o.cols = hidden;
      o.what = std::string("y") + shape_text(rows, hidden) + " of rmsnorm (TODO d06.4)";
      COURSE_EXPECT_MATCH(got, want, o);
      if (HasFailure()) return;
      if (!expect_rounded(got, want, relative_bound(want, kRmsNormFloatError), o)) return;
    }
  });
}
INSTANTIATE_TEST_SUITE_P(Dtypes, RmsNormRounding, ::testing::ValuesIn(k16BitDtypes),
                         dtype_param_name);

// fused_add_rmsnorm: residual = x + residual rounded once; y from the float32 sums (lab.h: "from
// the float32 sum, before it is rounded to the dtype"). FusedAddRmsNormRounding checks both
// roundings; FusedAddRmsNormPrecision says what it means when only y is off.
template <class T>
struct FusedRun {
  std::vector<T> residual, y;
  ref::FusedAddRmsNormResult want;
  std::int64_t rows, hidden;
};

template <class T>
FusedRun<T> run_fused(std::int64_t rows, std::int64_t hidden, std::uint64_t salt) {
  const auto x = course::random_uniform<T>(rows * hidden, course::seed_for(salt), -2.0, 2.0);
  const auto r = course::random_uniform<T>(rows * hidden, course::seed_for(salt + 1), -2.0, 2.0);
  const auto w = course::random_uniform<T>(hidden, course::seed_for(salt + 2), -2.0, 2.0);
  DeviceBuffer<T> dx(x), dr(r), dw(w), dy(x.size());
  dy.poison();
  d06::fused_add_rmsnorm(dx.data(), dr.data(), dw.data(), dy.data(), rows, hidden, kRmsEps);
  synchronize();
  return {dr.read_back(), dy.read_back(),
          ref::fused_add_rmsnorm(course::as_doubles(x), course::as_doubles(r),
                                 course::as_doubles(w), rows, hidden, kRmsEps),
          rows, hidden};
}

class FusedAddRmsNormRounding : public course::GpuTest,
                                public ::testing::WithParamInterface<Dtype> {};

TEST_P(FusedAddRmsNormRounding, RoundsTheResidualToTheNearest16BitValue) {
  with_16bit_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    for (const std::int64_t hidden : {4096, 4097}) {
      const FusedRun<T> run = run_fused<T>(37, hidden, 661);
      course::CompareOptions o;
      o.cols = hidden;
      o.what = "residual" + shape_text(37, hidden) +
               " of fused_add_rmsnorm (x + residual, TODO "
               "d06.5)";
      COURSE_EXPECT_MATCH(run.residual, run.want.residual, o);
      if (HasFailure()) return;
      if (!expect_rounded(run.residual, run.want.residual,
                          relative_bound(run.want.residual, kResidualFloatError), o))
        return;
    }
  });
}
INSTANTIATE_TEST_SUITE_P(Dtypes, FusedAddRmsNormRounding, ::testing::ValuesIn(k16BitDtypes),
                         dtype_param_name);

class FusedAddRmsNormPrecision : public course::GpuTest,
                                 public ::testing::WithParamInterface<Dtype> {};

TEST_P(FusedAddRmsNormPrecision, NormalisesTheFloat32SumNotTheRoundedResidual) {
  // Rounding the sums to T before normalising them moves each by up to half a step of T, and y
  // with them: within the tolerance, but no longer the correctly rounded RMSNorm of the float32
  // sums, element after element, in both directions.
  with_16bit_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    for (const std::int64_t hidden : {4096, 4097}) {
      const FusedRun<T> run = run_fused<T>(37, hidden, 671);
      course::CompareOptions o;
      o.cols = hidden;
      o.what = "y" + shape_text(37, hidden) + " of fused_add_rmsnorm (TODO d06.5)";
      COURSE_EXPECT_MATCH(run.y, run.want.y, o);
      if (HasFailure()) return;
      const std::string hint =
          std::string(
              "y is not the correctly rounded RMSNorm of the float32 sums x + residual: "
              "was it computed from the residual after rounding it to ") +
          course::DType<T>::name +
          "? Keep the sums in float32 registers, normalise those, and "
          "round only when storing (lab.h: y from the float32 sum, before it is rounded).\n";
      if (!expect_rounded(run.y, run.want.y, relative_bound(run.want.y, kRmsNormFloatError), o,
                          hint))
        return;
    }
  });
}
INSTANTIATE_TEST_SUITE_P(Dtypes, FusedAddRmsNormPrecision, ::testing::ValuesIn(k16BitDtypes),
                         dtype_param_name);

class LayerNormRounding : public course::GpuTest, public ::testing::WithParamInterface<Dtype> {};

TEST_P(LayerNormRounding, RoundsTheFloat32ResultToTheNearest16BitValue) {
  with_16bit_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    for (const std::int64_t hidden : {4096, 4097}) {
      const std::int64_t rows = 37;
      const auto x = to_dtype<T>(rows_with_offsets(rows, hidden, course::seed_for(681)));
      const auto gamma = course::random_uniform<T>(hidden, course::seed_for(682), -2.0, 2.0);
      const auto beta = course::random_uniform<T>(hidden, course::seed_for(683), -1.0, 1.0);
      DeviceBuffer<T> dx(x), dg(gamma), db(beta), dy(x.size());
      dy.poison();
      d06::layernorm(dx.data(), dg.data(), db.data(), dy.data(), nullptr, nullptr, rows, hidden,
                     kLayerNormEps);
      synchronize();
      const auto got = dy.read_back();
      const auto xd = course::as_doubles(x), gd = course::as_doubles(gamma),
                 bd = course::as_doubles(beta);
      const auto want = ref::layernorm(xd, gd, bd, rows, hidden, kLayerNormEps);
      std::vector<double> bound(got.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        const std::size_t r = i / static_cast<std::size_t>(hidden),
                          c = i % static_cast<std::size_t>(hidden);
        bound[i] = kLayerNormErrorUnits * kU *
                   ((std::fabs(xd[i]) + std::fabs(want.mean[r])) * want.rstd[r] * std::fabs(gd[c]) +
                    std::fabs(bd[c]));
      }
      course::CompareOptions o;
      o.cols = hidden;
      o.what = std::string("y") + shape_text(rows, hidden) + " of layernorm (TODO d06.6c)";
      COURSE_EXPECT_MATCH(got, want.y, o);
      if (HasFailure()) return;
      if (!expect_rounded(got, want.y, bound, o)) return;
    }
  });
}
INSTANTIATE_TEST_SUITE_P(Dtypes, LayerNormRounding, ::testing::ValuesIn(k16BitDtypes),
                         dtype_param_name);

class OnlineSoftmaxRounding : public course::GpuTest,
                              public ::testing::WithParamInterface<Dtype> {};

TEST_P(OnlineSoftmaxRounding, RoundsEachProbabilityToTheNearest16BitValue) {
  with_16bit_dtype(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    for (const std::int64_t cols : {4096, 4099}) {
      const std::int64_t rows = 8;
      const auto x = course::random_uniform<T>(rows * cols, course::seed_for(691), -8.0, 8.0);
      DeviceBuffer<T> dx(x), dy(x.size());
      dy.poison();
      d06::softmax_online(dx.data(), dy.data(), rows, cols);
      synchronize();
      const auto got = dy.read_back();
      const auto want = ref::softmax_rows(course::as_doubles(x), rows, cols);
      course::CompareOptions o;
      o.cols = cols;
      o.what = std::string("y") + shape_text(rows, cols) + " of softmax_online (TODO d06.7c)";
      COURSE_EXPECT_MATCH(got, want, o);
      if (HasFailure()) return;
      if (!expect_rounded(got, want, relative_bound(want, online_softmax_float_error(cols)), o))
        return;
    }
  });
}
INSTANTIATE_TEST_SUITE_P(Dtypes, OnlineSoftmaxRounding, ::testing::ValuesIn(k16BitDtypes),
                         dtype_param_name);

}  // namespace
