// course::cublas_dim (course/cublas.h): the vendor baselines' int dimensions, checked instead of
// wrapped, with a message that names the call, the dimension and its value.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "course/check.h"
#include "course/cublas.h"

namespace {

std::string message_of(std::int64_t value, std::int64_t low = 0) {
  try {
    course::cublas_dim("gemm_0_cublas", "K", value, low);
  } catch (const course::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(CublasDim, PassesEveryIntValue) {
  EXPECT_EQ(course::cublas_dim("f", "M", 0), 0);
  EXPECT_EQ(course::cublas_dim("f", "M", 4097), 4097);
  EXPECT_EQ(course::cublas_dim("f", "M", (std::int64_t{1} << 31) - 1), 2147483647);
}

TEST(CublasDim, RefusesWhatAnIntCannotHold) {
  EXPECT_EQ(message_of(std::int64_t{1} << 31),
            "gemm_0_cublas: K = 2147483648 must be below 2^31 (cuBLAS takes int)");
  EXPECT_EQ(message_of(-1), "gemm_0_cublas: K = -1 must be >= 0");
}

TEST(CublasDim, KeepsTheCallersLowerBound) {
  EXPECT_EQ(message_of(0, 1), "gemm_0_cublas: K = 0 must be >= 1");
  EXPECT_EQ(course::cublas_dim("f", "K", 1, 1), 1);
}

}  // namespace
