// A test program whose tests misbehave on purpose, for the runner's own tests
// (tests/tools/test_runner.py): each way a student's test can end — pass, fail, skip, crash,
// hang, a kernel that faults and breaks the CUDA context — so that the runner is seen to
// blame exactly the test that did it and to run the others. Built with the lab tests' main()
// (common/src/test_main.cpp); the runner selects which tests run, never ctest.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "course/check.h"
#include "course/observe.h"
#include "course/testing.h"

namespace {

__global__ void write_far_out_of_bounds(float* p) { p[threadIdx.x + (1ll << 40)] = 1.0f; }

COURSE_POINTS(Fixture, 7);
COURSE_POINTS(FixtureGpu, 3);

TEST(Fixture, Passes) { std::printf("output of a passing test\n"); }

TEST(Fixture, Fails) { ADD_FAILURE() << "element 3 of 7: expected 1.5, got 0 (the tail?)"; }

TEST(Fixture, Skips) { GTEST_SKIP() << "no GPU here: this test needs a CUDA GPU"; }

TEST(Fixture, RecordsProperties) { RecordProperty("points", "3"); }

TEST(Fixture, Segfaults) {
  std::printf("about to crash\n");
  std::fflush(stdout);
  std::raise(SIGSEGV);
}

TEST(Fixture, Aborts) { std::abort(); }

TEST(Fixture, Exits) { std::exit(0); }

TEST(Fixture, Hangs) { std::this_thread::sleep_for(std::chrono::hours(1)); }

TEST(Fixture, PrintsALot) {
  for (int i = 0; i < 200000; ++i) std::printf("line %d of a lot of output\n", i);
}

TEST(Fixture, ThrowsCudaError) { COURSE_CUDA_CHECK(cudaErrorInvalidValue); }

// Needs a GPU: a kernel writes far outside any allocation; the context is lost.
TEST(FixtureGpu, LosesTheContext) {
  COURSE_SKIP_WITHOUT_GPU();
  float* p = nullptr;
  COURSE_CUDA_CHECK(cudaMalloc(&p, 1024));
  write_far_out_of_bounds<<<1, 32>>>(p);
  COURSE_LAUNCH_CHECK();
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(FixtureGpu, RunsAfterTheLostContext) {
  COURSE_SKIP_WITHOUT_GPU();
  float* p = nullptr;
  COURSE_CUDA_CHECK(cudaMalloc(&p, 1024));
  COURSE_CUDA_CHECK(cudaFree(p));
}

// The grader's observations (course/observe.h): what "the code under test" returns comes from
// FIXTURE_VALUE (42 when unset), and FIXTURE_FORGE=1 plays a student's program that reports a
// pass whatever it computed. Recorded in one run and replayed in another, the replay's verdict
// is about the recorded value (tests/tools/test_course_tool.py, ObserveTest).
int code_under_test() {
  const char* v = std::getenv("FIXTURE_VALUE");
  return v != nullptr ? std::atoi(v) : 42;
}
bool forging() { return std::getenv("FIXTURE_FORGE") != nullptr; }

TEST(Observe, Value) {
  const int got = course::observed(code_under_test(), "code_under_test()");
  if (!forging()) EXPECT_EQ(got, 42);
}

TEST(Observe, Strings) {
  const std::string got = course::observed(std::string(code_under_test(), 'x'));
  if (!forging()) EXPECT_EQ(got.size(), 42u);
}

TEST(Observe, Throws) {
  COURSE_EXPECT_THROW(
      {
        if (code_under_test() == 42) throw course::InvalidArgument("rejected");
      },
      course::InvalidArgument);
  if (forging()) ::testing::Test::RecordProperty("forged", "1");
}

TEST(Observe, Keyed) {
  // Two keys, observed in either order: each key's observations replay in their own order.
  const bool flip = code_under_test() % 2 == 1;
  for (int k = 0; k < 2; ++k) {
    course::ObservationKey key("thread " + std::to_string(flip ? 1 - k : k));
    const int got = course::observed(10 * (flip ? 1 - k : k) + 1);
    EXPECT_EQ(got, 10 * (flip ? 1 - k : k) + 1);
  }
}

}  // namespace
