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
  course::require(M >= 0 && N >= 0 && K >= 1, "gemm_0_cublas: bad shape");
  course::require(
      M < (std::int64_t{1} << 31) && N < (std::int64_t{1} << 31) && K < (std::int64_t{1} << 31),
      "gemm_0_cublas: M, N and K must be below 2^31");
  if (M == 0 || N == 0) return;
  const cublasHandle_t handle = course::cublas_handle();
  const float alpha = 1.0f, beta = 0.0f;
  const int m = static_cast<int>(M), n = static_cast<int>(N), k = static_cast<int>(K);
  course::check_cublas(
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, n, A, k, &beta, C, n),
      "cublasSgemm", "gemm_0_cublas");
}

}  // namespace d13
