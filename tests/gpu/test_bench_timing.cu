// The benchmark timer (course/bench.h) on a real GPU: it measures a kernel of known length
// correctly, measures nothing as nothing, charges a kernel for the writes it leaves in the L2,
// and does not charge a read-only kernel for anyone else's. The last two are why the harness
// does not flush with a memset (lesson 1, §5.5); the tests print what each method measured.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/check.h"
#include "course/device.h"
#include "course/testing.h"

namespace {

using course::DeviceBuffer;
using course::bench::BracketedTimer;
using course::bench::percentile;

constexpr int kSamples = 51;

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Runs for `ns` nanoseconds of wall time, touching no memory.
__global__ void spin_for(std::uint64_t ns) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

// Writes `vectors` 16-byte vectors of ones.
__global__ void fill_ones(float4* __restrict__ y, std::size_t vectors) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t v = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors;
       v += stride)
    y[v] = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
}

int full_grid() { return 8 * course::device_facts().sm_count; }

std::string us(double seconds) { return std::to_string(seconds * 1e6) + " us"; }

class BracketedTimerTest : public course::GpuTest {
 protected:
  // The median of kSamples bracketed iterations, after one untimed run.
  static double bracketed(const std::function<void()>& work) {
    BracketedTimer timer;
    work();
    std::vector<double> s;
    for (int i = 0; i < kSamples; ++i) s.push_back(timer.time(work));
    return percentile(s, 0.5);
  }

  // The median of kSamples event-timed iterations, each started after `before` (untimed).
  static double events_after(const std::function<void()>& before,
                             const std::function<void()>& work) {
    cudaEvent_t start, stop;
    COURSE_CUDA_CHECK(cudaEventCreate(&start));
    COURSE_CUDA_CHECK(cudaEventCreate(&stop));
    work();
    std::vector<double> s;
    for (int i = 0; i < kSamples; ++i) {
      before();
      COURSE_CUDA_CHECK(cudaEventRecord(start));
      work();
      COURSE_CUDA_CHECK(cudaEventRecord(stop));
      COURSE_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0.0f;
      COURSE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      s.push_back(ms * 1e-3);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return percentile(s, 0.5);
  }

  // Back to back with nothing flushed, the GPU busy before `start` (so the launch latency is
  // outside the events): the steady state, in which each iteration writes back exactly its
  // own dirty lines. On arrays several times the L2, nothing is reused between iterations.
  static double steady_state(const std::function<void()>& work) {
    return events_after([] { spin_for<<<1, 32>>>(20'000); }, work);
  }

  // The flush many harnesses use: a memset of twice the L2 before each iteration.
  double after_memset_flush(const std::function<void()>& work) {
    return events_after(
        [&] {
          COURSE_CUDA_CHECK(cudaMemsetAsync(memset_scratch_.data(), 0, memset_scratch_.bytes()));
        },
        work);
  }

  // Times `work` the three ways, reports them, and expects the bracketed time within 5% of
  // the steady state (the truth, for arrays several times the L2).
  void expect_steady_state_agrees(const std::string& key, const std::string& what,
                                  const std::function<void()>& work) {
    const double t = bracketed(work);
    const double truth = steady_state(work);
    const double memset_flush = after_memset_flush(work);
    course::report_measured(key, what + ": bracketed " + us(t) + ", steady state " + us(truth) +
                                     ", after a memset flush " + us(memset_flush));
    EXPECT_NEAR(t, truth, 0.05 * truth) << "the bracketed timer should agree with the steady state";
  }

  void SetUp() override {
    course::GpuTest::SetUp();
    if (IsSkipped()) return;
    memset_scratch_ =
        DeviceBuffer<char>(2 * static_cast<std::size_t>(course::device_facts().l2_bytes));
    spin_for<<<1, 32>>>(1'000);  // load the module before anything is timed
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  }

  DeviceBuffer<char> memset_scratch_;
};

TEST_F(BracketedTimerTest, MeasuresAKernelOfKnownLength) {
  const double t = bracketed([] { spin_for<<<1, 32>>>(200'000); });
  course::report_measured("spin_200us", "bracketed timer, a 200 us spin kernel: " + us(t));
  EXPECT_NEAR(t, 200e-6, 10e-6) << "the flush's time is not subtracted correctly";
}

TEST_F(BracketedTimerTest, MeasuresNothingAsNothing) {
  BracketedTimer timer;
  std::vector<double> s, flush;
  for (int i = 0; i < kSamples; ++i) {
    s.push_back(timer.time([] {}));
    flush.push_back(timer.last_flush_seconds());
  }
  const double t = percentile(s, 0.5);
  course::report_measured("no_work", "bracketed timer, no work: median " + us(t) + ", p10 " +
                                         us(percentile(s, 0.1)) + ", p90 " +
                                         us(percentile(s, 0.9)) +
                                         " (one flush alone: " + us(percentile(flush, 0.5)) + ")");
  EXPECT_LT(std::abs(t), 3e-6) << "two identical flushes should cancel";
  EXPECT_GT(percentile(flush, 0.5), 5e-6) << "the flush should read 2 x L2 from DRAM";
}

TEST_F(BracketedTimerTest, ChargesAKernelForTheWritesItLeavesInTheL2) {
  // 16 MiB fits in the L2 three times over: a timer that stopped when the kernel ended would
  // see writes into the L2, faster than DRAM can take them.
  const std::size_t bytes = std::size_t{16} << 20;
  DeviceBuffer<float> y(bytes / sizeof(float));
  const auto work = [&] {
    fill_ones<<<full_grid(), 256>>>(reinterpret_cast<float4*>(y.data()), bytes / 16);
  };
  const double t = bracketed(work);
  const double unbracketed = events_after([] {}, work);
  const double ceiling = course::measured_copy_bandwidth_gbs() * 1e9;
  course::report_measured("write_16mib",
                          "writing 16 MiB: bracketed " + us(t) + " = " +
                              std::to_string(bytes / t / 1e9) +
                              " GB/s; events around the kernel alone " + us(unbracketed) + " = " +
                              std::to_string(bytes / unbracketed / 1e9) + " GB/s; copy ceiling " +
                              std::to_string(ceiling / 1e9) + " GB/s");
  EXPECT_LT(bytes / t, 1.25 * ceiling)
      << "the bracketed time should include writing the 16 MiB back to DRAM";
}

TEST_F(BracketedTimerTest, DoesNotChargeAReadOnlyKernelForOthersWrites) {
  // A read-only kernel over 256 MiB (five times the H100's L2).
  const std::size_t bytes = std::size_t{256} << 20;
  DeviceBuffer<char> x(bytes);
  DeviceBuffer<float> sink(256);
  COURSE_CUDA_CHECK(cudaMemset(x.data(), 0, bytes));
  expect_steady_state_agrees("read_256mib", "reading 256 MiB", [&] {
    course::bench::read_through_l2(x.data(), bytes, sink.data(), full_grid(), nullptr);
  });
}

TEST_F(BracketedTimerTest, AgreesWithTheSteadyStateOnACopy) {
  const std::size_t bytes = std::size_t{256} << 20;
  DeviceBuffer<char> x(bytes), y(bytes);
  COURSE_CUDA_CHECK(cudaMemset(x.data(), 0, bytes));
  expect_steady_state_agrees("copy_256mib", "copying 256 MiB", [&] {
    COURSE_CUDA_CHECK(cudaMemcpyAsync(y.data(), x.data(), bytes, cudaMemcpyDeviceToDevice));
  });
}

}  // namespace
