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

#include "course/check.h"
#include "course/cublas.h"
#include "lab.h"

namespace d13 {

void gemm_0_cublas(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                   std::int64_t K) {
  // K >= 1, as the day's own GEMM (lab.h).
  const int m = course::cublas_dim("gemm_0_cublas", "M", M);
  const int n = course::cublas_dim("gemm_0_cublas", "N", N);
  const int k = course::cublas_dim("gemm_0_cublas", "K", K, 1);
  if (m == 0 || n == 0) return;
  const cublasHandle_t handle = course::cublas_handle();
  const float alpha = 1.0f, beta = 0.0f;
  course::check_cublas(
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, n, A, k, &beta, C, n),
      "cublasSgemm", "gemm_0_cublas");
}

}  // namespace d13
