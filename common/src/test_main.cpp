// main() of every lab's tests: names the GPU (or says that GPU tests will be skipped) and the
// seed of this run's random inputs, then runs the tests.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "course/device.h"
#include "course/random.h"
#include "course/testing.h"

namespace course {
std::string seed_hint() {
  return "\n  (random inputs from seed " + std::to_string(run_seed()) +
         "; rerun with COURSE_SEED=" + std::to_string(run_seed()) + " to get the same ones)";
}
}  // namespace course

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (ctest does it to register them) must not touch the GPU.
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  std::string why;
  if (course::gpu_available(&why)) {
    std::printf("[ course   ] %s\n", course::describe(course::device_facts()).c_str());
  } else {
    std::printf("[ course   ] %s: GPU tests will be reported as SKIPPED, not passed\n", why.c_str());
  }
  std::printf("[ course   ] random seed %llu (set COURSE_SEED to repeat)\n",
              static_cast<unsigned long long>(course::run_seed()));
  return RUN_ALL_TESTS();
}
