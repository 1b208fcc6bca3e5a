// Day 3's references (course/reference/fastmath.h) against values known independently:
// exact powers of two, IEEE special cases, hand-counted ulps and hand-summed segments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "course/reference/fastmath.h"

namespace {

namespace ref = course::reference;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(ReferenceFastMath, FunctionsAtExactPoints) {
  EXPECT_EQ(ref::exp2(10.0), 1024.0);
  EXPECT_EQ(ref::exp2(-1.0), 0.5);
  EXPECT_EQ(ref::exp2(-kInf), 0.0);
  EXPECT_EQ(ref::log2(8.0), 3.0);
  EXPECT_EQ(ref::log2(0.0), -kInf);
  EXPECT_EQ(ref::log2(-0.0), -kInf);
  EXPECT_TRUE(std::isnan(ref::log2(-1.0)));
  EXPECT_EQ(ref::rsqrt(4.0), 0.5);
  EXPECT_EQ(ref::rsqrt(0.0), kInf);
  EXPECT_EQ(ref::rsqrt(-0.0), -kInf);  // IEEE 754 rSqrt(-0) = -inf
  EXPECT_EQ(ref::rsqrt(kInf), 0.0);
  EXPECT_TRUE(std::isnan(ref::rsqrt(-4.0)));
  EXPECT_EQ(ref::tanh(kInf), 1.0);
  EXPECT_EQ(ref::tanh(-kInf), -1.0);
  EXPECT_NEAR(ref::tanh(0.5), 0.46211715726000974, 1e-16);
  EXPECT_TRUE(std::isnan(ref::tanh(kNaN)));
}

TEST(ReferenceFastMath, RelativeAndAbsoluteError) {
  EXPECT_DOUBLE_EQ(ref::relative_error(1.5, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(ref::absolute_error(1.5, 1.0), 0.5);
  EXPECT_EQ(ref::relative_error(kInf, kInf), 0.0);
  EXPECT_EQ(ref::relative_error(kNaN, kNaN), 0.0);
  EXPECT_EQ(ref::relative_error(1.0, kNaN), kInf);
  EXPECT_EQ(ref::relative_error(kNaN, 1.0), kInf);
  EXPECT_EQ(ref::relative_error(1e-30, 0.0), kInf);
  EXPECT_EQ(ref::relative_error(-kInf, kInf), kInf);
  EXPECT_EQ(ref::absolute_error(0.0, -0.0), 0.0);
}

TEST(ReferenceFastMath, UlpDistanceCountsFloat32Steps) {
  const float one = 1.0f;
  EXPECT_EQ(ref::ulp_distance_f32(one, 1.0), 0.0);
  EXPECT_EQ(ref::ulp_distance_f32(std::nextafter(one, 2.0f), 1.0), 1.0);
  EXPECT_EQ(ref::ulp_distance_f32(std::nextafter(std::nextafter(one, 0.0f), 0.0f), 1.0), 2.0);
  // The exact value is rounded to float32 first: 1 + 2^-25 rounds to 1.
  EXPECT_EQ(ref::ulp_distance_f32(one, 1.0 + std::ldexp(1.0, -25)), 0.0);
  // -0 and +0 are the same value; the smallest subnormals on either side are two steps apart.
  EXPECT_EQ(ref::ulp_distance_f32(-0.0f, 0.0), 0.0);
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(ref::ulp_distance_f32(tiny, -static_cast<double>(tiny)), 2.0);
  // Overflow: 2^128 rounds to +inf, which is one step above FLT_MAX.
  EXPECT_EQ(ref::ulp_distance_f32(std::numeric_limits<float>::infinity(), std::ldexp(1.0, 128)),
            0.0);
  EXPECT_EQ(ref::ulp_distance_f32(std::numeric_limits<float>::max(), std::ldexp(1.0, 128)), 1.0);
  EXPECT_EQ(ref::ulp_distance_f32(std::nanf(""), kNaN), 0.0);
  EXPECT_EQ(ref::ulp_distance_f32(std::nanf(""), 1.0), kInf);
  EXPECT_EQ(ref::ulp_distance_f32(1.0f, kNaN), kInf);
}

TEST(ReferenceFastMath, SegmentSumsIncludeTheShortLastSegment) {
  std::vector<double> x(33);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i + 1);
  const auto s = ref::segment_sums(x);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], 32.0 * 33.0 / 2.0);
  EXPECT_EQ(s[1], 33.0);
  EXPECT_TRUE(ref::segment_sums({}).empty());
  EXPECT_EQ(ref::segment_sums({1, 2, 3, 4, 5}, 2), (std::vector<double>{3, 7, 5}));
  EXPECT_TRUE(std::isnan(ref::segment_sums({kInf, -kInf})[0]));
}

TEST(ReferenceFastMath, SegmentMaxPropagatesNaNAndIgnoresMissingLanes) {
  EXPECT_EQ(ref::segment_max({-3, -1, -2, -5, -4}, 2), (std::vector<double>{-1, -2, -4}));
  const auto with_nan = ref::segment_max({1, kNaN, 2, 3}, 4);
  EXPECT_TRUE(std::isnan(with_nan[0]));
  const auto nan_first = ref::segment_max({kNaN, 5, 7}, 4);
  EXPECT_TRUE(std::isnan(nan_first[0]));
  EXPECT_EQ(ref::segment_max({-kInf, -kInf}, 4)[0], -kInf);
  EXPECT_EQ(ref::segment_max({1, kInf}, 4)[0], kInf);
}

TEST(ReferenceFastMath, SegmentBroadcastTakesTheSourceLaneOrZero) {
  EXPECT_EQ(ref::segment_broadcast({10, 11, 12, 13, 14}, 1, 2),
            (std::vector<double>{11, 11, 13, 13, 0}));  // the last segment has no lane 1
  EXPECT_EQ(ref::segment_broadcast({10, 11, 12}, 0, 2), (std::vector<double>{10, 10, 12}));
  EXPECT_THROW(ref::segment_broadcast({1}, 2, 2), std::invalid_argument);
}

TEST(ReferenceFastMath, SegmentScanRestartsAtEverySegment) {
  EXPECT_EQ(ref::segment_inclusive_scan({1, 2, 3, 4, 5}, 2), (std::vector<double>{1, 3, 3, 7, 5}));
  std::vector<double> ones(70, 1.0);
  const auto y = ref::segment_inclusive_scan(ones);
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], static_cast<double>(i % 32 + 1)) << i;
}

}  // namespace
