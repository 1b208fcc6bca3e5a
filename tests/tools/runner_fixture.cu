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

}  // namespace
