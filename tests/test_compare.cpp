// The comparison is what every grade rests on: it must pass what is right, fail what is
// wrong, and say in words which kind of wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "course/compare.h"
#include "course/dtype.h"

namespace {

using course::compare;
using course::CompareOptions;
using course::DType;

std::vector<double> ramp(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.5 + static_cast<double>(i % 17) * 0.25;
  return v;
}

template <class T>
std::vector<T> rounded(const std::vector<double>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = DType<T>::from_double(v[i]);
  return out;
}

template <class T>
class CompareAcrossDtypes : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, course::half, course::bfloat16>;
TYPED_TEST_SUITE(CompareAcrossDtypes, FloatTypes);

TYPED_TEST(CompareAcrossDtypes, AcceptsTheReferenceRoundedToTheDtype) {
  const auto ref = ramp(1001);
  const auto c = compare(rounded<TypeParam>(ref), ref);
  EXPECT_TRUE(c.ok) << c.message;
  EXPECT_TRUE(c.message.empty());
}

TYPED_TEST(CompareAcrossDtypes, RejectsAnErrorOfTenUnitsInTheLastPlace) {
  auto ref = ramp(64);
  auto got = rounded<TypeParam>(ref);
  const double tol = DType<TypeParam>::tolerance.elem;
  got[10] = DType<TypeParam>::from_double(ref[10] * (1.0 + 20 * tol));
  const auto c = compare(got, ref);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.first_bad, 10);
  EXPECT_EQ(c.mismatches, 1u);
}

TYPED_TEST(CompareAcrossDtypes, NeverPassesNaN) {
  const auto ref = ramp(32);
  auto got = rounded<TypeParam>(ref);
  got[5] = DType<TypeParam>::from_double(std::numeric_limits<double>::quiet_NaN());
  const auto c = compare(got, ref);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.bad_nonfinite, 1u);
  EXPECT_NE(c.message.find("NaN"), std::string::npos) << c.message;
}

TYPED_TEST(CompareAcrossDtypes, ExplainsAnOutputThatWasNeverWritten) {
  const auto ref = ramp(100);
  std::vector<TypeParam> got(100, DType<TypeParam>::poison());
  const auto c = compare(got, ref);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.unwritten, 100u);
  EXPECT_NE(c.message.find("No element"), std::string::npos) << c.message;
}

TEST(Compare, ExplainsAMissingTail) {
  const auto ref = ramp(4099);
  auto got = rounded<float>(ref);
  for (std::size_t i = 4096; i < got.size(); ++i) got[i] = DType<float>::poison();
  const auto c = compare(got, ref);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.first_bad, 4096);
  EXPECT_NE(c.message.find("tail"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("<never written>"), std::string::npos) << c.message;
}

TEST(Compare, ExplainsAWrongTail) {
  const auto ref = ramp(1027);
  auto got = rounded<float>(ref);
  for (std::size_t i = 1024; i < got.size(); ++i) got[i] = 0.0f;
  const auto c = compare(got, ref);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("tail"), std::string::npos) << c.message;
}

TEST(Compare, ExplainsHolesInTheGrid) {
  const auto ref = ramp(1000);
  auto got = rounded<float>(ref);
  for (std::size_t i = 0; i < got.size(); i += 7) got[i] = DType<float>::poison();
  const auto c = compare(got, ref);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("never written"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("grid"), std::string::npos) << c.message;
}

TEST(Compare, ReportsMatrixPositionsAsRowAndColumn) {
  const auto ref = ramp(12);
  auto got = rounded<float>(ref);
  got[7] = 100.0f;
  CompareOptions options;
  options.cols = 4;
  const auto c = compare(got, ref, options);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("[1, 3]"), std::string::npos) << c.message;
}

TEST(Compare, RequiresNaNWhereTheReferenceIsNaN) {
  std::vector<double> ref = {1.0, std::numeric_limits<double>::quiet_NaN(), 2.0};
  EXPECT_TRUE(compare(std::vector<float>{1.0f, NAN, 2.0f}, ref).ok);
  EXPECT_FALSE(compare(std::vector<float>{1.0f, 0.0f, 2.0f}, ref).ok);
}

TEST(Compare, RequiresTheSameInfinity) {
  std::vector<double> ref = {-INFINITY, 1.0};
  EXPECT_TRUE(compare(std::vector<float>{-INFINITY, 1.0f}, ref).ok);
  EXPECT_FALSE(compare(std::vector<float>{INFINITY, 1.0f}, ref).ok);
}

TEST(Compare, ToleratesRoundingNearZeroButNotAWrongSign) {
  std::vector<double> ref = {1.0, -1.0, 1e-9, 2.0};
  EXPECT_TRUE(compare(std::vector<float>{1.0f, -1.0f, 0.0f, 2.0f}, ref).ok);
  EXPECT_FALSE(compare(std::vector<float>{1.0f, 1.0f, 0.0f, 2.0f}, ref).ok);
}

TEST(Compare, RejectsAShapeMismatch) {
  const auto c = compare(std::vector<float>(3), std::vector<double>(4));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("shape"), std::string::npos);
}

TEST(Compare, AcceptsEmptyOutputs) {
  EXPECT_TRUE(compare(std::vector<float>{}, std::vector<double>{}).ok);
}

TEST(Compare, IntegersMustMatchExactly) {
  std::vector<double> ref = {1, 2, 3};
  EXPECT_TRUE(compare(std::vector<int>{1, 2, 3}, ref).ok);
  EXPECT_FALSE(compare(std::vector<int>{1, 2, 4}, ref).ok);
}

// ---------------------------------------------------------------------------------------------
// The rounding check: a 16-bit output must be the reference rounded to nearest even.

// float32 values spread over many binades and both signs (and their float64 copies): what a
// kernel's float32 result before its final rounding looks like.
std::vector<double> float_results(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double magnitude =
        std::ldexp(1.0 + static_cast<double>((i * 2654435761u) % 1000003) / 1000003.0,
                   static_cast<int>(i % 24) - 12);
    v[i] = static_cast<float>(i % 3 ? magnitude : -magnitude);
  }
  return v;
}

// What the GPU stores for each float32 result with the given float -> T conversion.
template <class T, class Convert>
std::vector<T> converted(const std::vector<double>& ref, Convert convert) {
  std::vector<T> out(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) out[i] = convert(static_cast<float>(ref[i]));
  return out;
}

// A kernel's float32 error bound of a few ulps, as the lab tests choose it.
constexpr double kFewFloatUlps = 4.0 / (1 << 24);

TEST(RoundingCheck, RoundsToNearestEvenExactlyInFloat64) {
  using course::kBFloat16Format;
  using course::kFloat16Format;
  using course::round_nearest_even;
  using course::round_toward_zero;
  // bfloat16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 (even: 1).
  EXPECT_EQ(round_nearest_even(1.0 + 0x1p-8, kBFloat16Format), 1.0);
  EXPECT_EQ(round_nearest_even(1.0 + 3 * 0x1p-8, kBFloat16Format), 1.0 + 0x1p-6);
  EXPECT_EQ(round_nearest_even(1.0 + 0x1p-8 + 0x1p-20, kBFloat16Format), 1.0 + 0x1p-7);
  EXPECT_EQ(round_nearest_even(-(1.0 + 0x1p-8 + 0x1p-20), kBFloat16Format), -(1.0 + 0x1p-7));
  EXPECT_EQ(round_toward_zero(1.0 + 0x1p-7 - 0x1p-20, kBFloat16Format), 1.0);
  EXPECT_EQ(round_toward_zero(-(1.0 + 0x1p-7 - 0x1p-20), kBFloat16Format), -1.0);
  // float16: 11 bits; subnormals below 2^-14 are spaced 2^-24; past 65520 it overflows.
  EXPECT_EQ(round_nearest_even(1.0 + 0x1p-11 + 0x1p-30, kFloat16Format), 1.0 + 0x1p-10);
  EXPECT_EQ(round_nearest_even(3.4 * 0x1p-24, kFloat16Format), 3 * 0x1p-24);
  EXPECT_EQ(round_nearest_even(65519.0, kFloat16Format), 65504.0);
  EXPECT_TRUE(std::isinf(round_nearest_even(65520.0, kFloat16Format)));
  EXPECT_EQ(round_toward_zero(70000.0, kFloat16Format), 65504.0);
  // And it agrees with CUDA's own conversions on the host.
  for (const double v : float_results(5000)) {
    const auto f = static_cast<float>(v);
    ASSERT_EQ(round_nearest_even(v, kFloat16Format),
              DType<course::half>::to_double(__float2half_rn(f)))
        << v;
    ASSERT_EQ(round_nearest_even(v, kBFloat16Format),
              DType<course::bfloat16>::to_double(__float2bfloat16_rn(f)))
        << v;
    ASSERT_EQ(round_toward_zero(v, kFloat16Format),
              DType<course::half>::to_double(__float2half_rz(f)))
        << v;
    ASSERT_EQ(round_toward_zero(v, kBFloat16Format),
              DType<course::bfloat16>::to_double(__float2bfloat16_rz(f)))
        << v;
  }
}

TEST(RoundingCheck, PassesRoundToNearestEven) {
  const auto ref = float_results(4096);
  const auto f16 = course::check_rounding(
      converted<course::half>(ref, [](float f) { return __float2half_rn(f); }), ref, kFewFloatUlps);
  EXPECT_TRUE(f16.ok) << f16.message;
  const auto bf16 = course::check_rounding(
      converted<course::bfloat16>(ref, [](float f) { return __float2bfloat16_rn(f); }), ref,
      kFewFloatUlps);
  EXPECT_TRUE(bf16.ok) << bf16.message;
  // Nearly every element is checked: few lie within a few float32 ulps of a midpoint.
  EXPECT_GT(bf16.checked, ref.size() * 99 / 100);
  EXPECT_GT(f16.checked, ref.size() * 9 / 10);
}

TEST(RoundingCheck, CatchesTruncationAndSaysSo) {
  const auto ref = float_results(4096);
  CompareOptions options;
  options.what = "y";
  const auto bf16 = course::check_rounding(
      converted<course::bfloat16>(ref, [](float f) { return __float2bfloat16_rz(f); }), ref,
      kFewFloatUlps, options);
  EXPECT_FALSE(bf16.ok);
  EXPECT_GT(bf16.wrong, ref.size() / 4);  // about half of all values round up to nearest
  EXPECT_EQ(bf16.toward_zero, bf16.wrong);
  EXPECT_NE(bf16.message.find("rounded toward zero"), std::string::npos) << bf16.message;
  EXPECT_NE(bf16.message.find("__float2bfloat16_rn"), std::string::npos) << bf16.message;
  EXPECT_NE(bf16.message.find("the nearest bfloat16 to"), std::string::npos) << bf16.message;
  const auto f16 = course::check_rounding(
      converted<course::half>(ref, [](float f) { return __float2half_rz(f); }), ref, kFewFloatUlps,
      options);
  EXPECT_FALSE(f16.ok);
  EXPECT_EQ(f16.toward_zero, f16.wrong);
  EXPECT_NE(f16.message.find("__float2half_rn"), std::string::npos) << f16.message;
}

TEST(RoundingCheck, CatchesTruncationThatTheToleranceLetsThrough) {
  // The reason the check exists: course::compare accepts the truncated output.
  const auto ref = float_results(4096);
  const auto truncated =
      converted<course::bfloat16>(ref, [](float f) { return __float2bfloat16_rz(f); });
  EXPECT_TRUE(compare(truncated, ref).ok);
  EXPECT_FALSE(course::check_rounding(truncated, ref, kFewFloatUlps).ok);
}

TEST(RoundingCheck, BlamesAnIntermediateWhenResultsAreOffBothWays) {
  // y = a * b with a rounded to bfloat16 first: the product lands one step off either way.
  const auto a = float_results(4096);
  std::vector<double> ref(a.size());
  std::vector<course::bfloat16> got(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double b = 1.0 + static_cast<double>(i % 97) / 97.0;
    ref[i] = static_cast<float>(a[i] * b);
    const float a16 = __bfloat162float(__float2bfloat16_rn(static_cast<float>(a[i])));
    got[i] = __float2bfloat16_rn(a16 * static_cast<float>(b));
  }
  const auto c = course::check_rounding(got, ref, kFewFloatUlps);
  EXPECT_FALSE(c.ok);
  EXPECT_LT(c.toward_zero, c.wrong);
  EXPECT_NE(c.message.find("Keep every intermediate in float32"), std::string::npos) << c.message;
}

TEST(RoundingCheck, SkipsElementsNearAMidpointAndUsesPerElementBounds) {
  // 1 + 2^-8 (1 + 2^-20) lies just above a bfloat16 midpoint: with a float32 error bound wider
  // than that distance either neighbour is acceptable, so the element is not checked.
  const std::vector<double> ref = {1.0 + 0x1p-8 + 0x1p-28, 2.5};
  const std::vector<course::bfloat16> got = {__float2bfloat16_rn(1.0f), __float2bfloat16_rn(2.5f)};
  const auto wide = course::check_rounding(got, ref, std::vector<double>{0x1p-20, 0.0});
  EXPECT_TRUE(wide.ok) << wide.message;
  EXPECT_EQ(wide.checked, 1u);
  const auto narrow = course::check_rounding(got, ref, std::vector<double>{0x1p-30, 0.0});
  EXPECT_FALSE(narrow.ok);
  EXPECT_EQ(narrow.checked, 2u);
}

TEST(RoundingCheck, ReportsUnwrittenElementsAndMatrixPositions) {
  const auto ref = float_results(12);
  auto got = converted<course::half>(ref, [](float f) { return __float2half_rn(f); });
  got[7] = DType<course::half>::poison();
  CompareOptions options;
  options.cols = 4;
  const auto c = course::check_rounding(got, ref, kFewFloatUlps, options);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.unwritten, 1u);
  EXPECT_EQ(c.first_bad, 7);
  EXPECT_NE(c.message.find("never written"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("[1, 3]"), std::string::npos) << c.message;
}

TEST(RoundingCheck, RequiresNaNWhereTheReferenceIsNaN) {
  const std::vector<double> ref = {1.0, std::numeric_limits<double>::quiet_NaN()};
  const std::vector<course::half> good = {__float2half_rn(1.0f), __float2half_rn(NAN)};
  const std::vector<course::half> bad = {__float2half_rn(1.0f), __float2half_rn(0.0f)};
  EXPECT_TRUE(course::check_rounding(good, ref, kFewFloatUlps).ok);
  EXPECT_FALSE(course::check_rounding(bad, ref, kFewFloatUlps).ok);
}

}  // namespace
