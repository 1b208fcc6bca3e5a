// The GEMM reference against products worked out by hand, in both layouts of B.
#include <gtest/gtest.h>

#include <vector>

#include "course/reference/gemm.h"

namespace {

using course::reference::BLayout;
double id(double v) { return v; }

// A = [[1, 2, 3], [4, 5, 6]] (2 x 3), B = [[1, -1], [0, 2], [3, 1]] (3 x 2):
// C = [[10, 6], [22, 12]].
const std::vector<double> kA = {1, 2, 3, 4, 5, 6};
const std::vector<double> kBRowMajor = {1, -1, 0, 2, 3, 1};  // [K=3, N=2]
const std::vector<double> kBColMajor = {1, 0, 3, -1, 2, 1};  // [N=2, K=3]
const std::vector<double> kC = {10, 6, 22, 12};

TEST(ReferenceGemm, RowMajorBMatchesHandComputedProduct) {
  EXPECT_EQ(course::reference::gemm(kA, kBRowMajor, 2, 2, 3, BLayout::kRowMajor, id), kC);
}

TEST(ReferenceGemm, ColumnMajorBMatchesTheSameProduct) {
  EXPECT_EQ(course::reference::gemm(kA, kBColMajor, 2, 2, 3, BLayout::kColMajor, id), kC);
}

TEST(ReferenceGemm, OneElementAndItsAbsoluteSum) {
  double abs = 0.0;
  // C[0, 1] = 1*(-1) + 2*2 + 3*1 = 6; |products| = 1 + 4 + 3 = 8.
  EXPECT_EQ(course::reference::gemm_at(kA, kBRowMajor, 2, 3, BLayout::kRowMajor, 0, 1, id, &abs),
            6.0);
  EXPECT_EQ(abs, 8.0);
}

}  // namespace
