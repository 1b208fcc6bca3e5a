// `d01_lab_device_query`: prints what later days size their kernels by, through your
// query_device() (exercise 3). Run it once on every GPU you work on.
#include <cstdio>

#include "course/check.h"
#include "lab.h"

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device visible\n");
    return 1;
  }
  for (int dev = 0; dev < count; ++dev) {
    const d01::DeviceInfo d = d01::query_device(dev);
    std::printf("device %d: %s, compute capability %d.%d\n", dev, d.name, d.cc_major, d.cc_minor);
    std::printf("  SMs                        %d\n", d.sm_count);
    std::printf("  warp size                  %d\n", d.warp_size);
    std::printf("  threads per block / per SM %d / %d\n", d.max_threads_per_block,
                d.max_threads_per_sm);
    std::printf("  shared memory per block    %zu KiB (%zu KiB opt-in)\n", d.smem_per_block / 1024,
                d.smem_per_block_optin / 1024);
    std::printf("  shared memory per SM       %zu KiB\n", d.smem_per_sm / 1024);
    std::printf("  L2 cache                   %zu MiB\n", d.l2_bytes >> 20);
    std::printf("  global memory              %zu GiB\n", d.global_mem_bytes >> 30);
  }
  return 0;
}
