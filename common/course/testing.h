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

#include <cstddef>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/check.h"
#include "course/compare.h"
#include "course/device.h"
#include "course/observe.h"
#include "course/random.h"

namespace course {

// "rerun with COURSE_SEED=..." — appended to every failure that depends on random inputs.
std::string seed_hint();

// The element types as a test parameter (TEST_P over dtypes): printed by name in test names
// and failure messages.
enum class ElementType { kFloat32, kFloat16, kBFloat16 };
inline constexpr ElementType kAllElementTypes[] = {ElementType::kFloat32, ElementType::kFloat16,
                                                   ElementType::kBFloat16};
inline std::string dtype_name(ElementType t) {
  switch (t) {
    case ElementType::kFloat32:
      return DType<float>::name;
    case ElementType::kFloat16:
      return DType<half>::name;
    case ElementType::kBFloat16:
      return DType<bfloat16>::name;
  }
  return "?";
}
inline void PrintTo(ElementType t, std::ostream* os) { *os << dtype_name(t); }
// INSTANTIATE_TEST_SUITE_P(DTypes, Suite, ValuesIn(kAllElementTypes), dtype_param_name):
// test names end in /float32, /float16, /bfloat16.
inline std::string dtype_param_name(const ::testing::TestParamInfo<ElementType>& info) {
  return dtype_name(info.param);
}

// Prints a figure a test measured ("[ measured ] ...", which the GPU check script collects from
// the logs into measured-lines.txt for the lessons) and records it in the test's XML result.
inline void report_measured(const std::string& key, const std::string& line) {
  std::printf("[ measured ] %s\n", line.c_str());
  std::fflush(stdout);
  ::testing::Test::RecordProperty(key, line);
}

// Grading: an exercise's points are in its lab's manifest (labs/<lab>/lab.json). An instructor's
// hidden tests may grade exercises of their own and declare their points next to them
// (`COURSE_POINTS(MyExtraCheck, 10);` at namespace scope of the hidden test file); the grader asks
// the test program (`<tests> --course_points` prints them as JSON) for exercises that lab.json
// does not name.
int register_points(const char* exercise, double points);

// A given launcher's argument check (lab.h: every function checks its arguments): `call` must
// throw course::InvalidArgument. What it did is observed, so that the grader judges the
// student's launcher; a student who changes a given launcher must keep its checks. `what` names
// the call, `why` the rule it breaks.
inline void expect_rejected(const std::function<void()>& call, const std::string& what,
                            const char* why) {
  const Thrown t = observed_throw<InvalidArgument>(call, "rejected call");
  EXPECT_TRUE(t.threw) << what << " must throw course::InvalidArgument (" << why
                       << "): keep the given launcher's course::require. It "
                       << (t.threw_other ? "threw another exception: " + t.what
                                         : std::string("threw nothing"));
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_available(&why)) GTEST_SKIP() << why << ": this test needs a CUDA GPU";
  }
};

}  // namespace course

#define COURSE_POINTS(exercise, points)                           \
  [[maybe_unused]] static const int course_points_##exercise##_ = \
      ::course::register_points(#exercise, points)

#define COURSE_SKIP_WITHOUT_GPU()                                    \
  do {                                                               \
    std::string course_why_;                                         \
    if (!::course::gpu_available(&course_why_))                      \
      GTEST_SKIP() << course_why_ << ": this test needs a CUDA GPU"; \
  } while (0)

#define COURSE_EXPECT_MATCH(got, ref, ...)                                                   \
  do {                                                                                       \
    const ::course::Comparison course_cmp_ = ::course::compare((got), (ref), ##__VA_ARGS__); \
    if (!course_cmp_.ok) ADD_FAILURE() << course_cmp_.message << ::course::seed_hint();      \
  } while (0)

#define COURSE_ASSERT_MATCH(got, ref, ...)                                                   \
  do {                                                                                       \
    const ::course::Comparison course_cmp_ = ::course::compare((got), (ref), ##__VA_ARGS__); \
    if (!course_cmp_.ok) FAIL() << course_cmp_.message << ::course::seed_hint();             \
  } while (0)

namespace course {

// A device buffer with `guard` poisoned elements (kGuard unless told) before and after the part a
// kernel gets: data() is buffer + guard + offset_elements (offset 1 makes the pointer not
// 16-byte aligned; the guard keeps the alignment of the allocation, being a multiple of 16
// bytes), and expect_guards_untouched() reports a write before the start or past the end.
template <class T>
struct Guarded {
  static constexpr std::size_t kGuard = 16;
  DeviceBuffer<T> buffer;
  std::size_t offset = 0, size = 0;

  Guarded(std::size_t n, std::size_t offset_elements, std::size_t guard = kGuard)
      : buffer(n + 2 * guard + offset_elements), offset(guard + offset_elements), size(n) {
    buffer.poison();
  }
  // A device copy of `host` in the middle of the poison.
  Guarded(const std::vector<T>& host, std::size_t offset_elements, std::size_t guard = kGuard)
      : Guarded(host.size(), offset_elements, guard) {
    buffer.upload(host, offset);
  }
  T* data() { return buffer.data() + offset; }
  const T* data() const { return buffer.data() + offset; }
  std::vector<T> read_back() const { return buffer.read_back(offset, size); }
};

// `all`, a whole Guarded buffer read back, must hold the poison outside [offset, offset + size):
// otherwise one failure naming the first element written outside, and `hint` (what to look at,
// in the day's words; a general one when empty). True when untouched.
template <class T>
bool expect_guards_untouched(const std::vector<T>& all, std::size_t offset, std::size_t size,
                             const std::string& what, const std::string& hint = "") {
  for (std::size_t i = 0; i < offset && i < all.size(); ++i)
    if (!DType<T>::is_poison(all[i])) {
      ADD_FAILURE() << "the element " << offset - i << " before the start of " << what
                    << " was written: "
                    << (hint.empty() ? "an index went negative or an offset is wrong" : hint);
      return false;
    }
  for (std::size_t i = offset + size; i < all.size(); ++i)
    if (!DType<T>::is_poison(all[i])) {
      ADD_FAILURE() << "the element " << i - (offset + size) << " past the end of " << what
                    << " (of " << size << " elements) was written: "
                    << (hint.empty() ? "check the bounds test of the last vectors, chunk or "
                                       "row, and of the last block"
                                     : hint);
      return false;
    }
  return true;
}

// The guard elements before and after `g` must still hold their poison.
template <class T>
bool expect_guards_untouched(const Guarded<T>& g, const std::string& what,
                             const std::string& hint = "") {
  return expect_guards_untouched(g.buffer.read_back(), g.offset, g.size, what, hint);
}

}  // namespace course
