// Given, not an exercise: CUB's stream compaction, the vendor baseline of bench_d05.cu.
//
// cub::DeviceSelect::If is a one-pass compaction (decoupled look-back, lesson §11.3). It lives
// here, in its own small library linked into the benchmarks only, rather than in kernel.cu:
// CUB's select kernel spills a few registers to local memory when compiled for sm_80 (CUDA
// 13.0), and the course's no-local-memory check holds every kernel of the solution to zero.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cub/device/device_select.cuh>

#include "course/buffer.h"
#include "course/check.h"
#include "lab.h"

namespace d05 {

namespace {
struct GreaterThan {
  float threshold;
  __host__ __device__ bool operator()(const float& v) const { return v > threshold; }
};
}  // namespace

std::int64_t compact_cub(const float* x, std::int64_t n, float threshold, float* out) {
  course::require(n >= 0, "compact_cub: n must be >= 0");
  course::require(n == 0 || (x && out), "compact_cub: null pointer");
  // CUB's scratch memory and its output count, kept between calls (grown when needed): a
  // cudaMalloc per call would be timed with the compaction.
  static auto* temp = new course::DeviceBuffer<char>;
  static auto* selected = new course::DeviceBuffer<std::int64_t>(1);
  std::size_t temp_bytes = 0;
  COURSE_CUDA_CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, x, out, selected->data(), n,
                                          GreaterThan{threshold}));
  if (temp->bytes() < temp_bytes) *temp = course::DeviceBuffer<char>(temp_bytes);
  COURSE_CUDA_CHECK(cub::DeviceSelect::If(temp->data(), temp_bytes, x, out, selected->data(), n,
                                          GreaterThan{threshold}));
  std::int64_t count = -1;
  COURSE_CUDA_CHECK(cudaMemcpy(&count, selected->data(), sizeof count, cudaMemcpyDeviceToHost));
  return count;
}

}  // namespace d05
