// Given, not an exercise: cuBLAS on the day's GEMM, the vendor baseline of bench_d09.cu.
//
// C = A B as one cublasGemmEx: bfloat16 A and B, float32 C, float32 accumulation. cuBLAS is
// column-major, so it computes the transpose: C [M, N] row-major is C^T [N, M] column-major, and
// C^T = B^T A^T. B stored [N, K] row-major is a column-major K x N matrix (leading dimension K):
// op = transpose makes it the N x K factor; A [M, K] row-major is a column-major K x M matrix,
// used as it is. It lives in its own small library linked into the benchmarks only (kernel.cu
// stays free of libraries).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "course/check.h"
#include "course/cublas.h"
#include "lab.h"

namespace d09 {

void gemm_0_cublas(const bfloat16* A, const bfloat16* B, float* C, std::int64_t M, std::int64_t N,
                   std::int64_t K) {
  const int m = course::cublas_dim("gemm_0_cublas", "M", M);
  const int n = course::cublas_dim("gemm_0_cublas", "N", N);
  const int k = course::cublas_dim("gemm_0_cublas", "K", K);
  if (m == 0 || n == 0) return;
  const cublasHandle_t handle = course::cublas_handle();
  const float alpha = 1.0f, beta = 0.0f;
  // C^T [N, M] = op(B) [N, K] * A^T [K, M], all column-major.
  course::check_cublas(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, B,
                                    CUDA_R_16BF, k, A, CUDA_R_16BF, k, &beta, C, CUDA_R_32F, n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmEx", "gemm_0_cublas");
}

}  // namespace d09
