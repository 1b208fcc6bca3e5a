// float64 CPU references for the activation functions of transformer MLPs (Days 2, 3).
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace course::reference {

// GeLU, tanh approximation (as in GPT-2 and PyTorch's gelu(approximate="tanh")):
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
inline double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// SiLU (swish): x * sigmoid(x)
inline double silu(double x) { return x / (1.0 + std::exp(-x)); }

inline std::vector<double> gelu_tanh(const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = gelu_tanh(x[i]);
  return y;
}

// y[r, c] = gelu(x[r, c] + bias[c]) for a row-major [rows, cols] x and a bias of cols values.
inline std::vector<double> add_bias_gelu(const std::vector<double>& x,
                                         const std::vector<double>& bias) {
  const std::size_t cols = bias.size();
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = gelu_tanh(x[i] + bias[i % cols]);
  return y;
}

// Gated MLP activation: input [rows, 2d] holds the gate in columns [0, d) and the up
// projection in [d, 2d); out[r, c] = silu(gate[r, c]) * up[r, c], shape [rows, d].
inline std::vector<double> silu_and_mul(const std::vector<double>& input, std::size_t d) {
  const std::size_t rows = d ? input.size() / (2 * d) : 0;
  std::vector<double> out(rows * d);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < d; ++c)
      out[r * d + c] = silu(input[r * 2 * d + c]) * input[r * 2 * d + d + c];
  return out;
}

}  // namespace course::reference
