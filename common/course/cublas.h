// cuBLAS for the vendor baselines (first used on Day 7's gemv_0_cublas; Days 9, 10 and 13 use
// this copy): the status check and the one handle a program's baselines share. Host only, and
// included only by the days' cublas_baseline.cu: those small libraries link cuBLAS, the harness
// does not (course_add_lab's BASELINE_LIBRARIES).
#pragma once

#include <cublas_v2.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/check.h"

namespace course {

// Throws "<who>: <what> failed with status <n>" unless `status` is CUBLAS_STATUS_SUCCESS.
// cuBLASLt returns the same cublasStatus_t, so its calls are checked here too.
inline void check_cublas(cublasStatus_t status, const char* what, const char* who = "cuBLAS") {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(who) + ": " + what + " failed with status " +
                             std::to_string(static_cast<int>(status)));
}

// One dimension of a cuBLAS call: the course's interfaces take std::int64_t, cuBLAS takes int.
// Throws course::InvalidArgument "<who>: <name> = <value> must be >= <low>" or "... must be below
// 2^31" instead of letting the cast wrap.
inline int cublas_dim(const char* who, const char* name, std::int64_t value, std::int64_t low = 0) {
  const std::string what = std::string(who) + ": " + name + " = " + std::to_string(value);
  require(value >= low, what + " must be >= " + std::to_string(low));
  require(value < (std::int64_t{1} << 31), what + " must be below 2^31 (cuBLAS takes int)");
  return static_cast<int>(value);
}

// The cuBLAS handle, created on first use and kept for the life of the program (creating one
// costs milliseconds: never inside a timed call).
inline cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cublasCreate");
    // NOTE: the default math mode: float32 GEMMs run as float32 FMAs, never as TF32 (which
    // would be a different, less accurate, product than the days' float32 kernels compute).
    check_cublas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return h;
  }();
  return handle;
}

}  // namespace course
