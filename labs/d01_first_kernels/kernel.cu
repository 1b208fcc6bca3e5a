// Day 1 — your kernels. Read lessons/d01_first_kernels.md first; README.md in this folder
// lists the exercises. Replace each TODO block; keep the names and the launchers' signatures
// (the tests call them through lab.h). Check with:  course check d01
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "course/check.h"
#include "lab.h"

namespace d01 {

constexpr int kBlockThreads = 256;  // a multiple of the warp size; 256 is a safe default

// ---------------------------------------------------------------------------------------------
// Exercise 1 — one thread per element (lesson §3).
// Thread (blockIdx.x, threadIdx.x) owns element i = blockIdx.x * blockDim.x + threadIdx.x.
__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, std::int64_t n) {
  // TODO(d01.1): compute this thread's index i (as int64_t: n may exceed 2^31), and if i < n
  // write c[i] = a[i] + b[i]. Without the bounds test the last block writes past the end.
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 — grid-stride loop (lesson §4).
// Thread t of the grid handles elements t, t + G, t + 2G, ... where G = gridDim.x * blockDim.x.
__global__ void saxpy_kernel(float alpha, const float* __restrict__ x, float* __restrict__ y,
                             std::int64_t n) {
  // TODO(d01.2): loop i from this thread's global index while i < n, stepping by the number of
  // threads in the grid, and set y[i] = alpha * x[i] + y[i]. The tests launch grids of 1 and 3
  // blocks: every element must still be written exactly once.
}

// Given: one thread spins on the GPU's nanosecond timer until `ns` have passed.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// ---------------------------------------------------------------------------------------------
// Launchers.

void vector_add(const float* a, const float* b, float* c, std::int64_t n) {
  course::require(n >= 0, "vector_add: n must be >= 0");
  if (n == 0) return;
  course::require(a && b && c, "vector_add: null pointer");
  const std::int64_t blocks = course::ceil_div<std::int64_t>(n, kBlockThreads);
  course::require(blocks <= 0x7fffffff, "vector_add: n too large for a 1-D grid");
  vector_add_kernel<<<static_cast<unsigned>(blocks), kBlockThreads>>>(a, b, c, n);
  COURSE_LAUNCH_CHECK();
}

void saxpy(float alpha, const float* x, float* y, std::int64_t n, int grid_blocks,
           int block_threads) {
  course::require(n >= 0, "saxpy: n must be >= 0");
  course::require(grid_blocks >= 0, "saxpy: grid_blocks must be >= 0 (0 = choose)");
  course::require(block_threads > 0 && block_threads <= 1024 && block_threads % 32 == 0,
                  "saxpy: block_threads must be a multiple of 32 in [32, 1024]");
  if (n == 0) return;
  course::require(x && y, "saxpy: null pointer");
  if (grid_blocks == 0) {
    // TODO(d01.2): choose the grid: enough blocks to fill every SM several times over
    // (cudaDevAttrMultiProcessorCount), but never more than ceil(n / block_threads).
    grid_blocks = 1;
  }
  saxpy_kernel<<<grid_blocks, block_threads>>>(alpha, x, y, n);
  COURSE_LAUNCH_CHECK();
}

DeviceInfo query_device(int device) {
  DeviceInfo info;
  // TODO(d01.3): fill every field of info from cudaGetDeviceProperties(&prop, device)
  // (wrap the call in COURSE_CUDA_CHECK). lab.h says what each field means; the lesson's §2
  // names the cudaDeviceProp members.
  (void)device;
  return info;
}

// ---------------------------------------------------------------------------------------------
// Exercise 4 — timing (lesson §5). Return milliseconds; -1 means "not written yet".
using Clock = std::chrono::steady_clock;

// 4a. The trap: time work() with a host clock and nothing else.
double time_with_host_clock(const std::function<void()>& work) {
  // TODO(d01.4a): read Clock::now() before and after work(); return the difference in ms.
  (void)work;
  return -1.0;
}

// 4b. Synchronise before starting the clock and before stopping it.
double time_with_host_clock_synced(const std::function<void()>& work) {
  // TODO(d01.4b): cudaDeviceSynchronize(), start the clock, work(), cudaDeviceSynchronize(),
  // stop the clock.
  (void)work;
  return -1.0;
}

// 4c. CUDA events: timestamps taken by the GPU in stream order.
double time_with_events(const std::function<void()>& work) {
  // TODO(d01.4c): create two events, record one, work(), record the other, wait for it
  // (cudaEventSynchronize), read cudaEventElapsedTime, destroy both.
  (void)work;
  return -1.0;
}

// 4d. Warm up, then time many trials with events and summarise them.
TimingStats time_repeated(const std::function<void()>& work, int trials, int warmup) {
  course::require(trials > 0 && warmup >= 0, "time_repeated: need trials > 0 and warmup >= 0");
  TimingStats s;
  // TODO(d01.4d): run work() `warmup` times untimed, then `trials` times through
  // time_with_events; fill median (the middle of the sorted times; the mean of the two middle
  // ones for an even count), mean, min and max.
  (void)work;
  return s;
}

void spin(double microseconds) {
  course::require(microseconds >= 0, "spin: microseconds must be >= 0");
  spin_kernel<<<1, 1>>>(static_cast<unsigned long long>(microseconds * 1000.0));
  COURSE_LAUNCH_CHECK();
}

}  // namespace d01
