// The row softmax reference (reference/softmax.h) is the ground truth of Days 5 and 6: check it
// against closed forms, its invariances, and PyTorch's behaviour on non-finite inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "course/reference/softmax.h"

namespace {

namespace ref = course::reference;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(ReferenceSoftmax, MatchesKnownValues) {
  // torch.softmax(torch.tensor([1., 2., 3.], dtype=torch.float64), 0)
  const auto y = ref::softmax_rows({1, 2, 3}, 1, 3);
  EXPECT_NEAR(y[0], 0.09003057317038046, 1e-15);
  EXPECT_NEAR(y[1], 0.24472847105479767, 1e-15);
  EXPECT_NEAR(y[2], 0.66524095577482190, 1e-15);
}

TEST(ReferenceSoftmax, EveryRowSumsToOneAndRowsAreIndependent) {
  const std::vector<double> x = {0.5, -1, 2, 7,  //
                                 3,   3,  3, 3,  //
                                 -5,  0,  5, 10};
  const auto y = ref::softmax_rows(x, 3, 4);
  for (int r = 0; r < 3; ++r) {
    double sum = 0;
    for (int c = 0; c < 4; ++c) sum += y[r * 4 + c];
    EXPECT_NEAR(sum, 1.0, 1e-15) << "row " << r;
  }
  for (int c = 0; c < 4; ++c) EXPECT_DOUBLE_EQ(y[4 + c], 0.25);
  // Row 0 alone gives the same values as row 0 inside the matrix.
  const auto alone = ref::softmax_rows({0.5, -1, 2, 7}, 1, 4);
  for (int c = 0; c < 4; ++c) EXPECT_DOUBLE_EQ(y[c], alone[c]);
}

TEST(ReferenceSoftmax, IsInvariantToAddingAConstantSoLargeInputsDoNotOverflow) {
  const auto base = ref::softmax_rows({1, 2, 3}, 1, 3);
  const auto shifted = ref::softmax_rows({1e4 + 1, 1e4 + 2, 1e4 + 3}, 1, 3);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(shifted[c], base[c], 1e-12);
  // exp(1e4) overflows float64; the stable form never computes it.
  const auto huge = ref::softmax_rows({3e38, -3e38, 3e38, 1e308, 1e308}, 1, 5);
  EXPECT_DOUBLE_EQ(huge[0], 0.0);
  EXPECT_DOUBLE_EQ(huge[3], 0.5);
  EXPECT_DOUBLE_EQ(huge[4], 0.5);
  const auto far = ref::softmax_rows({3e38, -3e38}, 1, 2);
  EXPECT_DOUBLE_EQ(far[0], 1.0);
  EXPECT_DOUBLE_EQ(far[1], 0.0);
}

TEST(ReferenceSoftmax, OneColumnGivesOne) {
  const auto y = ref::softmax_rows({-7, 0, 1e30}, 3, 1);
  for (double v : y) EXPECT_DOUBLE_EQ(v, 1.0);
}

TEST(ReferenceSoftmax, MinusInfinityIsAMaskedOutEntry) {
  const auto y = ref::softmax_rows({-kInf, 0, -kInf, 0}, 1, 4);
  EXPECT_DOUBLE_EQ(y[0], 0.0);
  EXPECT_DOUBLE_EQ(y[1], 0.5);
  EXPECT_DOUBLE_EQ(y[2], 0.0);
  EXPECT_DOUBLE_EQ(y[3], 0.5);
}

// PyTorch: torch.softmax(torch.full((3,), -inf), 0) is [nan, nan, nan].
TEST(ReferenceSoftmax, AllMinusInfinityRowIsNaNLikePyTorch) {
  const auto y = ref::softmax_rows({-kInf, -kInf, -kInf, 1, 2, 3}, 2, 3);
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::isnan(y[c])) << "column " << c;
  for (int c = 3; c < 6; ++c) EXPECT_TRUE(std::isfinite(y[c])) << "the next row is unaffected";
}

TEST(ReferenceSoftmax, NaNMakesTheWholeRowNaN) {
  const auto y = ref::softmax_rows({1, kNaN, 3, 1, 2, 3}, 2, 3);
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::isnan(y[c])) << "column " << c;
  for (int c = 3; c < 6; ++c) EXPECT_TRUE(std::isfinite(y[c])) << "the next row is unaffected";
}

// PyTorch: torch.softmax(torch.tensor([0., inf]), 0) is [nan, nan] (inf - inf), not [0, 1].
TEST(ReferenceSoftmax, PlusInfinityMakesTheWholeRowNaNLikePyTorch) {
  const auto y = ref::softmax_rows({0, kInf, -kInf}, 1, 3);
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::isnan(y[c])) << "column " << c;
}

TEST(ReferenceSoftmax, EmptyShapesGiveEmptyOutputsAndWrongSizesThrow) {
  EXPECT_TRUE(ref::softmax_rows({}, 0, 5).empty());
  EXPECT_TRUE(ref::softmax_rows({}, 5, 0).empty());
  EXPECT_THROW(ref::softmax_rows({1, 2, 3}, 2, 2), std::invalid_argument);
}

}  // namespace
