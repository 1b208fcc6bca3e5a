// float64 CPU reference for the matrix-vector product of decoding (Day 7).
//
//   y[b, n] = sum_k W[n, k] * x[b, k]   for 0 <= b < batch, 0 <= n < rows
//
// W is row-major [rows, cols], x row-major [batch, cols], y row-major [batch, rows]. The inputs
// are taken in their own type (a 16-bit weight matrix is too large to copy to float64 on the
// host) and converted element by element with `to_double`. The products of two bfloat16 values
// are exact in float64 and the sums of a few thousand of them lose nothing a float32 kernel could
// be graded on.
#pragma once

#include <cstddef>
#include <vector>

namespace course::reference {

// One output element: the dot product of row n of W with row b of x.
template <class T, class ToDouble>
double gemv_at(const std::vector<T>& W, const std::vector<T>& x, std::size_t cols, std::size_t n,
               std::size_t b, ToDouble to_double) {
  double sum = 0.0;
  const T* w_row = W.data() + n * cols;
  const T* x_row = x.data() + b * cols;
  for (std::size_t k = 0; k < cols; ++k) sum += to_double(w_row[k]) * to_double(x_row[k]);
  return sum;
}

// The whole output, [batch, rows].
template <class T, class ToDouble>
std::vector<double> gemv(const std::vector<T>& W, const std::vector<T>& x, std::size_t rows,
                         std::size_t cols, std::size_t batch, ToDouble to_double) {
  std::vector<double> y(batch * rows);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t n = 0; n < rows; ++n) y[b * rows + n] = gemv_at(W, x, cols, n, b, to_double);
  return y;
}

}  // namespace course::reference
