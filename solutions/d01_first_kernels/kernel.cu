// >>> STARTER
//|// Day 1 — your kernels. Read lessons/d01_first_kernels.md first; README.md in this folder
//|// lists the exercises. Replace each TODO block; keep the names and the launchers' signatures
//|// (the tests call them through lab.h). Check with:  course check d01
// === SOLUTION
// Day 1 — reference solution.
// <<<
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
// >>> STARTER
// === SOLUTION
// The grid is rounded up to whole blocks, so the last block has threads past the end: the
// bounds test keeps them from writing outside c.
// <<<
__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, std::int64_t n) {
  // >>> STARTER d01.1
  //|  // TODO(d01.1): compute this thread's index i (as int64_t: n may exceed 2^31), and if i < n
  //|  // write c[i] = a[i] + b[i]. Without the bounds test the last block writes past the end.
  // === SOLUTION
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  // <<< d01.1
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 — grid-stride loop (lesson §4).
// >>> STARTER
//|// Thread t of the grid handles elements t, t + G, t + 2G, ... where G = gridDim.x * blockDim.x.
// === SOLUTION
// Thread t of the grid handles elements t, t + G, t + 2G, ... where G = gridDim.x * blockDim.x
// is the number of threads in the grid. Any grid covers every element, so the launcher can
// size the grid to the GPU (a few waves of blocks per SM) instead of to the data.
// <<<
__global__ void saxpy_kernel(float alpha, const float* __restrict__ x, float* __restrict__ y,
                             std::int64_t n) {
  // >>> STARTER d01.2
  //|  // TODO(d01.2): loop i from this thread's global index while i < n, stepping by the number of
  //|  // threads in the grid, and set y[i] = alpha * x[i] + y[i]. The tests launch grids of 1 and 3
  //|  // blocks: every element must still be written exactly once.
  // === SOLUTION
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    y[i] = alpha * x[i] + y[i];
  // <<< d01.2
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
    // >>> STARTER d01.2
    //|    // TODO(d01.2): choose the grid: enough blocks to fill every SM several times over
    //|    // (cudaDevAttrMultiProcessorCount), but never more than ceil(n / block_threads).
    //|    grid_blocks = 1;
    // === SOLUTION
    // Enough blocks to fill every SM several times over, but never more than the data needs.
    int device = 0, sms = 0;
    COURSE_CUDA_CHECK(cudaGetDevice(&device));
    COURSE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const std::int64_t needed = course::ceil_div<std::int64_t>(n, block_threads);
    grid_blocks = static_cast<int>(std::min<std::int64_t>(needed, std::int64_t{sms} * 8));
    // <<< d01.2
  }
  saxpy_kernel<<<grid_blocks, block_threads>>>(alpha, x, y, n);
  COURSE_LAUNCH_CHECK();
}

DeviceInfo query_device(int device) {
  // >>> STARTER d01.3
  // === SOLUTION
  cudaDeviceProp p{};
  COURSE_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  // <<< d01.3
  DeviceInfo info;
  // >>> STARTER d01.3
  //|  // TODO(d01.3): fill every field of info from cudaGetDeviceProperties(&prop, device)
  //|  // (wrap the call in COURSE_CUDA_CHECK). lab.h says what each field means; the lesson's §2
  //|  // names the cudaDeviceProp members.
  //|  (void)device;
  // === SOLUTION
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
  // <<< d01.3
  return info;
}

// ---------------------------------------------------------------------------------------------
// >>> STARTER
//|// Exercise 4 — timing (lesson §5). Return milliseconds; -1 means "not written yet".
// === SOLUTION
// Exercise 4 — timing (lesson §5).
// <<<
using Clock = std::chrono::steady_clock;

// >>> STARTER d01.4a
//|// 4a. The trap: time work() with a host clock and nothing else.
//|double time_with_host_clock(const std::function<void()>& work) {
//|  // TODO(d01.4a): read Clock::now() before and after work(); return the difference in ms.
//|  (void)work;
//|  return -1.0;
// === SOLUTION
double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  // <<< d01.4a
}

// >>> STARTER d01.4b
//|// 4b. Synchronise before starting the clock and before stopping it.
//|double time_with_host_clock_synced(const std::function<void()>& work) {
//|  // TODO(d01.4b): cudaDeviceSynchronize(), start the clock, work(), cudaDeviceSynchronize(),
//|  // stop the clock.
//|  (void)work;
//|  return -1.0;
// === SOLUTION
// 4a. The trap: the launch returns as soon as the work is queued, so this measures the
// launch (microseconds), not the kernel.
double time_with_host_clock(const std::function<void()>& work) {
  const auto start = Clock::now();
  work();
  return milliseconds_since(start);
  // <<< d01.4b
}

// >>> STARTER d01.4c
//|// 4c. CUDA events: timestamps taken by the GPU in stream order.
//|double time_with_events(const std::function<void()>& work) {
//|  // TODO(d01.4c): create two events, record one, work(), record the other, wait for it
//|  // (cudaEventSynchronize), read cudaEventElapsedTime, destroy both.
//|  (void)work;
//|  return -1.0;
// === SOLUTION
// 4b. Honest but coarse: wait for earlier work before starting the clock, and for this work
// before stopping it. Includes the launch overhead and the host's wake-up latency.
double time_with_host_clock_synced(const std::function<void()>& work) {
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto start = Clock::now();
  work();
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  return milliseconds_since(start);
  // <<< d01.4c
}

// >>> STARTER d01.4c
//|// 4d. Warm up, then time many trials with events and summarise them.
// === SOLUTION
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
// <<< d01.4c
TimingStats time_repeated(const std::function<void()>& work, int trials, int warmup) {
  course::require(trials > 0 && warmup >= 0, "time_repeated: need trials > 0 and warmup >= 0");
  // >>> STARTER d01.4c
  // === SOLUTION
  for (int i = 0; i < warmup; ++i) work();
  std::vector<double> ms(static_cast<std::size_t>(trials));
  for (auto& t : ms) t = time_with_events(work);
  std::sort(ms.begin(), ms.end());
  // <<< d01.4c
  TimingStats s;
  // >>> STARTER d01.4d
  //|  // TODO(d01.4d): run work() `warmup` times untimed, then `trials` times through
  //|  // time_with_events; fill median (the middle of the sorted times; the mean of the two middle
  //|  // ones for an even count), mean, min and max.
  //|  (void)work;
  // === SOLUTION
  const std::size_t mid = ms.size() / 2;
  s.median_ms = ms.size() % 2 ? ms[mid] : 0.5 * (ms[mid - 1] + ms[mid]);
  double sum = 0;
  for (double t : ms) sum += t;
  s.mean_ms = sum / static_cast<double>(ms.size());
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  // <<< d01.4d
  return s;
}

void spin(double microseconds) {
  course::require(microseconds >= 0, "spin: microseconds must be >= 0");
  spin_kernel<<<1, 1>>>(static_cast<unsigned long long>(microseconds * 1000.0));
  COURSE_LAUNCH_CHECK();
}

}  // namespace d01
