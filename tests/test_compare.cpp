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

}  // namespace
