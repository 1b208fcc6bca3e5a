// Day 1 — reference solution.
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
// The grid is rounded up to whole blocks, so the last block has threads past the end: the
// bounds test keeps them from writing outside c.
__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 — grid-stride loop (lesson §4).
// Thread t of the grid handles elements t, t + G, t + 2G, ... where G = gridDim.x * blockDim.x
// is the number of threads in the grid. Any grid covers every element, so the launcher can
// size the grid to the GPU (a few waves of blocks per SM) instead of to the data.
__global__ void saxpy_kernel(float alpha, const float* __restrict__ x, float* __restrict__ y,
                             std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    y[i] = alpha * x[i] + y[i];
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
    // Enough blocks to fill every SM several times over, but never more than the data needs.
    int device = 0, sms = 0;
    COURSE_CUDA_CHECK(cudaGetDevice(&device));
    COURSE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const std::int64_t needed = course::ceil_div<std::int64_t>(n, block_threads);
    grid_blocks = static_cast<int>(std::min<std::int64_t>(needed, std::int64_t{sms} * 8));
  }
  saxpy_kernel<<<grid_blocks, block_threads>>>(alpha, x, y, n);
  COURSE_LAUNCH_CHECK();
}

DeviceInfo query_device(int device) {
  cudaDeviceProp p{};
  COURSE_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceInfo info;
  std::strncpy(info.name, p.name, sizeof(info.name) - 1);
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  info.warp_size = p.warpSize;
  info.max_threads_per_block = p.maxThreadsPerBlock;
  info.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  info.smem_per_block = p.sharedMemPerBlock;
  info.smem_per_block_optin = p.sharedMemPerBlockOptin;
  info.smem_per_sm = p.sharedMemPerMultiprocessor;
  info.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  info.global_mem_bytes = p.totalGlobalMem;
  return info;
}

// ---------------------------------------------------------------------------------------------
// Exercise 4 — timing (lesson §5).
using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// 4a. The trap: the launch returns as soon as the work is queued, so this measures the
// launch (microseconds), not the kernel.
double time_with_host_clock(const std::function<void()>& work) {
  const auto start = Clock::now();
  work();
  return milliseconds_since(start);
}

// 4b. Honest but coarse: wait for earlier work before starting the clock, and for this work
// before stopping it. Includes the launch overhead and the host's wake-up latency.
double time_with_host_clock_synced(const std::function<void()>& work) {
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto start = Clock::now();
  work();
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  return milliseconds_since(start);
}

// 4c. Events are timestamps taken by the GPU itself, in stream order: they bracket exactly
// the work queued between them.
double time_with_events(const std::function<void()>& work) {
  cudaEvent_t start, stop;
  COURSE_CUDA_CHECK(cudaEventCreate(&start));
  COURSE_CUDA_CHECK(cudaEventCreate(&stop));
  COURSE_CUDA_CHECK(cudaEventRecord(start));
  work();
  COURSE_CUDA_CHECK(cudaEventRecord(stop));
  COURSE_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  COURSE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  COURSE_CUDA_CHECK(cudaEventDestroy(start));
  COURSE_CUDA_CHECK(cudaEventDestroy(stop));
  return ms;
}

// 4d. Warm up (module load, clocks ramping up), then take the median: one slow trial (an
// interrupt, a clock change) moves the mean but not the median.
TimingStats time_repeated(const std::function<void()>& work, int trials, int warmup) {
  course::require(trials > 0 && warmup >= 0, "time_repeated: need trials > 0 and warmup >= 0");
  for (int i = 0; i < warmup; ++i) work();
  std::vector<double> ms(static_cast<std::size_t>(trials));
  for (auto& t : ms) t = time_with_events(work);
  std::sort(ms.begin(), ms.end());
  TimingStats s;
  const std::size_t mid = ms.size() / 2;
  s.median_ms = ms.size() % 2 ? ms[mid] : 0.5 * (ms[mid - 1] + ms[mid]);
  double sum = 0;
  for (double t : ms) sum += t;
  s.mean_ms = sum / static_cast<double>(ms.size());
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  return s;
}

void spin(double microseconds) {
  course::require(microseconds >= 0, "spin: microseconds must be >= 0");
  spin_kernel<<<1, 1>>>(static_cast<unsigned long long>(microseconds * 1000.0));
  COURSE_LAUNCH_CHECK();
}

}  // namespace d01
