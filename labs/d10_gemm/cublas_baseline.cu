// Given, not an exercise: cuBLAS and cuBLASLt on the same GEMMs, the vendor baselines of
// bench_d10.cu. It lives in its own small library linked into the benchmarks only (kernel.cu
// stays free of libraries).
//
// cuBLAS is column-major, so every row-major matrix is read as its transpose: C [M, N] row-major
// is C^T [N, M] column-major (leading dimension N), and C^T = B^T A^T. So each call passes B
// first: B row-major [K, N] is B^T column-major (op N, leading dimension N); B stored [N, K] is
// already the [K, N] column-major matrix seen transposed (op T, leading dimension K); A row-major
// [M, K] is A^T column-major (op N, leading dimension K).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "course/buffer.h"
#include "course/check.h"
#include "course/cublas.h"
#include "lab.h"

namespace d10 {

using course::check_cublas;
using course::cublas_handle;  // the default math mode: float32 GEMMs never run as TF32

namespace {

// The dimensions of every call, checked (course::cublas_dim: >= 0 and below 2^31).
struct Dims {
  int m, n, k;
};
Dims dims(const char* who, std::int64_t M, std::int64_t N, std::int64_t K) {
  return {course::cublas_dim(who, "M", M), course::cublas_dim(who, "N", N),
          course::cublas_dim(who, "K", K)};
}

}  // namespace

void gemm_0_cublas_fp32(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                        std::int64_t K) {
  const auto [m, n, k] = dims("gemm_0_cublas_fp32", M, N, K);
  if (m == 0 || n == 0) return;
  const float alpha = 1.0f, beta = 0.0f;
  check_cublas(cublasSgemm(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, n, A, k,
                           &beta, C, n),
               "cublasSgemm");
}

void gemm_0_cublas_bf16(const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M,
                        std::int64_t N, std::int64_t K, BLayout b_layout) {
  const auto [m, n, k] = dims("gemm_0_cublas_bf16", M, N, K);
  if (m == 0 || n == 0) return;
  const float alpha = 1.0f, beta = 0.0f;
  const bool row_major = b_layout == BLayout::kRowMajor;
  check_cublas(cublasGemmEx(cublas_handle(), row_major ? CUBLAS_OP_N : CUBLAS_OP_T, CUBLAS_OP_N, n,
                            m, k, &alpha, B, CUDA_R_16BF, row_major ? n : k, A, CUDA_R_16BF, k,
                            &beta, C, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

// cuBLASLt's FP8 matmul. Lt's "A" is our B ([N, K] = [K, N] column-major, op T: FP8 wants both
// operands K-major, which Lt spells TN), Lt's "B" is our A ([M, K] = [K, M] column-major, op N),
// D [N, M] column-major is our C. D = scaleA * scaleB * op(A) op(B), bfloat16 (C likewise, unused:
// beta = 0). Fast accumulation is ON: the products are summed in the Tensor Cores' accumulators
// for the whole K, as step 8 does (off, cuBLASLt adds them into float32 every few k-blocks on the
// CUDA cores, a different and slower kernel). One plan (descriptors + heuristic's algorithm) per
// shape, made once per process.
void gemm_0_cublaslt_fp8(const fp8_e4m3* A, const fp8_e4m3* B, bfloat16* C, std::int64_t M,
                         std::int64_t N, std::int64_t K, const float* scale_a,
                         const float* scale_b) {
  dims("gemm_0_cublaslt_fp8", M, N, K);  // cuBLASLt takes 64-bit sizes; the other rows' limits
  if (M == 0 || N == 0) return;
  static cublasLtHandle_t lt = [] {
    cublasLtHandle_t h = nullptr;
    check_cublas(cublasLtCreate(&h), "cublasLtCreate");
    return h;
  }();
  constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
  static course::DeviceBuffer<char> workspace(kWorkspaceBytes);
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  static std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, Plan> plans;
  const auto key = std::make_tuple(M, N, K);
  auto it = plans.find(key);
  if (it == plans.end()) {
    Plan p;
    check_cublas(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                 "cublasLtMatmulDescCreate");
    const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
    const std::int8_t fast_accum = 1;
    check_cublas(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans),
        "TRANSA");
    check_cublas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans,
                                                sizeof no_trans),
                 "TRANSB");
    check_cublas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                                                &fast_accum, sizeof fast_accum),
                 "FAST_ACCUM");
    check_cublas(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_8F_E4M3, K, N, K), "layout A");
    check_cublas(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_8F_E4M3, K, M, K), "layout B");
    check_cublas(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, N, M, N), "layout C");
    // The scale pointers are set per call below; the heuristic needs them set to something.
    check_cublas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                &scale_b, sizeof scale_b),
                 "A_SCALE_POINTER");
    check_cublas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                &scale_a, sizeof scale_a),
                 "B_SCALE_POINTER");
    cublasLtMatmulPreference_t pref = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    check_cublas(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &kWorkspaceBytes, sizeof kWorkspaceBytes),
        "MAX_WORKSPACE_BYTES");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0)
      throw std::runtime_error("cuBLASLt has no FP8 algorithm for M = " + std::to_string(M) +
                               ", N = " + std::to_string(N) + ", K = " + std::to_string(K));
    p.algo = result.algo;
    it = plans.emplace(key, p).first;
  }
  Plan& p = it->second;
  check_cublas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                              &scale_b, sizeof scale_b),
               "A_SCALE_POINTER");
  check_cublas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                              &scale_a, sizeof scale_a),
               "B_SCALE_POINTER");
  const float alpha = 1.0f, beta = 0.0f;
  check_cublas(cublasLtMatmul(lt, p.desc, &alpha, B, p.a, A, p.b, &beta, C, p.c, C, p.c, &p.algo,
                              workspace.data(), kWorkspaceBytes, nullptr),
               "cublasLtMatmul");
}

}  // namespace d10
