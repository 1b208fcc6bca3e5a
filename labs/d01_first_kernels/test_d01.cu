// Day 1 tests. Each suite is one exercise of README.md.
//
// What a kernel of this day can get wrong, and the test that sees it:
//   - a size that is not a multiple of the warp or the block (1, 31, 33, 255, 257, 2^20 + 3):
//     VectorAdd.MatchesTheReferenceForEverySize, Saxpy.IsCorrectForAnyGrid
//   - no bounds test, so the last block writes past the end of c:
//     VectorAddBounds.DoesNotWritePastTheEnd (memcheck is not run on Day 1: the guard does it)
//   - n = 0 launches a grid of 0 blocks (a launch error) or writes something:
//     VectorAddBounds.AcceptsAnEmptyInputThenAddsOneElement,
//     SaxpyBounds.AcceptsAnEmptyInputThenUpdatesOneElement
//   - an index or a stride kept in 32 bits wraps at 2^31: VectorAddLargeIndex, SaxpyLargeIndex
//   - a grid-stride loop that steps by one block (elements updated twice) or stops after one
//     pass (elements left out) when the grid is smaller than the data (grids of 1, 3 and 7
//     blocks): Saxpy.IsCorrectForAnyGrid
//   - the launcher's grid rounded down (0 blocks when n < block_threads) or ignoring
//     block_threads: Saxpy.IsCorrectForAnyGrid (n1_grid0x256),
//     SaxpyBounds.AcceptsBlockSizesAtTheLimitsAndRejectsThoseOutside
//   - the documented limits (n >= 0, grid_blocks >= 0, block_threads a multiple of 32 in
//     [32, 1024], trials > 0, warmup >= 0) not enforced, or enforced one step too early:
//     VectorAddBounds.RejectsANegativeSizeThenAddsOneElement,
//     SaxpyBounds.AcceptsBlockSizesAtTheLimitsAndRejectsThoseOutside,
//     Timing.RepeatedTrialsRejectNoTrialsThenTimeOne
//   - query_device: a field copied from the wrong member of cudaDeviceProp:
//     DeviceQuery.AgreesWithTheDriver
//   - 4a synchronises (it is the trap on purpose): Timing.HostClockWithoutSync*
//   - 4b does not drain the work queued before it:
//     Timing.HostClockWithSyncLeavesOutWorkQueuedBefore
//   - 4c reads the time before the stop event has happened, or brackets earlier work:
//     Timing.EventsMeasureTheKernel, Timing.EventsDoNotIncludeEarlierWork
//   - 4d: the warm-up count, a host-clock trial that times queued work, the median of an odd or
//     an even count, min and max taken before sorting: Timing.RepeatedTrials*
//
// What the tests read back from the code under test (device results, returned values and
// timings, exceptions) goes through an observation (course/observe.h), so that the grader can
// judge the student's values in the reference program.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/device.h"
#include "course/large.h"
#include "course/random.h"
#include "course/reference/elementwise.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::DeviceBuffer;

// Sizes around the warp (32) and block (256) boundaries, and one past a power of two. n = 0 has
// tests of its own (the *Bounds suites), paired with n = 1: an empty input is trivially "correct"
// for a kernel that does nothing, so on its own it could not tell a solved exercise from a starter.
const std::int64_t kSizes[] = {1, 31, 32, 33, 255, 257, (1 << 20) + 3};

// Indices past 2^31 (the *LargeIndex suites): n = 2^31 + 2^24 + 17 elements. An index computed in
// 32 bits (int i = blockIdx.x * blockDim.x + threadIdx.x) wraps at 2^31, so only an array this long
// shows it. The inputs are filled on the GPU with a pattern the host recomputes at any index
// (course/large.h), and the output is checked at the indices that matter: the start, both sides
// of 2^31, the end, and a few hundred in between. They run alone on the GPU (lab.json's
// serial_suites).
constexpr std::int64_t kLargeN = course::kLargeCount;

// ---------------------------------------------------------------- Exercise 1: vector add

class VectorAdd : public course::GpuTest, public ::testing::WithParamInterface<std::int64_t> {};

TEST_P(VectorAdd, MatchesTheReferenceForEverySize) {
  const auto n = static_cast<std::size_t>(GetParam());
  const auto a = course::random_uniform<float>(n, course::seed_for(1));
  const auto b = course::random_uniform<float>(n, course::seed_for(2));
  DeviceBuffer<float> da(a), db(b), dc(n);
  dc.poison();
  d01::vector_add(da.data(), db.data(), dc.data(), GetParam());
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  COURSE_EXPECT_MATCH(dc.read_back(),
                      course::reference::vector_add(course::as_doubles(a), course::as_doubles(b)));
}
INSTANTIATE_TEST_SUITE_P(Sizes, VectorAdd, ::testing::ValuesIn(kSizes),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

class VectorAddBounds : public course::GpuTest {};

TEST_F(VectorAddBounds, DoesNotWritePastTheEnd) {
  // The grid is rounded up to whole blocks; threads past n must not write. Every element of
  // c[0, n) must be written, and the guard elements after the end must keep their poison.
  const std::int64_t n = 1000;
  const auto a = course::random_uniform<float>(n, course::seed_for(3));
  DeviceBuffer<float> da(a), db(a), dc(n + 64);
  dc.poison();
  d01::vector_add(da.data(), db.data(), dc.data(), n);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  COURSE_ASSERT_MATCH(dc.read_back(0, n),
                      course::reference::vector_add(course::as_doubles(a), course::as_doubles(a)));
  const auto guard = dc.read_back(n, 64);
  for (std::size_t i = 0; i < guard.size(); ++i)
    ASSERT_TRUE(course::DType<float>::is_poison(guard[i]))
        << "c[" << n + static_cast<std::int64_t>(i) << "] was written but n = " << n
        << ": the bounds test (if (i < n)) is missing or wrong";
}

TEST_F(VectorAddBounds, AcceptsAnEmptyInputThenAddsOneElement) {
  // n = 0 must launch nothing: a grid of 0 blocks is a launch error
  // (cudaErrorInvalidConfiguration).
  const auto a = course::random_uniform<float>(1, course::seed_for(6));
  const auto b = course::random_uniform<float>(1, course::seed_for(7));
  DeviceBuffer<float> da(a), db(b), dc(1);
  dc.poison();
  COURSE_EXPECT_NO_THROW(d01::vector_add(da.data(), db.data(), dc.data(), 0));
  if (HasFailure())
    FAIL() << "n = 0 must be accepted: return before launching (a grid of 0 blocks is an error)";
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  ASSERT_TRUE(course::DType<float>::is_poison(dc.read_back()[0]))
      << "n = 0 wrote c[0]: with no elements, nothing may be written";
  d01::vector_add(da.data(), db.data(), dc.data(), 1);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  COURSE_EXPECT_MATCH(dc.read_back(),
                      course::reference::vector_add(course::as_doubles(a), course::as_doubles(b)));
}

TEST_F(VectorAddBounds, RejectsANegativeSizeThenAddsOneElement) {
  // The launcher's promise (lab.h): a wrong size is a message (course::InvalidArgument), never a
  // launch. n = -1 is the first size outside; n = 1 the first inside that does work.
  const auto a = course::random_uniform<float>(1, course::seed_for(10));
  const auto b = course::random_uniform<float>(1, course::seed_for(11));
  DeviceBuffer<float> da(a), db(b), dc(1);
  dc.poison();
  COURSE_EXPECT_THROW(d01::vector_add(da.data(), db.data(), dc.data(), -1),
                      course::InvalidArgument);
  if (HasFailure()) FAIL() << "vector_add must reject n = -1 with course::require (lab.h)";
  d01::vector_add(da.data(), db.data(), dc.data(), 1);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  COURSE_EXPECT_MATCH(dc.read_back(),
                      course::reference::vector_add(course::as_doubles(a), course::as_doubles(b)));
}

class VectorAddLargeIndex : public course::GpuTest {};

TEST_F(VectorAddLargeIndex, AddsElementsPastTwoToThe31) {
  const std::int64_t n = kLargeN;
  const auto count = static_cast<std::size_t>(n);
  COURSE_SKIP_UNLESS_GPU_MEMORY(3 * count * sizeof(float));  // a, b and c: 24 GiB
  const course::Pattern pa{course::seed_for(101), -1.0, 1.0}, pb{course::seed_for(102), -1.0, 1.0};
  DeviceBuffer<float> a(count), b(count), c(count);
  course::fill_pattern(a.data(), n, pa);
  course::fill_pattern(b.data(), n, pb);
  course::poison_on_device(c.data(), n);
  d01::vector_add(a.data(), b.data(), c.data(), n);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto at = course::large_sample_indices(n, course::seed_for(103));
  std::vector<double> want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    want[k] = course::pattern_double_value<float>(pa, at[k]) +
              course::pattern_double_value<float>(pb, at[k]);
  course::CompareOptions options;
  options.what = "c of vector_add with n = 2^31 + 2^24 + 17 (TODO d01.1: i as int64_t)";
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(c.data(), n, at), want, at, options);
}

// ---------------------------------------------------------------- Exercise 2: SAXPY

struct SaxpyCase {
  std::int64_t n;
  int grid_blocks;  // 0 = the launcher chooses
  int block_threads;
};

class Saxpy : public course::GpuTest, public ::testing::WithParamInterface<SaxpyCase> {};

TEST_P(Saxpy, IsCorrectForAnyGrid) {
  const SaxpyCase c = GetParam();
  const auto n = static_cast<std::size_t>(c.n);
  const float alpha = 1.75f;
  const auto x = course::random_uniform<float>(n, course::seed_for(4));
  const auto y = course::random_uniform<float>(n, course::seed_for(5));
  DeviceBuffer<float> dx(x), dy(y);
  d01::saxpy(alpha, dx.data(), dy.data(), c.n, c.grid_blocks, c.block_threads);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  course::CompareOptions options;
  options.what = "y (grid of " + std::to_string(c.grid_blocks) + " blocks of " +
                 std::to_string(c.block_threads) + " threads)";
  // Unwritten elements keep y's old value, and an element updated twice is y + 2 alpha x:
  // both show as mismatches against the reference.
  const std::vector<float> got = dy.read_back();
  ASSERT_NE(std::memcmp(got.data(), y.data(), n * sizeof(float)), 0)
      << "y is exactly as it was: nothing was updated. Did the kernel run, and does it write "
         "y[i] = alpha * x[i] + y[i]? (TODO d01.2)";
  COURSE_EXPECT_MATCH(
      got, course::reference::saxpy(alpha, course::as_doubles(x), course::as_doubles(y)), options);
}

std::vector<SaxpyCase> saxpy_cases() {
  std::vector<SaxpyCase> cases;
  for (std::int64_t n : kSizes) {
    cases.push_back({n, 0, 256});  // the launcher's own grid
    cases.push_back({n, 1, 32});   // one warp does everything
    cases.push_back({n, 3, 64});   // a grid smaller than the data
  }
  cases.push_back({(1 << 22) + 1, 7, 1024});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Grids, Saxpy, ::testing::ValuesIn(saxpy_cases()), [](const auto& info) {
  return "n" + std::to_string(info.param.n) + "_grid" + std::to_string(info.param.grid_blocks) +
         "x" + std::to_string(info.param.block_threads);
});

class SaxpyBounds : public course::GpuTest {};

TEST_F(SaxpyBounds, AcceptsAnEmptyInputThenUpdatesOneElement) {
  const float alpha = -0.5f;
  const auto x = course::random_uniform<float>(1, course::seed_for(8));
  const auto y = course::random_uniform<float>(1, course::seed_for(9));
  DeviceBuffer<float> dx(x), dy(y);
  COURSE_EXPECT_NO_THROW(d01::saxpy(alpha, dx.data(), dy.data(), 0));
  if (HasFailure())
    FAIL() << "n = 0 must be accepted: return before launching (a grid of 0 blocks is an error)";
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  ASSERT_EQ(course::DType<float>::to_bits(dy.read_back()[0]), course::DType<float>::to_bits(y[0]))
      << "n = 0 changed y[0]: with no elements, nothing may be written";
  d01::saxpy(alpha, dx.data(), dy.data(), 1);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  COURSE_EXPECT_MATCH(dy.read_back(), course::reference::saxpy(alpha, course::as_doubles(x),
                                                               course::as_doubles(y)));
}

TEST_F(SaxpyBounds, AcceptsBlockSizesAtTheLimitsAndRejectsThoseOutside) {
  // lab.h's promise: block_threads is a multiple of 32 in [32, 1024], grid_blocks >= 0 and
  // n >= 0; anything else is a course::InvalidArgument before anything is launched. The limits
  // themselves (32 and 1024 threads, with the launcher's own grid) must work.
  const std::int64_t n = 5000;
  const float alpha = 0.75f;
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(12));
  const auto y = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(13));
  const auto want = course::reference::saxpy(alpha, course::as_doubles(x), course::as_doubles(y));
  DeviceBuffer<float> dx(x), dy(y);
  for (const int threads : {32, 1024}) {
    dy.upload(y);
    d01::saxpy(alpha, dx.data(), dy.data(), n, /*grid_blocks=*/0, threads);
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
    course::CompareOptions options;
    options.what = "y (n = 5000, the launcher's grid of blocks of " + std::to_string(threads) +
                   " threads: TODO d01.2 must size the grid with block_threads)";
    COURSE_EXPECT_MATCH(dy.read_back(), want, options);
  }
  // Each call below breaks one promise, just outside its limit; none may launch (y must keep
  // its values). What each call did is observed (observed_throw), so the grader sees it.
  dy.upload(y);
  const auto expect_rejected = [&](std::int64_t count, int grid, int threads, const char* why) {
    const course::Thrown t = course::observed_throw<course::InvalidArgument>(
        [&] { d01::saxpy(alpha, dx.data(), dy.data(), count, grid, threads); }, "saxpy");
    EXPECT_TRUE(t.threw) << "saxpy(n = " << count << ", grid_blocks = " << grid
                         << ", block_threads = " << threads
                         << ") must throw course::InvalidArgument (course::require): " << why
                         << "; it "
                         << (t.threw_other ? "threw another exception: " + t.what
                                           : std::string("threw nothing"));
  };
  expect_rejected(n, 0, 0, "block_threads must be at least 32");
  expect_rejected(n, 0, 16, "block_threads must be a multiple of 32");
  expect_rejected(n, 0, 48, "block_threads must be a multiple of 32");
  expect_rejected(n, 0, 1056, "block_threads must be at most 1024");
  expect_rejected(n, -1, 256, "grid_blocks must be >= 0 (0 = the launcher chooses)");
  expect_rejected(-1, 0, 256, "n must be >= 0");
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> after = dy.read_back();
  EXPECT_EQ(std::memcmp(after.data(), y.data(), y.size() * sizeof(float)), 0)
      << "a saxpy call with a rejected argument changed y: check the arguments before launching";
}

class SaxpyLargeIndex : public course::GpuTest {};

TEST_F(SaxpyLargeIndex, UpdatesElementsPastTwoToThe31WithTheLaunchersGrid) {
  // The grid-stride loop's i reaches 2^31 and beyond: an int i (or an int stride) wraps there.
  const std::int64_t n = kLargeN;
  const auto count = static_cast<std::size_t>(n);
  COURSE_SKIP_UNLESS_GPU_MEMORY(2 * count * sizeof(float));  // x and y: 16 GiB
  const float alpha = -1.25f;
  const course::Pattern px{course::seed_for(104), -1.0, 1.0}, py{course::seed_for(105), -1.0, 1.0};
  DeviceBuffer<float> x(count), y(count);
  course::fill_pattern(x.data(), n, px);
  course::fill_pattern(y.data(), n, py);
  d01::saxpy(alpha, x.data(), y.data(), n);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto at = course::large_sample_indices(n, course::seed_for(106));
  const auto got = course::gather(y.data(), n, at);
  std::vector<double> want(at.size());
  std::size_t unchanged = 0;
  for (std::size_t k = 0; k < at.size(); ++k) {
    const float y0 = course::pattern_value<float>(py, at[k]);
    want[k] = alpha * course::pattern_double_value<float>(px, at[k]) + y0;
    unchanged += course::DType<float>::to_bits(got[k]) == course::DType<float>::to_bits(y0);
  }
  ASSERT_LT(unchanged, at.size())
      << "y is exactly as it was at every one of the " << at.size() << " indices checked: nothing "
      << "was updated. Does the kernel write y[i] = alpha * x[i] + y[i]? (TODO d01.2)";
  course::CompareOptions options;
  options.what =
      "y of saxpy with n = 2^31 + 2^24 + 17 and the launcher's grid (TODO d01.2: i and the "
      "stride as int64_t)";
  COURSE_EXPECT_SAMPLES_MATCH(got, want, at, options);
}

// ---------------------------------------------------------------- Exercise 3: device query

class DeviceQuery : public course::GpuTest {};

TEST_F(DeviceQuery, AgreesWithTheDriver) {
  // The whole struct is observed: every field the test compares is the code under test's.
  const d01::DeviceInfo got = course::observed(d01::query_device(0), "query_device(0)");
  const course::DeviceFacts& want = course::device_facts(0);
  EXPECT_STREQ(got.name, want.name.c_str()) << "name: copy cudaDeviceProp::name";
  EXPECT_EQ(got.cc_major, want.cc_major) << "cc_major: cudaDeviceProp::major";
  EXPECT_EQ(got.cc_minor, want.cc_minor) << "cc_minor: cudaDeviceProp::minor";
  EXPECT_EQ(got.sm_count, want.sm_count) << "sm_count: cudaDeviceProp::multiProcessorCount";
  EXPECT_EQ(got.warp_size, want.warp_size) << "warp_size: cudaDeviceProp::warpSize";
  EXPECT_EQ(got.max_threads_per_block, want.max_threads_per_block)
      << "max_threads_per_block: cudaDeviceProp::maxThreadsPerBlock";
  EXPECT_EQ(got.max_threads_per_sm, want.max_threads_per_sm)
      << "max_threads_per_sm: cudaDeviceProp::maxThreadsPerMultiProcessor";
  EXPECT_EQ(got.smem_per_block, want.smem_per_block) << "smem_per_block: sharedMemPerBlock";
  EXPECT_EQ(got.smem_per_block_optin, want.smem_per_block_optin)
      << "smem_per_block_optin: sharedMemPerBlockOptin";
  EXPECT_EQ(got.smem_per_sm, want.smem_per_sm) << "smem_per_sm: sharedMemPerMultiprocessor";
  EXPECT_EQ(got.l2_bytes, want.l2_bytes) << "l2_bytes: cudaDeviceProp::l2CacheSize";
  EXPECT_EQ(got.global_mem_bytes, want.global_mem_bytes) << "global_mem_bytes: totalGlobalMem";
}

// ---------------------------------------------------------------- Exercise 4: timing

// The work: one kernel that spins for kSpinUs microseconds of GPU time.
constexpr double kSpinUs = 2000.0;
constexpr double kSpinMs = kSpinUs / 1000.0;
const auto kSpin = [] { d01::spin(kSpinUs); };
// Work queued BEFORE a timed region, which an honest timer must leave out.
constexpr double kEarlierUs = 20000.0;
constexpr double kEarlierMs = kEarlierUs / 1000.0;

class Timing : public course::GpuTest {
 protected:
  void SetUp() override {
    course::GpuTest::SetUp();
    if (IsSkipped()) return;
    d01::spin(10);  // load the module before anything is timed
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  }
  static void expect_written(double ms, const char* function) {
    ASSERT_NE(ms, -1.0) << function << " returned -1: it is not written yet (TODO d01.4)";
  }
  // "[ measured ] 4c time_with_events: 2.001 ms (the kernel spins for 2 ms)", for the lesson.
  static void report(const char* exercise, const char* function, double ms) {
    course::report_measured(function, std::string(exercise) + " " + function + ": " +
                                          std::to_string(ms) + " ms (the kernel spins for " +
                                          std::to_string(kSpinMs) + " ms)");
  }
};

// Each timing the code under test returns is observed as it is returned (course::observed), so
// that the grader judges the student's number; which observations a test makes never depends on
// a timing.
TEST_F(Timing, HostClockWithoutSyncMeasuresOnlyTheLaunch) {
  const double ms = course::observed(d01::time_with_host_clock(kSpin), "time_with_host_clock");
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  expect_written(ms, "time_with_host_clock");
  report("4a", "time_with_host_clock", ms);
  EXPECT_GE(ms, 0.0);
  EXPECT_LT(ms, 0.5 * kSpinMs)
      << "A launch returns before the kernel runs, so a host clock without synchronisation "
         "should see only the launch (microseconds), not the "
      << kSpinMs
      << " ms of work. "
         "Did you synchronise inside time_with_host_clock?";
}

TEST_F(Timing, HostClockWithSyncSeesTheWholeKernel) {
  const double ms =
      course::observed(d01::time_with_host_clock_synced(kSpin), "time_with_host_clock_synced");
  expect_written(ms, "time_with_host_clock_synced");
  report("4b", "time_with_host_clock_synced", ms);
  EXPECT_GE(ms, 0.95 * kSpinMs) << "the kernel spins for " << kSpinMs
                                << " ms: synchronise before stopping the clock";
  EXPECT_LT(ms, kSpinMs + 5.0) << "far longer than the kernel: was earlier work included?";
}

TEST_F(Timing, EventsMeasureTheKernel) {
  const double ms = course::observed(d01::time_with_events(kSpin), "time_with_events");
  expect_written(ms, "time_with_events");
  report("4c", "time_with_events", ms);
  EXPECT_NEAR(ms, kSpinMs, 0.2 * kSpinMs)
      << "events recorded around the spin kernel should bracket its " << kSpinMs << " ms";
}

TEST_F(Timing, EventsDoNotIncludeEarlierWork) {
  d01::spin(20000);  // 20 ms of work queued BEFORE the timed region
  const double ms = course::observed(d01::time_with_events(kSpin), "time_with_events");
  expect_written(ms, "time_with_events");
  EXPECT_LT(ms, 3.0 * kSpinMs)
      << "the events must be recorded on the stream around work() only; earlier work queued "
         "on the stream is not part of the measurement";
}

// The helpers that are meant to time work() alone, each called with kEarlierMs of spinning
// already queued: what they report must be the 2 ms kernel, far below the 22 ms that end with it.
TEST_F(Timing, HostClockWithSyncLeavesOutWorkQueuedBefore) {
  d01::spin(kEarlierUs);
  const double ms =
      course::observed(d01::time_with_host_clock_synced(kSpin), "time_with_host_clock_synced");
  expect_written(ms, "time_with_host_clock_synced");
  if (HasFatalFailure()) return;
  EXPECT_GE(ms, 0.95 * kSpinMs) << "the kernel spins for " << kSpinMs
                                << " ms: synchronise before stopping the clock";
  EXPECT_LT(ms, kSpinMs + 5.0)
      << "time_with_host_clock_synced measured " << ms << " ms for a " << kSpinMs
      << " ms kernel that was queued behind " << kEarlierMs << " ms of earlier work: the earlier "
      << "work was timed too. Call cudaDeviceSynchronize() BEFORE starting the clock, so that "
      << "only work() is inside (TODO d01.4b, lesson §5.2)";
}

TEST_F(Timing, HostClockWithoutSyncReturnsAtOnceEvenBehindQueuedWork) {
  // The trap of 4a, as the lesson shows it: a launch returns as soon as the kernel is queued,
  // even behind 20 ms of other work, so the host clock sees only the launch.
  d01::spin(kEarlierUs);
  const double ms = course::observed(d01::time_with_host_clock(kSpin), "time_with_host_clock");
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  expect_written(ms, "time_with_host_clock");
  if (HasFatalFailure()) return;
  EXPECT_GE(ms, 0.0);
  EXPECT_LT(ms, 0.5 * kSpinMs)
      << "time_with_host_clock measured " << ms << " ms: it waited for the GPU. 4a is the trap on "
      << "purpose (lesson §5.1): read the clock before and after work() and nothing else";
}

TEST_F(Timing, RepeatedTrialsLeaveOutWorkQueuedBefore) {
  d01::spin(kEarlierUs);
  const d01::TimingStats s =
      course::observed(d01::time_repeated(kSpin, /*trials=*/5, /*warmup=*/0), "time_repeated");
  ASSERT_NE(s.median_ms, -1.0) << "time_repeated is not written yet (TODO d01.4d)";
  EXPECT_NEAR(s.median_ms, kSpinMs, 0.2 * kSpinMs) << "every trial runs the same 2 ms kernel";
  EXPECT_LT(s.max_ms, 3.0 * kSpinMs)
      << "the slowest of 5 trials of a " << kSpinMs << " ms kernel took " << s.max_ms
      << " ms: the first trial included the " << kEarlierMs << " ms of work queued before "
      << "time_repeated was called. Time each trial with time_with_events, whose events bracket "
      << "work() alone in stream order (TODO d01.4d, lesson §5.3)";
}

TEST_F(Timing, RepeatedTrialsWarmUpAndReportTheMedian) {
  int calls = 0;
  const auto counted = [&] {
    ++calls;
    d01::spin(calls == 4 ? 20 * kSpinUs : kSpinUs);  // the first timed trial is an outlier
  };
  const d01::TimingStats s =
      course::observed(d01::time_repeated(counted, /*trials=*/9, /*warmup=*/3), "time_repeated");
  // How often time_repeated called work() is the code under test's doing too.
  const int work_calls = course::observed(calls, "calls of work()");
  ASSERT_NE(s.median_ms, -1.0) << "time_repeated is not written yet (TODO d01.4d)";
  course::report_measured("time_repeated", "4d time_repeated, 9 trials, one 20x slower: median " +
                                               std::to_string(s.median_ms) + " ms, mean " +
                                               std::to_string(s.mean_ms) + " ms, min " +
                                               std::to_string(s.min_ms) + " ms, max " +
                                               std::to_string(s.max_ms) + " ms");
  EXPECT_EQ(work_calls, 12) << "expected 3 warm-up calls and 9 timed trials";
  EXPECT_NEAR(s.median_ms, kSpinMs, 0.2 * kSpinMs) << "the median should ignore the one slow trial";
  EXPECT_GT(s.mean_ms, s.median_ms + 0.5 * kSpinMs)
      << "the mean includes the slow trial, so it must exceed the median";
  EXPECT_LE(s.min_ms, s.median_ms);
  EXPECT_GE(s.max_ms, 15 * kSpinMs) << "max should be the slow trial (about 20x)";
}

TEST_F(Timing, RepeatedTrialsAverageTheTwoMiddleTimesOfAnEvenCount) {
  // Four trials of 4, 1, 8 and 2 ms, in that order (not sorted): sorted they are 1, 2, 4, 8, so
  // the median is (2 + 4) / 2 = 3 ms, the mean 3.75 ms, the min 1 ms and the max 8 ms. Taking
  // the middle element alone gives 4 ms; min and max read before sorting give 4 and 2 ms.
  constexpr double kTrialUs[] = {4000.0, 1000.0, 8000.0, 2000.0};
  constexpr double kTolerance = 0.25;  // ms: a launch and the events' resolution, far below 1 ms
  int calls = 0;
  const auto counted = [&] { d01::spin(kTrialUs[calls++ % 4]); };
  const d01::TimingStats s =
      course::observed(d01::time_repeated(counted, /*trials=*/4, /*warmup=*/0), "time_repeated");
  const int work_calls = course::observed(calls, "calls of work()");
  ASSERT_NE(s.median_ms, -1.0) << "time_repeated is not written yet (TODO d01.4d)";
  EXPECT_EQ(work_calls, 4) << "expected no warm-up call and 4 timed trials";
  EXPECT_NEAR(s.median_ms, 3.0, kTolerance)
      << "trials of 4, 1, 8 and 2 ms: an even count's median is the mean of the two middle "
         "times of the SORTED list, (2 + 4) / 2 = 3 ms (TODO d01.4d)";
  EXPECT_NEAR(s.mean_ms, 3.75, kTolerance) << "the mean of 4, 1, 8 and 2 ms is 3.75 ms";
  EXPECT_NEAR(s.min_ms, 1.0, kTolerance) << "min is the shortest trial, 1 ms: sort first";
  EXPECT_NEAR(s.max_ms, 8.0, kTolerance) << "max is the longest trial, 8 ms: sort first";
}

TEST_F(Timing, RepeatedTrialsRejectNoTrialsThenTimeOne) {
  // lab.h's limits: trials > 0 (a median of nothing is undefined) and warmup >= 0. The first
  // values inside (one trial, no warm-up) must time the one run.
  COURSE_EXPECT_THROW(d01::time_repeated(kSpin, /*trials=*/0, /*warmup=*/0),
                      course::InvalidArgument);
  COURSE_EXPECT_THROW(d01::time_repeated(kSpin, /*trials=*/1, /*warmup=*/-1),
                      course::InvalidArgument);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const d01::TimingStats s =
      course::observed(d01::time_repeated(kSpin, /*trials=*/1, /*warmup=*/0), "time_repeated");
  ASSERT_NE(s.median_ms, -1.0) << "time_repeated is not written yet (TODO d01.4d)";
  EXPECT_NEAR(s.median_ms, kSpinMs, 0.2 * kSpinMs) << "one trial: its time is the median";
  EXPECT_EQ(s.min_ms, s.max_ms) << "one trial: min and max are the same time";
  EXPECT_EQ(s.mean_ms, s.median_ms) << "one trial: mean and median are the same time";
}

}  // namespace
