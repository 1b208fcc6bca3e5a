// GoogleTest glue shared by every lab's tests.
//
//   class VectorAdd : public course::GpuTest {};       // skips (visibly) without a GPU
//   COURSE_EXPECT_MATCH(got, ref);                     // compare.h, with the seed on failure
//   COURSE_EXPECT_MATCH(got, ref, options);
//
// Skipped is not passed: ctest counts a GTEST_SKIP as skipped, so a machine without a GPU
// reports the GPU tests as not run.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "course/compare.h"
#include "course/device.h"
#include "course/random.h"

namespace course {

// "rerun with COURSE_SEED=..." — appended to every failure that depends on random inputs.
std::string seed_hint();

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_available(&why)) GTEST_SKIP() << why << ": this test needs a CUDA GPU";
  }
};

}  // namespace course

#define COURSE_SKIP_WITHOUT_GPU()                                             \
  do {                                                                        \
    std::string course_why_;                                                  \
    if (!::course::gpu_available(&course_why_))                               \
      GTEST_SKIP() << course_why_ << ": this test needs a CUDA GPU";          \
  } while (0)

#define COURSE_EXPECT_MATCH(got, ref, ...)                                    \
  do {                                                                        \
    const ::course::Comparison course_cmp_ = ::course::compare((got), (ref), ##__VA_ARGS__); \
    if (!course_cmp_.ok) ADD_FAILURE() << course_cmp_.message << ::course::seed_hint(); \
  } while (0)

#define COURSE_ASSERT_MATCH(got, ref, ...)                                    \
  do {                                                                        \
    const ::course::Comparison course_cmp_ = ::course::compare((got), (ref), ##__VA_ARGS__); \
    if (!course_cmp_.ok) FAIL() << course_cmp_.message << ::course::seed_hint(); \
  } while (0)
