// float64 CPU references for Day 6: sums, RMSNorm, fused add + RMSNorm, LayerNorm.
//
// Inputs are the values the GPU saw (already rounded to their dtype), as float64; matrices are
// row-major [rows, cols]. Every normalisation works on one row at a time:
//   rmsnorm(x)[c]   = x[c] / sqrt(mean_c(x^2) + eps) * w[c]
//   layernorm(x)[c] = (x[c] - mean) / sqrt(var + eps) * gamma[c] + beta[c]
// with the BIASED variance var = mean_c((x - mean)^2), as torch.nn.LayerNorm computes it.
//
// The sums are compensated (Neumaier), so that even 2^24 float32 values of mixed sign are
// summed to within a few float64 ulps: the reference must be far more accurate than the GPU's
// float32 result it grades. Non-finite values follow IEEE arithmetic: a NaN in a row makes every
// output of that row NaN (the row's statistics are NaN), as it does in PyTorch.
#pragma once

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace course::reference {

// Compensated sum of n values (Neumaier's variant of Kahan summation): the rounding error of
// every addition is recovered exactly and added back at the end. Falls back to the plain sum
// when that is not finite (an Inf or NaN input), where compensation would turn Inf into NaN.
inline double sum(const double* x, std::size_t n) {
  double s = 0.0, compensation = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = s + x[i];
    // The low-order bits lost by s + x[i]: exact in float64 (Fast2Sum on the larger operand).
    compensation += std::fabs(s) >= std::fabs(x[i]) ? (s - t) + x[i] : (x[i] - t) + s;
    s = t;
  }
  return std::isfinite(s) ? s + compensation : s;
}

inline double sum(const std::vector<double>& x) { return sum(x.data(), x.size()); }

// sum_c |x[c]|: the scale of a sum's rounding error (Day 6, lesson §2). A float sum's error is
// bounded by (depth of the summation) * u * sum|x|, not by anything proportional to |sum x|,
// which may be near zero when positive and negative values cancel.
inline double sum_abs(const std::vector<double>& x) {
  double s = 0.0;
  for (double v : x) s += std::fabs(v);
  return s;
}

namespace detail {
inline void require_shape(const std::vector<double>& v, std::size_t size, const char* what) {
  if (v.size() != size)
    throw std::invalid_argument(std::string("norm reference: ") + what + " has " +
                                std::to_string(v.size()) + " values, expected " +
                                std::to_string(size));
}
}  // namespace detail

// sums[r] = sum_c x[r, c]
inline std::vector<double> row_sums(const std::vector<double>& x, std::size_t rows,
                                    std::size_t cols) {
  detail::require_shape(x, rows * cols, "x");
  std::vector<double> out(rows);
  for (std::size_t r = 0; r < rows; ++r) out[r] = sum(x.data() + r * cols, cols);
  return out;
}

// 1 / sqrt(mean_c(x[c]^2) + eps) for one row of `cols` values.
inline double rms_inverse(const double* x, std::size_t cols, double eps) {
  std::vector<double> sq(cols);
  for (std::size_t c = 0; c < cols; ++c) sq[c] = x[c] * x[c];
  return 1.0 / std::sqrt(sum(sq.data(), cols) / static_cast<double>(cols) + eps);
}

// y[r, c] = x[r, c] / sqrt(mean_c(x[r, :]^2) + eps) * w[c]   (Llama's RMSNorm)
inline std::vector<double> rmsnorm(const std::vector<double>& x, const std::vector<double>& w,
                                   std::size_t rows, std::size_t hidden, double eps) {
  detail::require_shape(x, rows * hidden, "x");
  detail::require_shape(w, hidden, "w");
  std::vector<double> y(rows * hidden);
  for (std::size_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * hidden;
    const double inv = rms_inverse(xr, hidden, eps);
    for (std::size_t c = 0; c < hidden; ++c) y[r * hidden + c] = xr[c] * inv * w[c];
  }
  return y;
}

// Fused residual add + RMSNorm, with the semantics of vLLM's fused_add_rms_norm and
// FlashInfer's fused_add_rmsnorm: the residual stream is updated in place, then normalised.
//   residual_out = x + residual
//   y            = rmsnorm(residual_out) * w
// The reference returns both, exactly (the GPU stores residual_out rounded to its dtype).
struct FusedAddRmsNormResult {
  std::vector<double> residual;  // the new residual stream, x + residual
  std::vector<double> y;         // the normalised output
};

inline FusedAddRmsNormResult fused_add_rmsnorm(const std::vector<double>& x,
                                               const std::vector<double>& residual,
                                               const std::vector<double>& w, std::size_t rows,
                                               std::size_t hidden, double eps) {
  detail::require_shape(x, rows * hidden, "x");
  detail::require_shape(residual, rows * hidden, "residual");
  FusedAddRmsNormResult out;
  out.residual.resize(rows * hidden);
  for (std::size_t i = 0; i < rows * hidden; ++i) out.residual[i] = x[i] + residual[i];
  out.y = rmsnorm(out.residual, w, rows, hidden, eps);
  return out;
}

// LayerNorm over the last dimension, with the per-row statistics PyTorch keeps for the
// backward pass: mean[r] and rstd[r] = 1 / sqrt(var[r] + eps), var biased (divided by cols).
struct LayerNormResult {
  std::vector<double> y;
  std::vector<double> mean;
  std::vector<double> rstd;
};

inline LayerNormResult layernorm(const std::vector<double>& x, const std::vector<double>& gamma,
                                 const std::vector<double>& beta, std::size_t rows,
                                 std::size_t hidden, double eps) {
  detail::require_shape(x, rows * hidden, "x");
  detail::require_shape(gamma, hidden, "gamma");
  detail::require_shape(beta, hidden, "beta");
  LayerNormResult out;
  out.y.resize(rows * hidden);
  out.mean.resize(rows);
  out.rstd.resize(rows);
  std::vector<double> sq(hidden);
  for (std::size_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * hidden;
    // Two passes over the row (the mean, then the squared deviations from it): in float64 and
    // compensated, this is as exact as a reference needs. The GPU does it in one pass (Welford).
    const double mean = hidden ? sum(xr, hidden) / static_cast<double>(hidden) : 0.0;
    for (std::size_t c = 0; c < hidden; ++c) sq[c] = (xr[c] - mean) * (xr[c] - mean);
    const double var = hidden ? sum(sq.data(), hidden) / static_cast<double>(hidden) : 0.0;
    const double rstd = 1.0 / std::sqrt(var + eps);
    out.mean[r] = mean;
    out.rstd[r] = rstd;
    for (std::size_t c = 0; c < hidden; ++c)
      out.y[r * hidden + c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
  }
  return out;
}

}  // namespace course::reference
