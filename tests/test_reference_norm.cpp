// The Day 6 references (reference/norm.h) grade every sum and normalisation of the day: check
// them against values worked out by hand, their invariances, and their behaviour on NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "course/reference/norm.h"

namespace {

namespace ref = course::reference;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ReferenceSum, IsCompensatedSoCancellationLosesNothing) {
  // A plain float64 loop gives 0 here: 1e16 + 1 rounds back to 1e16.
  EXPECT_EQ(ref::sum({1e16, 1.0, -1e16}), 1.0);
  EXPECT_EQ(ref::sum({1.0, 1e100, 1.0, -1e100}), 2.0);
  // 0.1 ten times: exactly representable partial errors are recovered.
  EXPECT_NEAR(ref::sum(std::vector<double>(10, 0.1)), 1.0, 1e-16);
}

TEST(ReferenceSum, OfManySmallValuesIsExactWhereAPlainLoopDrifts) {
  // 2^20 + 1 values: 1 followed by 2^20 copies of 2^-53 (each half an ulp of 1). A plain
  // loop rounds every addition back to 1; the exact sum is 1 + 2^-33.
  std::vector<double> x(1 + (1u << 20), std::ldexp(1.0, -53));
  x[0] = 1.0;
  EXPECT_EQ(ref::sum(x), 1.0 + std::ldexp(1.0, -33));
}

TEST(ReferenceSum, PropagatesNaNAndInfinity) {
  EXPECT_TRUE(std::isnan(ref::sum({1.0, kNaN, 2.0})));
  EXPECT_EQ(ref::sum({1.0, kInf, 2.0}), kInf) << "compensation must not turn Inf into NaN";
  EXPECT_TRUE(std::isnan(ref::sum({kInf, -kInf})));
  EXPECT_EQ(ref::sum({}), 0.0);
}

TEST(ReferenceSum, SumAbsAndRowSums) {
  EXPECT_EQ(ref::sum_abs({-1.5, 2.0, -0.5}), 4.0);
  const auto s = ref::row_sums({1, 2, 3, -4, 5, 6}, 2, 3);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], 6.0);
  EXPECT_EQ(s[1], 7.0);
  EXPECT_THROW(ref::row_sums({1, 2, 3}, 2, 2), std::invalid_argument);
}

TEST(ReferenceRmsNorm, MatchesAValueWorkedOutByHand) {
  // x = [3, 4]: mean(x^2) = 12.5, 1/sqrt(12.5) = 0.28284271247461900976...
  const auto y = ref::rmsnorm({3, 4}, {1, 2}, 1, 2, 0.0);
  EXPECT_NEAR(y[0], 3 * 0.282842712474619, 1e-15);
  EXPECT_NEAR(y[1], 4 * 0.282842712474619 * 2, 1e-15);
}

TEST(ReferenceRmsNorm, GivesUnitRootMeanSquareAndIsScaleInvariant) {
  const std::vector<double> x = {0.5, -1.25, 2.0, 7.0, -3.0};
  const std::vector<double> w(5, 1.0);
  const auto y = ref::rmsnorm(x, w, 1, 5, 0.0);
  double sq = 0;
  for (double v : y) sq += v * v;
  EXPECT_NEAR(sq / 5, 1.0, 1e-14);
  std::vector<double> big = x;
  for (double& v : big) v *= 1e30;
  const auto yb = ref::rmsnorm(big, w, 1, 5, 0.0);
  for (int c = 0; c < 5; ++c) EXPECT_NEAR(yb[c], y[c], 1e-14);
}

TEST(ReferenceRmsNorm, EpsKeepsAnAllZeroRowFinite) {
  const auto y = ref::rmsnorm({0.0, -0.0, 0.0, 1, 1, 1}, {1, 1, 1}, 2, 3, 1e-6);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(y[c], 0.0);
  for (int c = 3; c < 6; ++c) EXPECT_NEAR(y[c], 1.0 / std::sqrt(1.0 + 1e-6), 1e-15);
}

TEST(ReferenceRmsNorm, NaNMakesOnlyItsOwnRowNaN) {
  const auto y = ref::rmsnorm({1, kNaN, 3, 1, 2, 3}, {1, 1, 1}, 2, 3, 1e-6);
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::isnan(y[c])) << "column " << c;
  for (int c = 3; c < 6; ++c) EXPECT_TRUE(std::isfinite(y[c])) << "the next row is unaffected";
}

TEST(ReferenceFusedAddRmsNorm, ReturnsTheNewResidualAndTheNormOfIt) {
  const std::vector<double> x = {1, 2, 3, 4, -1, 0.5};
  const std::vector<double> r = {0.5, -2, 1, 0, 1, 2};
  const std::vector<double> w = {2, 1, 0.5};
  const auto out = ref::fused_add_rmsnorm(x, r, w, 2, 3, 1e-6);
  const std::vector<double> sum = {1.5, 0, 4, 4, 0, 2.5};
  EXPECT_EQ(out.residual, sum);
  EXPECT_EQ(out.y, ref::rmsnorm(sum, w, 2, 3, 1e-6));
  EXPECT_THROW(ref::fused_add_rmsnorm(x, {1, 2}, w, 2, 3, 1e-6), std::invalid_argument);
}

TEST(ReferenceLayerNorm, GivesZeroMeanUnitVarianceThenScalesAndShifts) {
  const std::vector<double> x = {1, 2, 3, 4, 10, 10, 10, 10};
  const auto out = ref::layernorm(x, {1, 1, 1, 1}, {0, 0, 0, 0}, 2, 4, 1e-12);
  EXPECT_DOUBLE_EQ(out.mean[0], 2.5);
  EXPECT_NEAR(out.rstd[0], 1.0 / std::sqrt(1.25), 1e-12);  // biased variance: 5/4
  double m = 0, v = 0;
  for (int c = 0; c < 4; ++c) m += out.y[c] / 4;
  for (int c = 0; c < 4; ++c) v += out.y[c] * out.y[c] / 4;
  EXPECT_NEAR(m, 0.0, 1e-15);
  EXPECT_NEAR(v, 1.0, 1e-10);
  // A constant row has variance 0: eps keeps it finite, and y is beta.
  EXPECT_DOUBLE_EQ(out.mean[1], 10.0);
  for (int c = 4; c < 8; ++c) EXPECT_EQ(out.y[c], 0.0);
  const std::vector<double> beta = {1, -1, 0, 5};
  const auto shifted = ref::layernorm(x, {2, 2, 2, 2}, beta, 2, 4, 1e-12);
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(shifted.y[c], 2 * out.y[c] + beta[c], 1e-12);
  for (int c = 0; c < 4; ++c) EXPECT_EQ(shifted.y[4 + c], beta[c]) << "constant row: y = beta";
}

TEST(ReferenceLayerNorm, IsExactForALargeMeanAndASmallSpread) {
  // Values 1e8 + {-1, 0, 1, 0}: the naive E[x^2] - E[x]^2 in float64 loses it all (1e16 + 1
  // rounds to 1e16); the two-pass reference keeps var = 0.5 exactly.
  const auto out =
      ref::layernorm({1e8 - 1, 1e8, 1e8 + 1, 1e8}, {1, 1, 1, 1}, {0, 0, 0, 0}, 1, 4, 0.0);
  EXPECT_EQ(out.mean[0], 1e8);
  EXPECT_DOUBLE_EQ(out.rstd[0], 1.0 / std::sqrt(0.5));
}

TEST(ReferenceLayerNorm, NaNMakesOnlyItsOwnRowAndStatisticsNaN) {
  const auto out = ref::layernorm({1, kNaN, 3, 1, 2, 3}, {1, 1, 1}, {0, 0, 0}, 2, 3, 1e-5);
  EXPECT_TRUE(std::isnan(out.mean[0]));
  EXPECT_TRUE(std::isnan(out.rstd[0]));
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::isnan(out.y[c])) << "column " << c;
  EXPECT_DOUBLE_EQ(out.mean[1], 2.0);
  for (int c = 3; c < 6; ++c) EXPECT_TRUE(std::isfinite(out.y[c]));
}

TEST(ReferenceNorm, WrongShapesThrowAndEmptyShapesAreEmpty) {
  EXPECT_THROW(ref::rmsnorm({1, 2, 3}, {1, 1}, 1, 3, 1e-6), std::invalid_argument);
  EXPECT_THROW(ref::layernorm({1, 2, 3}, {1, 1, 1}, {0, 0}, 1, 3, 1e-5), std::invalid_argument);
  EXPECT_TRUE(ref::rmsnorm({}, {1, 1}, 0, 2, 1e-6).empty());
  EXPECT_TRUE(ref::layernorm({}, {1}, {0}, 0, 1, 1e-5).y.empty());
}

}  // namespace
