// float64 CPU reference for Day 14: RoPE fused with the QKV split, SiLU-and-mul, and the whole
// Llama-style decoder layer (prefill, causal, grouped-query attention).
//
// Inputs are the values the GPU saw, as float64. The layer's intermediates are stored by the GPU
// in bfloat16, so the reference rounds each of them at the same place through `round16` (the
// caller passes the dtype's rounding, e.g. course::DType<bfloat16>::from_double then back):
// what remains between the two is the float32-vs-float64 arithmetic inside each stage, and the
// rare intermediate that the two round to neighbouring 16-bit values. Without the roundings the
// reference would differ from ANY bfloat16 implementation by more than the tolerance.
//
//   rope: out[i] = x[i] cos(p f_i) - x[i + D/2] sin(p f_i),
//         out[i + D/2] = x[i + D/2] cos(p f_i) + x[i] sin(p f_i),   f_i = inv_freq[i]
//   silu_and_mul: out[t, i] = g / (1 + exp(-g)) * u,  g = gate_up[t, i], u = gate_up[t, I + i]
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "course/reference/attention.h"
#include "course/reference/gemm.h"
#include "course/reference/norm.h"

namespace course::reference {

using Round16 = std::function<double(double)>;

struct QkvSplit {
  std::vector<double> q, k, v;  // [tokens, heads, dim], [tokens, kv_heads, dim] x 2
};

// qkv [tokens, (heads + 2 kv_heads) dim]; inv_freq [dim / 2] (the float values the GPU used).
inline QkvSplit rope_qkv(const std::vector<double>& qkv, const std::vector<std::int32_t>& positions,
                         std::size_t tokens, std::size_t heads, std::size_t kv_heads,
                         std::size_t dim, const std::vector<double>& inv_freq) {
  const std::size_t half = dim / 2, row = (heads + 2 * kv_heads) * dim;
  QkvSplit s;
  s.q.resize(tokens * heads * dim);
  s.k.resize(tokens * kv_heads * dim);
  s.v.resize(tokens * kv_heads * dim);
  for (std::size_t t = 0; t < tokens; ++t) {
    const double p = positions[t];
    for (std::size_t h = 0; h < heads + kv_heads; ++h) {
      const double* x = qkv.data() + t * row + h * dim;
      double* o = h < heads ? s.q.data() + (t * heads + h) * dim
                            : s.k.data() + (t * kv_heads + h - heads) * dim;
      for (std::size_t i = 0; i < half; ++i) {
        const double a = p * inv_freq[i], c = std::cos(a), sn = std::sin(a);
        o[i] = x[i] * c - x[i + half] * sn;
        o[i + half] = x[i + half] * c + x[i] * sn;
      }
    }
    for (std::size_t e = 0; e < kv_heads * dim; ++e)
      s.v[t * kv_heads * dim + e] = qkv[t * row + (heads + kv_heads) * dim + e];
  }
  return s;
}

inline std::vector<double> silu_and_mul(const std::vector<double>& gate_up, std::size_t tokens,
                                        std::size_t inter) {
  std::vector<double> out(tokens * inter);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t i = 0; i < inter; ++i) {
      const double g = gate_up[t * 2 * inter + i], u = gate_up[t * 2 * inter + inter + i];
      out[t * inter + i] = g / (1.0 + std::exp(-g)) * u;
    }
  return out;
}

// C [m, n] = A [m, k] B^T, B [n, k] (a PyTorch Linear weight: gemm.h's column-major B), then
// round16 on every element.
inline std::vector<double> linear(const std::vector<double>& a, const std::vector<double>& b,
                                  std::size_t m, std::size_t n, std::size_t k,
                                  const Round16& round16) {
  std::vector<double> c = gemm(a, b, m, n, k, BLayout::kColMajor, [](double v) { return v; });
  for (double& e : c) e = round16(e);
  return c;
}

// Day 6's fused add + RMSNorm (norm.h), with the GPU's roundings: residual = round16(x +
// residual); y = round16(rmsnorm(x + residual) * w), y from the sum before it is rounded.
inline void add_rmsnorm(const std::vector<double>& x, std::vector<double>& residual,
                        const std::vector<double>& w, std::vector<double>& y, std::size_t rows,
                        std::size_t hidden, double eps, const Round16& round16) {
  FusedAddRmsNormResult r = fused_add_rmsnorm(x, residual, w, rows, hidden, eps);
  for (double& e : r.residual) e = round16(e);
  for (double& e : r.y) e = round16(e);
  residual = std::move(r.residual);
  y = std::move(r.y);
}

struct DecoderLayerShape {
  std::size_t hidden = 0, heads = 0, kv_heads = 0, dim = 0, inter = 0;
  double eps = 1e-5;
};
struct DecoderLayerWeights {  // float64 copies of the bfloat16 weights, PyTorch layouts
  std::vector<double> attn_norm, w_qkv, w_o, mlp_norm, w_gate_up, w_down;
};
struct DecoderLayerResult {
  std::vector<double> out, residual;
};

// batch sequences of seq_len tokens, token t at position t % seq_len; causal attention with
// scale 1 / sqrt(dim) (in float32, as the GPU passes it), bottom-right aligned (equal lengths:
// the usual lower triangle).
inline DecoderLayerResult decoder_layer(const DecoderLayerShape& s, const DecoderLayerWeights& w,
                                        const std::vector<double>& x, std::vector<double> residual,
                                        std::size_t batch, std::size_t seq_len,
                                        const std::vector<double>& inv_freq,
                                        const Round16& round16) {
  const std::size_t tokens = batch * seq_len, qd = s.heads * s.dim, kvd = s.kv_heads * s.dim;
  std::vector<double> h;
  add_rmsnorm(x, residual, w.attn_norm, h, tokens, s.hidden, s.eps, round16);
  const std::vector<double> qkv = linear(h, w.w_qkv, tokens, qd + 2 * kvd, s.hidden, round16);
  std::vector<std::int32_t> positions(tokens);
  for (std::size_t t = 0; t < tokens; ++t) positions[t] = static_cast<std::int32_t>(t % seq_len);
  QkvSplit split = rope_qkv(qkv, positions, tokens, s.heads, s.kv_heads, s.dim, inv_freq);
  for (auto* v : {&split.q, &split.k})
    for (double& e : *v) e = round16(e);
  const double scale = static_cast<double>(1.0f / std::sqrt(static_cast<float>(s.dim)));
  std::vector<double> attn(tokens * qd);
  const std::size_t group = s.heads / s.kv_heads;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < seq_len; ++i)
      for (std::size_t hd = 0; hd < s.heads; ++hd) {
        const std::size_t t = b * seq_len + i, kvh = hd / group;
        const double* qrow = split.q.data() + (t * s.heads + hd) * s.dim;
        const auto k_at = [&](std::size_t j, std::size_t d) {
          return split.k[((b * seq_len + j) * s.kv_heads + kvh) * s.dim + d];
        };
        const auto v_at = [&](std::size_t j, std::size_t d) {
          return split.v[((b * seq_len + j) * s.kv_heads + kvh) * s.dim + d];
        };
        const AttentionRow row = attention_row([&](std::size_t d) { return qrow[d]; }, k_at, v_at,
                                               seq_len, s.dim, scale, i + 1);
        for (std::size_t d = 0; d < s.dim; ++d)
          attn[(t * s.heads + hd) * s.dim + d] = round16(row.o[d]);
      }
  const std::vector<double> proj = linear(attn, w.w_o, tokens, s.hidden, qd, round16);
  add_rmsnorm(proj, residual, w.mlp_norm, h, tokens, s.hidden, s.eps, round16);
  const std::vector<double> gate_up =
      linear(h, w.w_gate_up, tokens, 2 * s.inter, s.hidden, round16);
  std::vector<double> act = silu_and_mul(gate_up, tokens, s.inter);
  for (double& e : act) e = round16(e);
  DecoderLayerResult r;
  r.out = linear(act, w.w_down, tokens, s.hidden, s.inter, round16);
  r.residual = std::move(residual);
  return r;
}

}  // namespace course::reference
