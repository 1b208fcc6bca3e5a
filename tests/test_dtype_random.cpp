#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "course/dtype.h"
#include "course/random.h"

namespace {

using course::DType;

TEST(Poison, IsANaNThatArithmeticDoesNotProduce) {
  EXPECT_TRUE(std::isnan(DType<float>::poison()));
  EXPECT_TRUE(DType<float>::is_poison(DType<float>::poison()));
  EXPECT_FALSE(DType<float>::is_poison(NAN));
  EXPECT_FALSE(DType<float>::is_poison(0.0f / 0.0f * 1.0f));
  EXPECT_TRUE(std::isnan(DType<course::half>::to_double(DType<course::half>::poison())));
  EXPECT_TRUE(std::isnan(DType<course::bfloat16>::to_double(DType<course::bfloat16>::poison())));
  EXPECT_FALSE(DType<course::half>::is_poison(DType<course::half>::from_double(NAN)));
  EXPECT_TRUE(DType<std::int32_t>::is_poison(DType<std::int32_t>::poison()));
}

TEST(Dtype, RoundTripsRepresentableValues) {
  for (double v : {0.0, 1.0, -2.5, 1024.0, 0.125}) {
    EXPECT_EQ(DType<course::half>::to_double(DType<course::half>::from_double(v)), v);
    EXPECT_EQ(DType<course::bfloat16>::to_double(DType<course::bfloat16>::from_double(v)), v);
  }
  EXPECT_EQ(course::round_through<course::bfloat16>(1.0 + 1.0 / 512), 1.0);
}

TEST(Dtype, TolerancesAreOrderedByPrecision) {
  EXPECT_LT(DType<float>::tolerance.norm, DType<course::half>::tolerance.norm);
  EXPECT_LT(DType<course::half>::tolerance.norm, DType<course::bfloat16>::tolerance.norm);
}

TEST(Random, SameSeedSameValuesOtherSeedOtherValues) {
  const auto a = course::random_uniform<float>(1000, 42);
  const auto b = course::random_uniform<float>(1000, 42);
  const auto c = course::random_uniform<float>(1000, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Random, StaysInsideTheRequestedRange) {
  for (float v : course::random_uniform<float>(10000, 7, -3.0, 5.0)) {
    EXPECT_GE(v, -3.0f);
    EXPECT_LE(v, 5.0f);
  }
  for (int v : course::random_uniform<int>(10000, 7, -2, 2)) {
    EXPECT_GE(v, -2);
    EXPECT_LE(v, 2);
  }
}

TEST(Random, SaltedSeedsDiffer) {
  EXPECT_NE(course::seed_for(0), course::seed_for(1));
  EXPECT_EQ(course::seed_for(5), course::seed_for(5));
}

}  // namespace
