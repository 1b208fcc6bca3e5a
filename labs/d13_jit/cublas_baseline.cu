// Given, not an exercise: cuBLAS on the GEMM of Exercise 7, the vendor baseline of bench_d13.cu.
//
// C = A B, float32, row-major, as one cublasSgemm in its default math mode (float32 FMA, not
// TF32). cuBLAS is column-major, so the row-major matrices are read as their transposes: C^T =
// B^T A^T, with B [K, N] row-major = B^T [N, K] column-major (leading dimension N), A likewise
// (leading dimension K) and C^T column-major with leading dimension N. It lives in its own small
// library linked into the benchmarks only (kernel.cu stays free of libraries other than NVRTC).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "lab.h"

namespace d13 {

namespace {
void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("gemm_0_cublas: ") + what + " failed with status " +
                             std::to_string(static_cast<int>(status)));
}
}  // namespace

void gemm_0_cublas(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                   std::int64_t K) {
  course::require(M >= 0 && N >= 0 && K >= 1, "gemm_0_cublas: bad shape");
  course::require(
      M < (std::int64_t{1} << 31) && N < (std::int64_t{1} << 31) && K < (std::int64_t{1} << 31),
      "gemm_0_cublas: M, N and K must be below 2^31");
  if (M == 0 || N == 0) return;
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cublasCreate");
    return h;
  }();
  const float alpha = 1.0f, beta = 0.0f;
  const int m = static_cast<int>(M), n = static_cast<int>(N), k = static_cast<int>(K);
  check_cublas(
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, n, A, k, &beta, C, n),
      "cublasSgemm");
}

}  // namespace d13
