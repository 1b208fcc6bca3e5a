// float64 CPU references for matrix products (Days 9 and 10).
//
//   C[m, n] = sum_k A[m, k] * B(k, n)      0 <= m < M, 0 <= n < N
//
// A is row-major [M, K]. B comes in one of the two layouts the course's GEMMs take:
//   kRowMajor:  B row-major [K, N]: B(k, n) = B[k * N + n] (the layout of a textbook "A times B")
//   kColMajor:  B row-major [N, K]: B(k, n) = B[n * K + k], i.e. B stored column by column. This
//               is the layout cuBLAS calls "TN" for a row-major product, the one a weight matrix
//               kept as [out_features, in_features] has: both operands are contiguous along K,
//               which is what ldmatrix (without .trans) and FP8 wgmma want.
// Inputs are taken in their own type and converted element by element with `to_double`, so a
// 16-bit matrix is never copied whole to float64. Products of two 16-bit (or 8-bit) values are
// exact in float64, and sums of up to millions of them lose nothing a float32 accumulation could
// be graded on.
//
// gemm_abs_at is sum_k |A[m, k] * B(k, n)|: the scale that bounds a float32 accumulation's error
// (at most about K * 2^-24 of it, far less in practice) and so the tolerance a test may grant an
// element whose value cancels to near zero.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace course::reference {

enum class BLayout { kRowMajor, kColMajor };

inline std::size_t b_index(BLayout layout, std::size_t N, std::size_t K, std::size_t k,
                           std::size_t n) {
  return layout == BLayout::kRowMajor ? k * N + n : n * K + k;
}

// One element of C, and the sum of the absolute values of its products.
template <class T, class U, class ToDouble>
double gemm_at(const std::vector<T>& A, const std::vector<U>& B, std::size_t N, std::size_t K,
               BLayout layout, std::size_t m, std::size_t n, ToDouble to_double,
               double* abs_sum = nullptr) {
  double sum = 0.0, abs = 0.0;
  const T* a_row = A.data() + m * K;
  for (std::size_t k = 0; k < K; ++k) {
    const double p = to_double(a_row[k]) * to_double(B[b_index(layout, N, K, k, n)]);
    sum += p;
    abs += std::fabs(p);
  }
  if (abs_sum) *abs_sum = abs;
  return sum;
}

// The whole of C, row-major [M, N] (for test sizes; a benchmark samples gemm_at instead).
template <class T, class U, class ToDouble>
std::vector<double> gemm(const std::vector<T>& A, const std::vector<U>& B, std::size_t M,
                         std::size_t N, std::size_t K, BLayout layout, ToDouble to_double) {
  std::vector<double> C(M * N);
  std::vector<double> b_col(K);
  for (std::size_t n = 0; n < N; ++n) {
    for (std::size_t k = 0; k < K; ++k) b_col[k] = to_double(B[b_index(layout, N, K, k, n)]);
    for (std::size_t m = 0; m < M; ++m) {
      const T* a_row = A.data() + m * K;
      double sum = 0.0;
      for (std::size_t k = 0; k < K; ++k) sum += to_double(a_row[k]) * b_col[k];
      C[m * N + n] = sum;
    }
  }
  return C;
}

}  // namespace course::reference
