// The transpose reference (reference/transpose.h), Day 4.
#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <vector>

#include "course/reference/transpose.h"

namespace {

namespace ref = course::reference;

TEST(ReferenceTranspose, SwapsRowsAndColumnsOfARectangle) {
  // [2, 3]          [3, 2]
  //  1 2 3    ->     1 4
  //  4 5 6           2 5
  //                  3 6
  EXPECT_EQ(ref::transpose({1, 2, 3, 4, 5, 6}, 2, 3), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(ReferenceTranspose, TransposingTwiceGivesBackTheInput) {
  std::vector<double> x(7 * 5);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i) * 0.5 - 3.0;
  EXPECT_EQ(ref::transpose(ref::transpose(x, 7, 5), 5, 7), x);
}

TEST(ReferenceTranspose, ARowBecomesAColumnWithTheSameValuesInOrder) {
  const std::vector<double> row = {3, 1, 4, 1, 5};
  EXPECT_EQ(ref::transpose(row, 1, 5), row);
  EXPECT_EQ(ref::transpose(row, 5, 1), row);
}

TEST(ReferenceTranspose, EmptyMatricesAndWrongSizes) {
  EXPECT_TRUE(ref::transpose({}, 0, 4).empty());
  EXPECT_TRUE(ref::transpose({}, 4, 0).empty());
  EXPECT_THROW(ref::transpose({1, 2, 3}, 2, 2), std::invalid_argument);
}

TEST(ReferenceTranspose, SourceIndexAgreesWithTheFullTranspose) {
  const std::size_t rows = 6, cols = 11;
  std::vector<double> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
  const auto t = ref::transpose(x, rows, cols);
  for (std::size_t i = 0; i < t.size(); ++i)
    EXPECT_EQ(x[ref::transpose_source_index(rows, cols, i)], t[i]) << "output index " << i;
}

}  // namespace
