// Given, not an exercise: the ceiling of mma.sync.m16n8k16 on this GPU, which bench_d10.cu times
// as BM_mma_sync_ceiling next to step 6 (lesson §7.7). Registers only: each mma depends on the
// previous one of its chain, and the kMmaCeilingChains chains of a warp are independent, so the
// Tensor Cores' issue rate, not a latency, is what the row measures.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "course/check.h"
#include "course/mma.cuh"
#include "lab.h"

namespace d10 {
namespace {

__global__ void __launch_bounds__(kMmaCeilingThreads)
    mma_sync_ceiling_kernel(float* __restrict__ out, int iterations) {
  constexpr std::uint32_t kOnes = 0x3F803F80u;  // two bfloat16 1.0
  const std::uint32_t a[4] = {kOnes, kOnes, kOnes, kOnes};
  float acc[kMmaCeilingChains][4] = {};
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int j = 0; j < kMmaCeilingChains; ++j)
      course::mma_16816<bfloat16>(acc[j], a, kOnes, kOnes);
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kMmaCeilingChains; ++j) sum += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
  out[static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

}  // namespace

void mma_sync_ceiling(float* out, int blocks, int iterations) {
  mma_sync_ceiling_kernel<<<blocks, kMmaCeilingThreads>>>(out, iterations);
  COURSE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace d10
