#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

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

TEST(Random, ValuesDoNotDependOnHowTheArrayIsSplitAmongThreads) {
  // Large arrays are filled in parallel chunks whose boundaries depend on n and the core
  // count; element i must not. A longer array extends a shorter one with the same seed.
  const auto small = course::random_uniform<float>(1000, 9);
  const auto large = course::random_uniform<float>((std::size_t{5} << 20) + 3, 9);
  for (std::size_t i = 0; i < small.size(); ++i) ASSERT_EQ(small[i], large[i]) << "element " << i;
  const auto larger = course::random_uniform<float>((std::size_t{7} << 20) + 1, 9);
  for (std::size_t i = 0; i < large.size(); i += 4099)
    ASSERT_EQ(large[i], larger[i]) << "element " << i;
  const auto doubles = course::as_doubles(large);
  for (std::size_t i = 0; i < large.size(); i += 4099) ASSERT_EQ(doubles[i], large[i]);
}

TEST(Random, UniformAndNormalHaveTheirMoments) {
  const std::size_t n = std::size_t{1} << 21;
  double sum = 0.0, sum_sq = 0.0;
  for (double v : course::random_uniform<double>(n, 3, 2.0, 6.0)) {
    ASSERT_GE(v, 2.0);
    ASSERT_LT(v, 6.0);
    sum += v;
    sum_sq += v * v;
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 4.0, 0.01);
  EXPECT_NEAR(sum_sq / n - mean * mean, 16.0 / 12.0, 0.01);  // (hi - lo)^2 / 12

  sum = sum_sq = 0.0;
  for (double v : course::random_normal<double>(n, 4, 1.0, 2.0)) {
    sum += v;
    sum_sq += v * v;
  }
  const double normal_mean = sum / n;
  EXPECT_NEAR(normal_mean, 1.0, 0.01);
  EXPECT_NEAR(std::sqrt(sum_sq / n - normal_mean * normal_mean), 2.0, 0.01);

  std::vector<int> counts(5, 0);
  for (int v : course::random_uniform<int>(n, 5, -2, 2)) ++counts[v + 2];
  for (int c : counts) EXPECT_NEAR(c, n / 5.0, 0.01 * n) << "each of -2..2 a fifth of the time";
}

TEST(Random, SaltedSeedsDiffer) {
  EXPECT_NE(course::seed_for(0), course::seed_for(1));
  EXPECT_EQ(course::seed_for(5), course::seed_for(5));
}

}  // namespace
