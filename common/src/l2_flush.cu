// The L2 flush's kernel (course/bench.h): read a scratch buffer twice the size of the L2.
#include <cuda_runtime.h>

#include <cstddef>

#include "course/bench.h"
#include "course/check.h"

namespace course::bench {
namespace {

// Every thread reads 16-byte vectors in a grid-stride loop and adds them up. The sum is stored
// only if it equals a value the zero-filled scratch can never produce: the loads cannot be
// optimised away, and nothing is written, so the flush leaves no dirty line behind.
__global__ void read_everything(const float4* __restrict__ scratch, std::size_t vectors,
                                float* __restrict__ sink) {
  float sum = 0.0f;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t v = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors;
       v += stride) {
    const float4 x = scratch[v];
    sum += x.x + x.y + x.z + x.w;
  }
  if (sum == 1.0f) sink[threadIdx.x] = sum;
}

}  // namespace

void read_through_l2(const void* scratch, std::size_t bytes, float* sink, int grid,
                     cudaStream_t stream) {
  read_everything<<<grid, 256, 0, stream>>>(static_cast<const float4*>(scratch),
                                            bytes / sizeof(float4), sink);
  COURSE_LAUNCH_CHECK();
}

}  // namespace course::bench
