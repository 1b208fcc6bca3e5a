// What both bindings of the course's kernels share (course_py.cpp, the C ABI called through
// ctypes; course_py_tvm_ffi.cpp, the same functions exported with TVM-FFI): running the Days 6,
// 10 and 12 launchers, which use the legacy default stream, in order on the caller's stream, and
// choosing Day 10's GEMM for the GPU. Throws std::runtime_error; each binding reports it its own
// way.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>

#include "../../labs/d14_capstone/layer_parts.h"

namespace course_py {

inline bool is_legacy(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }

// Runs `work` (launches on the legacy default stream) ordered on `stream`: after the work already
// queued there, and before what the caller queues there next (lesson 14 §2.3).
template <class F>
void on_stream(cudaStream_t stream, F&& work) {
  if (is_legacy(stream)) {
    work();
    return;
  }
  cudaEvent_t e = nullptr;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess)
    throw std::runtime_error("cudaEventCreate failed");
  struct Destroy {
    cudaEvent_t e;
    ~Destroy() { cudaEventDestroy(e); }
  } destroy{e};
  cudaEventRecord(e, stream);
  cudaStreamWaitEvent(cudaStreamLegacy, e, 0);
  work();
  cudaEventRecord(e, cudaStreamLegacy);
  cudaStreamWaitEvent(stream, e, 0);
}

// c [M, N] = a [M, K] b^T: the layer's own choice of Day 10's GEMM (layer_parts.h).
using d14::gemm_bt;

}  // namespace course_py
