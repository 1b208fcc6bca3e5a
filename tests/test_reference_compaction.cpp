// Stream compaction and key counting references (reference/compaction.h), Day 5.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "course/reference/compaction.h"

namespace {

namespace ref = course::reference;

TEST(ReferenceCompaction, KeepsTheMatchingElementsInInputOrder) {
  EXPECT_EQ(ref::compact_greater({0.5, -1, 2, 0.25, 7, 0.5}, 0.4),
            (std::vector<double>{0.5, 2, 7, 0.5}));
}

TEST(ReferenceCompaction, StrictlyGreaterThanTheThreshold) {
  EXPECT_EQ(ref::compact_greater({1, 1, 2}, 1.0), (std::vector<double>{2}));
}

TEST(ReferenceCompaction, KeepsNoneAllAndNothingFromEmptyInput) {
  EXPECT_TRUE(ref::compact_greater({1, 2, 3}, 10).empty());
  EXPECT_EQ(ref::compact_greater({1, 2, 3}, -10), (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(ref::compact_greater({}, 0).empty());
}

TEST(ReferenceCompaction, CompactIfTakesAnyPredicate) {
  const std::vector<int> x = {5, 2, 8, 3, 6};
  EXPECT_EQ(ref::compact_if(x, [](int v) { return v % 2 == 0; }), (std::vector<int>{2, 8, 6}));
}

TEST(ReferenceCountKeys, CountsEveryBucketAndIgnoresKeysOutOfRange) {
  const std::vector<std::int32_t> keys = {0, 3, 3, 1, 3, -1, 4, 0};
  EXPECT_EQ(ref::count_keys(keys, 4), (std::vector<double>{2, 1, 0, 3}));
  const std::vector<std::uint32_t> unsigned_keys = {2, 2, 7};
  EXPECT_EQ(ref::count_keys(unsigned_keys, 3), (std::vector<double>{0, 0, 2}));
  EXPECT_EQ(ref::count_keys(std::vector<std::int32_t>{}, 2), (std::vector<double>{0, 0}));
}

}  // namespace
