// Given, not an exercise: cuBLAS on the GEMV of decoding, the vendor baseline of bench_d07.cu.
//
// y = W x as one cublasGemmEx: bfloat16 W and x, float32 y, float32 accumulation. cuBLAS is
// column-major, so the row-major matrices are read as their transposes: W [N, K] row-major is
// W^T [K, N] column-major (leading dimension K), x [batch, K] is x^T [K, batch], and y [batch, N]
// row-major is y^T [N, batch] column-major = op(W^T) x^T with op = transpose. It lives in its own
// small library linked into the benchmarks only (kernel.cu stays free of libraries).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "course/check.h"
#include "course/cublas.h"
#include "lab.h"

namespace d07 {

void gemv_0_cublas(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                   int batch) {
  const int n = course::cublas_dim("gemv_0_cublas", "N", N);
  const int k = course::cublas_dim("gemv_0_cublas", "K", K);
  course::cublas_dim("gemv_0_cublas", "batch", batch, 1);
  if (n == 0) return;
  const cublasHandle_t handle = course::cublas_handle();
  const float alpha = 1.0f, beta = 0.0f;
  course::check_cublas(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, batch, k, &alpha, W,
                                    CUDA_R_16BF, k, x, CUDA_R_16BF, k, &beta, y, CUDA_R_32F, n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmEx", "gemv_0_cublas");
}

}  // namespace d07
