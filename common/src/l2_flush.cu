// The harness's two kernels: the L2 flush (course/bench.h), which reads a scratch buffer twice
// the size of the L2, and the fill that poisons a DeviceBuffer (course/buffer.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

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

namespace course::detail {
namespace {

// Writes `pattern` (one word of W bytes, replicated into a 16-byte vector) over the buffer: 16
// bytes a store where the pointer allows, the head and tail byte by byte.
__global__ void fill_kernel(unsigned char* __restrict__ data, std::size_t bytes, uint4 pattern16,
                            int pattern_bytes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const auto address = reinterpret_cast<std::uintptr_t>(data);
  // Bytes before the first 16-byte boundary, then whole vectors, then the tail. The pattern
  // repeats every pattern_bytes (which divides 16 and the buffer's start offset in words).
  const std::size_t to_boundary = (16 - address % 16) % 16;
  const std::size_t head = to_boundary < bytes ? to_boundary : bytes;
  const auto* p16 = reinterpret_cast<const unsigned char*>(&pattern16);
  for (std::size_t i = first; i < head; i += stride) data[i] = p16[i % pattern_bytes];
  const std::size_t vectors = (bytes - head) / 16;
  uint4* body = reinterpret_cast<uint4*>(data + head);
  // The vector pattern must start where byte `head` of the buffer falls in the pattern.
  uint4 shifted;
  auto* s = reinterpret_cast<unsigned char*>(&shifted);
  for (int k = 0; k < 16; ++k) s[k] = p16[(head + k) % pattern_bytes];
  for (std::size_t v = first; v < vectors; v += stride) body[v] = shifted;
  for (std::size_t i = head + vectors * 16 + first; i < bytes; i += stride)
    data[i] = p16[i % pattern_bytes];
}

}  // namespace

void fill_pattern(void* data, std::size_t bytes, const void* pattern, std::size_t pattern_bytes) {
  require(pattern_bytes == 1 || pattern_bytes == 2 || pattern_bytes == 4 || pattern_bytes == 8 ||
              pattern_bytes == 16,
          "fill_pattern: the pattern must be 1, 2, 4, 8 or 16 bytes");
  if (bytes == 0) return;
  uint4 pattern16;
  auto* p = reinterpret_cast<unsigned char*>(&pattern16);
  for (std::size_t k = 0; k < 16; ++k)
    p[k] = static_cast<const unsigned char*>(pattern)[k % pattern_bytes];
  const int grid = static_cast<int>(std::min<std::size_t>((bytes / 16 + 255) / 256 + 1, 65535));
  fill_kernel<<<grid, 256>>>(static_cast<unsigned char*>(data), bytes, pattern16,
                             static_cast<int>(pattern_bytes));
  COURSE_LAUNCH_CHECK();
  COURSE_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

}  // namespace course::detail
