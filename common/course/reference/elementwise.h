// float64 CPU references for the elementwise operations of Days 1-2.
// Inputs are the values the GPU saw (already rounded to their dtype), as float64.
#pragma once

#include <cstddef>
#include <vector>

namespace course::reference {

// c[i] = a[i] + b[i]
inline std::vector<double> vector_add(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> c(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) c[i] = a[i] + b[i];
  return c;
}

// y[i] = alpha * x[i] + y[i]   (BLAS's SAXPY, returned rather than in place)
inline std::vector<double> saxpy(double alpha, const std::vector<double>& x,
                                 const std::vector<double>& y) {
  std::vector<double> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = alpha * x[i] + y[i];
  return out;
}

}  // namespace course::reference
