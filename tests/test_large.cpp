// The large-array helpers' host side (course/large.h): the pattern the GPU fills and the host
// recomputes, the indices the index tests check, and how their failures read. The device side
// (fills, gathers) runs in the labs' LargeIndex tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "course/dtype.h"
#include "course/large.h"

namespace {

using course::kTwoTo31;
using course::kTwoTo32;
using course::Pattern;

TEST(LargePattern, StaysInItsRangeForEveryDtype) {
  const Pattern p{12345, -1.0, 1.0};
  for (std::int64_t i = 0; i < 100000; ++i) {
    const double d =
        course::detail::pattern_double(p.seed, static_cast<std::uint64_t>(i), p.lo, p.hi);
    ASSERT_GE(d, -1.0) << i;
    ASSERT_LT(d, 1.0) << i;
    ASSERT_LE(std::fabs(course::pattern_double_value<float>(p, i)), 1.0) << i;
    ASSERT_LE(std::fabs(course::pattern_double_value<course::half>(p, i)), 1.0) << i;
    ASSERT_LE(std::fabs(course::pattern_double_value<course::bfloat16>(p, i)), 1.0) << i;
  }
  const Pattern shifted{7, -3.25, -2.25};
  for (std::int64_t i = 0; i < 10000; ++i) {
    const double d = course::pattern_double_value<double>(shifted, i);
    ASSERT_GE(d, -3.25) << i;
    ASSERT_LT(d, -2.25) << i;
  }
}

TEST(LargePattern, IsDeterministicAndDependsOnSeedAndIndex) {
  const Pattern a{42, -1.0, 1.0}, b{43, -1.0, 1.0};
  int same_seed_differs = 0, other_seed_equal = 0;
  for (const std::int64_t i : {std::int64_t{0}, std::int64_t{1}, kTwoTo31 - 1, kTwoTo31,
                               kTwoTo31 + 17, kTwoTo32, kTwoTo32 + 5}) {
    EXPECT_EQ(course::pattern_double_value<float>(a, i), course::pattern_double_value<float>(a, i));
    if (course::pattern_double_value<float>(a, i) != course::pattern_double_value<float>(a, i + 1))
      ++same_seed_differs;
    if (course::pattern_double_value<float>(a, i) == course::pattern_double_value<float>(b, i))
      ++other_seed_equal;
  }
  EXPECT_EQ(same_seed_differs, 7);
  EXPECT_EQ(other_seed_equal, 0);
  // Element 2^31 is not element 0: a wrapped index reads a visibly different value.
  EXPECT_NE(course::pattern_double_value<float>(a, kTwoTo31),
            course::pattern_double_value<float>(a, 0));
}

TEST(LargePattern, IsSpreadOverItsRange) {
  // Mean near 0 and about a tenth of the values in each tenth of [-1, 1).
  const Pattern p{99, -1.0, 1.0};
  const int n = 200000;
  double sum = 0.0;
  std::vector<int> bins(10, 0);
  for (int i = 0; i < n; ++i) {
    const double v =
        course::detail::pattern_double(p.seed, static_cast<std::uint64_t>(i), -1.0, 1.0);
    sum += v;
    ++bins[static_cast<int>((v + 1.0) * 5.0)];
  }
  EXPECT_LT(std::fabs(sum / n), 0.01);
  for (int b : bins) EXPECT_NEAR(b, n / 10, n / 100);
}

TEST(LargePattern, RoundsLikeTheDtype) {
  const Pattern p{5, -1.0, 1.0};
  for (std::int64_t i = 0; i < 1000; ++i) {
    const double d =
        course::detail::pattern_double(p.seed, static_cast<std::uint64_t>(i), p.lo, p.hi);
    EXPECT_EQ(course::pattern_double_value<course::half>(p, i),
              course::round_through<course::half>(d));
    EXPECT_EQ(course::pattern_double_value<float>(p, i),
              static_cast<double>(static_cast<float>(d)));
  }
}

TEST(LargeCyclic, CountsAgreeWithTheValues) {
  for (const std::int64_t n : {1, 7, 1000, 4999, 5000, 5003, 123457}) {
    const std::int64_t period = 37, run = 5;
    std::vector<std::int64_t> counts(period, 0);
    for (std::int64_t i = 0; i < n; ++i) ++counts[course::cyclic_value(i, 0, period, run)];
    for (std::int64_t k = 0; k < period; ++k)
      ASSERT_EQ(course::cyclic_count(n, k, period, run), counts[k]) << "n = " << n << ", k = " << k;
  }
  EXPECT_EQ(course::cyclic_value(kTwoTo31 + 3, 10, 1000, 1), 10 + (kTwoTo31 + 3) % 1000);
}

TEST(LargeSamples, CoverTheStartTheWrapPointsAndTheEnd) {
  const std::int64_t n = kTwoTo32 + 17;
  const auto at = course::large_sample_indices(n, 1, 40, 256);
  ASSERT_TRUE(std::is_sorted(at.begin(), at.end()));
  EXPECT_EQ(std::set<std::int64_t>(at.begin(), at.end()).size(), at.size());
  const std::set<std::int64_t> s(at.begin(), at.end());
  for (const std::int64_t i : {std::int64_t{0}, std::int64_t{79}, kTwoTo31 - 40, kTwoTo31 - 1,
                               kTwoTo31, kTwoTo31 + 39, kTwoTo32 - 1, kTwoTo32, n - 40, n - 1})
    EXPECT_EQ(s.count(i), 1u) << i;
  EXPECT_GE(at.front(), 0);
  EXPECT_LT(at.back(), n);
  EXPECT_GT(at.size(), 5u * 80u);  // the windows and most of the random draws
  // A small array: only what exists.
  const auto small = course::large_sample_indices(10, 1, 40, 5);
  EXPECT_EQ(small.size(), 10u);
}

TEST(LargeSamples, RowsHoldTheWrapPoints) {
  const std::int64_t cols = 4099, rows = kTwoTo31 / cols + 2;
  const auto r = course::large_sample_rows(rows, cols, 3);
  const std::set<std::int64_t> s(r.begin(), r.end());
  EXPECT_EQ(s.count(0), 1u);
  EXPECT_EQ(s.count(rows - 1), 1u);
  EXPECT_EQ(s.count((kTwoTo31 - 1) / cols), 1u);
  EXPECT_EQ(s.count(kTwoTo31 / cols), 1u);
  for (std::int64_t row : r) EXPECT_LT(row, rows);
  const auto idx = course::indices_of_rows({2, 5}, 3);
  EXPECT_EQ(idx, (std::vector<std::int64_t>{6, 7, 8, 15, 16, 17}));
}

TEST(LargeSamples, DescribeIndicesNearTheWrapPoints) {
  EXPECT_EQ(course::describe_index(kTwoTo31), "2147483648 = 2^31");
  EXPECT_EQ(course::describe_index(kTwoTo31 + 5), "2147483653 = 2^31 + 5");
  EXPECT_EQ(course::describe_index(kTwoTo32 - 1), "4294967295 = 2^32 - 1");
  EXPECT_EQ(course::describe_index(12), "12");
}

TEST(LargeCompare, SaysThatAnIndexWrapsWhenOnlyTheUpperElementsAreWrong) {
  const std::vector<std::int64_t> at = {0, 1, kTwoTo31 - 1, kTwoTo31, kTwoTo31 + 1};
  const std::vector<double> want = {0.5, -0.25, 0.75, 0.125, -0.5};
  std::vector<float> got = {0.5f, -0.25f, 0.75f, 0.0f, 0.0f};
  course::CompareOptions options;
  options.what = "y";
  auto c = course::compare_sampled(got, want, at, options);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("wraps at 2^31"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("2147483648 = 2^31"), std::string::npos) << c.message;
  // Never written above 2^31: the same diagnosis.
  got[3] = got[4] = course::DType<float>::poison();
  c = course::compare_sampled(got, want, at, options);
  EXPECT_NE(c.message.find("wraps at 2^31"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("<never written>"), std::string::npos) << c.message;
}

TEST(LargeCompare, SaysNeverWrittenWhenNothingWas) {
  const std::vector<std::int64_t> at = {0, kTwoTo31};
  const std::vector<float> got(2, course::DType<float>::poison());
  const auto c = course::compare_sampled(got, std::vector<double>{1.0, 2.0}, at);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("No sampled element"), std::string::npos) << c.message;
}

TEST(LargeCompare, PassesRightValuesAndBlamesWrongOnesBelowTheWrap) {
  const std::vector<std::int64_t> at = {3, 4, kTwoTo31};
  const std::vector<double> want = {1.0, 2.0, 3.0};
  EXPECT_TRUE(course::compare_sampled(std::vector<float>{1.0f, 2.0f, 3.0f}, want, at).ok);
  const auto c = course::compare_sampled(std::vector<float>{1.0f, 7.0f, 3.0f}, want, at);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.message.find("wraps"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("index 4"), std::string::npos) << c.message;
}

}  // namespace
