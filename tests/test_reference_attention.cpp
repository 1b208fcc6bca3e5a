// The attention reference (reference/attention.h) is the ground truth of Days 11 and 12: check it
// against cases worked out by hand, the causal limit, the split-and-merge identity and overflow.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "course/reference/attention.h"

namespace {

namespace ref = course::reference;
constexpr double kInf = std::numeric_limits<double>::infinity();
double id(double v) { return v; }

// Keys and values row-major [num_keys, head_dim].
ref::AttentionRow run(const std::vector<double>& q, const std::vector<double>& k,
                      const std::vector<double>& v, std::size_t head_dim, double scale,
                      std::size_t visible = ref::kAllKeys) {
  const auto d = static_cast<std::ptrdiff_t>(head_dim);
  return ref::attention_row_strided(q.data(), k.data(), d, v.data(), d, k.size() / head_dim,
                                    head_dim, scale, id, visible);
}

TEST(ReferenceAttention, OneKeyReturnsItsValueAndItsScore) {
  const auto r = run({1, 2}, {3, -1}, {0.5, -7}, 2, 0.25);
  EXPECT_DOUBLE_EQ(r.o[0], 0.5);
  EXPECT_DOUBLE_EQ(r.o[1], -7.0);
  EXPECT_DOUBLE_EQ(r.lse, 0.25 * (3 - 2));
}

TEST(ReferenceAttention, TwoKeysMatchHandComputedSoftmax) {
  // s = [1, 0]: weights e / (e + 1) and 1 / (e + 1); lse = log(e + 1).
  const auto r = run({1, 0}, {1, 0, 0, 1}, {2, 0, 0, 4}, 2, 1.0);
  const double e = std::exp(1.0);
  EXPECT_NEAR(r.o[0], 2 * e / (e + 1), 1e-15);
  EXPECT_NEAR(r.o[1], 4 / (e + 1), 1e-15);
  EXPECT_NEAR(r.lse, std::log(e + 1), 1e-15);
}

TEST(ReferenceAttention, EqualScoresAverageTheValues) {
  // q = 0: every score is 0, lse = log(3), o = the mean of the value rows.
  const auto r = run({0, 0}, {1, 2, 3, 4, 5, 6}, {3, 0, 6, 3, 0, -3}, 2, 1.0);
  EXPECT_NEAR(r.o[0], 3.0, 1e-15);
  EXPECT_NEAR(r.o[1], 0.0, 1e-15);
  EXPECT_NEAR(r.lse, std::log(3.0), 1e-15);
}

TEST(ReferenceAttention, LargeScoresDoNotOverflow) {
  // s = [1e4, 1e4 - 1]: exp(1e4) overflows float64, the stable form never computes it.
  const auto r = run({1e4}, {1, 1 - 1e-4}, {1, 0}, 1, 1.0);
  const double e = std::exp(1.0);
  EXPECT_NEAR(r.o[0], e / (e + 1), 1e-9);
  EXPECT_NEAR(r.lse, 1e4 + std::log(1 + 1 / e), 1e-9);
}

TEST(ReferenceAttention, CausalLimitIgnoresLaterKeys) {
  const std::vector<double> k = {1, 0, 0, 1, 5, 5}, v = {2, 0, 0, 4, 100, 100};
  const auto limited = run({1, 0}, k, v, 2, 1.0, 2);
  const auto first_two = run({1, 0}, {1, 0, 0, 1}, {2, 0, 0, 4}, 2, 1.0);
  EXPECT_EQ(limited.o, first_two.o);
  EXPECT_EQ(limited.lse, first_two.lse);
  // A limit past the end is no limit.
  const auto all = run({1, 0}, k, v, 2, 1.0);
  const auto past = run({1, 0}, k, v, 2, 1.0, 17);
  EXPECT_EQ(all.o, past.o);
  EXPECT_EQ(all.lse, past.lse);
}

TEST(ReferenceAttention, CausalVisibleKeysIsBottomRightAligned) {
  // 3 queries, 5 keys: the last query sees all 5, the first sees 3.
  EXPECT_EQ(ref::causal_visible_keys(0, 3, 5), 3u);
  EXPECT_EQ(ref::causal_visible_keys(2, 3, 5), 5u);
  // Square: query i sees keys 0..i.
  EXPECT_EQ(ref::causal_visible_keys(0, 4, 4), 1u);
  EXPECT_EQ(ref::causal_visible_keys(3, 4, 4), 4u);
  // Decoding: one query sees everything.
  EXPECT_EQ(ref::causal_visible_keys(0, 1, 1000), 1000u);
  // More queries than keys: the first ones see nothing.
  EXPECT_EQ(ref::causal_visible_keys(0, 4, 2), 0u);
  EXPECT_EQ(ref::causal_visible_keys(2, 4, 2), 1u);
}

TEST(ReferenceAttention, NoVisibleKeyGivesZeroAndMinusInfinity) {
  const auto r = run({1, 2}, {3, -1}, {0.5, -7}, 2, 1.0, 0);
  EXPECT_EQ(r.o, std::vector<double>({0.0, 0.0}));
  EXPECT_EQ(r.lse, -kInf);
}

TEST(ReferenceAttention, MergingTwoSplitsEqualsTheWhole) {
  const std::vector<double> q = {0.3, -1.2, 0.7};
  const std::vector<double> k = {1, 2, 3, -1, 0.5, 0, 2, 2, -2, 0.1, 0.2, 0.3, -3, 1, 1};
  const std::vector<double> v = {1, 0, 0, 0, 1, 0, 0, 0, 1, 5, 5, 5, -1, 2, -3};
  const auto whole = run(q, k, v, 3, 0.5);
  // Keys 0..1 and 2..4.
  const auto a = run(q, std::vector<double>(k.begin(), k.begin() + 6),
                     std::vector<double>(v.begin(), v.begin() + 6), 3, 0.5);
  const auto b = run(q, std::vector<double>(k.begin() + 6, k.end()),
                     std::vector<double>(v.begin() + 6, v.end()), 3, 0.5);
  const auto merged = ref::merge_states(a, b);
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(merged.o[d], whole.o[d], 1e-14) << "d " << d;
  EXPECT_NEAR(merged.lse, whole.lse, 1e-14);
  // An empty part has no weight.
  const auto empty = run(q, k, v, 3, 0.5, 0);
  const auto same = ref::merge_states(whole, empty);
  EXPECT_EQ(same.o, whole.o);
  EXPECT_EQ(same.lse, whole.lse);
}

TEST(ReferenceAttention, AccessorsReadThroughAPageTable) {
  // Keys stored in pages of 2 rows, in the order page 1 then page 0: the accessor form sees the
  // logical order through the table and gives the contiguous answer.
  const std::vector<double> k = {1, 0, 0, 1, 5, 5}, v = {2, 0, 0, 4, 100, 100};
  const std::vector<double> q = {0.2, -0.4};
  const std::vector<double> paged_k = {5, 5, 0, 0, 1, 0, 0, 1};  // page 0 = rows 2, pad
  const std::vector<double> paged_v = {100, 100, 0, 0, 2, 0, 0, 4};
  const int table[2] = {1, 0};
  auto at = [&](const std::vector<double>& pages, std::size_t j, std::size_t d) {
    return pages[(static_cast<std::size_t>(table[j / 2]) * 2 + j % 2) * 2 + d];
  };
  const auto paged = ref::attention_row(
      [&](std::size_t d) { return q[d]; },
      [&](std::size_t j, std::size_t d) { return at(paged_k, j, d); },
      [&](std::size_t j, std::size_t d) { return at(paged_v, j, d); }, 3, 2, 0.7);
  const auto contiguous = run(q, k, v, 2, 0.7);
  EXPECT_EQ(paged.o, contiguous.o);
  EXPECT_EQ(paged.lse, contiguous.lse);
}

TEST(ReferenceAttention, NaNPropagates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto r = run({1, 0}, {1, 0, 0, nan}, {2, 0, 0, 4}, 2, 1.0);
  EXPECT_TRUE(std::isnan(r.lse));
  EXPECT_TRUE(std::isnan(r.o[0]));
  EXPECT_TRUE(std::isnan(r.o[1]));
}

}  // namespace
