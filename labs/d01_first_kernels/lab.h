// Day 1 — the programming model, first kernels, honest timing.
//
// The interface the tests and the benchmark call. Pointers are device pointers; every
// function checks its arguments and throws course::InvalidArgument (a message, never an
// illegal address) or course::CudaError. Exercises are numbered as in README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace d01 {

// Exercise 1: c[i] = a[i] + b[i] for 0 <= i < n, one thread per element.
void vector_add(const float* a, const float* b, float* c, std::int64_t n);

// Exercise 2: y[i] = alpha * x[i] + y[i] with a grid-stride loop, so that ANY grid is correct.
// grid_blocks = 0 lets the launcher choose (enough blocks to fill the GPU); the tests also
// pass tiny grids (1 block, 3 blocks) that must still cover every element.
void saxpy(float alpha, const float* x, float* y, std::int64_t n, int grid_blocks = 0,
           int block_threads = 256);

// Exercise 3: what later days need to know about the GPU.
struct DeviceInfo {
  char name[256] = {};
  int cc_major = 0, cc_minor = 0;  // compute capability
  int sm_count = 0;                // streaming multiprocessors
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  std::size_t smem_per_block = 0;        // shared memory a block gets without opting in
  std::size_t smem_per_block_optin = 0;  // ... and the most it can opt in to
  std::size_t smem_per_sm = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_mem_bytes = 0;
};
DeviceInfo query_device(int device = 0);

// Exercise 4: timing. Each function runs `work` (which launches GPU work and returns at once)
// and returns milliseconds.
double time_with_host_clock(const std::function<void()>& work);         // 4a: the trap
double time_with_host_clock_synced(const std::function<void()>& work);  // 4b
double time_with_events(const std::function<void()>& work);             // 4c
struct TimingStats {
  double median_ms = -1, mean_ms = -1, min_ms = -1, max_ms = -1;
};
// 4d: `warmup` untimed runs, then `trials` runs each timed with events.
TimingStats time_repeated(const std::function<void()>& work, int trials, int warmup);

// Given (not an exercise): a kernel of one thread that spins for `microseconds` of GPU time,
// so that the timing exercises have work of known length.
void spin(double microseconds);

}  // namespace d01
