// float64 CPU reference for the row softmax (Days 5 and 6).
//
//   softmax(x)[c] = exp(x[c] - m) / sum_k exp(x[k] - m),   m = max_k x[k]
//
// Subtracting the row maximum m changes nothing mathematically (the factor exp(-m) cancels)
// but keeps every exponent <= 0, so nothing overflows: this is the numerically stable form
// every kernel of the course computes, and the one PyTorch computes.
//
// Non-finite inputs follow PyTorch's torch.softmax (which is exactly what the stable formula
// gives in IEEE arithmetic), so a kernel that computes the formula honestly matches:
//   - x[c] = -inf              -> y[c] = 0: a masked-out entry (attention masks use this);
//   - every entry -inf         -> the whole row is NaN (m = -inf, and -inf - -inf = NaN);
//   - any entry NaN            -> the whole row is NaN (the max and the sum are NaN);
//   - any entry +inf           -> the whole row is NaN (m = +inf, +inf - +inf = NaN), not the
//                                 one-hot limit a mathematician might expect.
// Large finite values (1e4, 3e38) are fine: after subtracting m the exponents are <= 0.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

namespace course::reference {

// One row of `cols` values at x, written to y (y may equal x).
inline void softmax_row(const double* x, std::size_t cols, double* y) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double m = -std::numeric_limits<double>::infinity();
  bool poisoned = false;  // a NaN or +inf anywhere makes the whole row NaN
  for (std::size_t c = 0; c < cols; ++c) {
    if (std::isnan(x[c]) || x[c] == std::numeric_limits<double>::infinity()) poisoned = true;
    if (x[c] > m) m = x[c];
  }
  if (poisoned || m == -std::numeric_limits<double>::infinity()) {  // includes the all -inf row
    for (std::size_t c = 0; c < cols; ++c) y[c] = nan;
    return;
  }
  double sum = 0.0;
  for (std::size_t c = 0; c < cols; ++c) sum += std::exp(x[c] - m);  // exp(-inf) = 0: masked
  // sum >= 1: the maximum itself contributes exp(0) = 1, so the division is always safe.
  for (std::size_t c = 0; c < cols; ++c) y[c] = std::exp(x[c] - m) / sum;
}

// Softmax of every row of a row-major [rows, cols] matrix.
inline std::vector<double> softmax_rows(const std::vector<double>& x, std::size_t rows,
                                        std::size_t cols) {
  if (x.size() != rows * cols)
    throw std::invalid_argument("softmax_rows: x must hold rows * cols values");
  std::vector<double> y(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    softmax_row(x.data() + r * cols, cols, y.data() + r * cols);
  return y;
}

}  // namespace course::reference
