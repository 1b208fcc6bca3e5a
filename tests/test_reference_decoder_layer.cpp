// The decoder-layer reference (reference/decoder_layer.h) is Day 14's ground truth: check RoPE
// and SiLU-and-mul on cases worked out by hand, and the whole layer on inputs where its answer is
// known without running it (a layer whose projections are zero, a one-token sequence).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "course/reference/decoder_layer.h"

namespace {

namespace ref = course::reference;
double id(double v) { return v; }

TEST(ReferenceDecoderLayer, RopeRotatesPairsHalfAHeadApart) {
  // One token, one query head, one key head, one value head of dim 4: pairs (0, 2) and (1, 3).
  const std::vector<double> qkv = {1, 2, 3, 4, /*k*/ 1, 0, 0, 1, /*v*/ 9, 8, 7, 6};
  const std::vector<double> inv_freq = {1.0, 0.5};
  const double p = 2.0;
  const auto s = ref::rope_qkv(qkv, {2}, 1, 1, 1, 4, inv_freq);
  EXPECT_NEAR(s.q[0], 1 * std::cos(p) - 3 * std::sin(p), 1e-15);
  EXPECT_NEAR(s.q[2], 3 * std::cos(p) + 1 * std::sin(p), 1e-15);
  EXPECT_NEAR(s.q[1], 2 * std::cos(p / 2) - 4 * std::sin(p / 2), 1e-15);
  EXPECT_NEAR(s.q[3], 4 * std::cos(p / 2) + 2 * std::sin(p / 2), 1e-15);
  EXPECT_NEAR(s.k[0], std::cos(p), 1e-15);
  EXPECT_NEAR(s.k[2], std::sin(p), 1e-15);
  EXPECT_EQ(s.v, (std::vector<double>{9, 8, 7, 6})) << "values are copied, not rotated";
}

TEST(ReferenceDecoderLayer, RopeAtPositionZeroIsTheIdentityAndKeepsNorms) {
  const std::vector<double> qkv = {1, -2, 3, 0.5, 4, 5, 6, 7, 8, 9, 10, 11};
  const auto zero = ref::rope_qkv(qkv, {0}, 1, 1, 1, 4, {1.0, 0.01});
  EXPECT_EQ(zero.q, (std::vector<double>{1, -2, 3, 0.5}));
  const auto far = ref::rope_qkv(qkv, {4000}, 1, 1, 1, 4, {1.0, 0.01});
  EXPECT_NEAR(far.q[0] * far.q[0] + far.q[2] * far.q[2], 1 + 9, 1e-12) << "a rotation";
}

TEST(ReferenceDecoderLayer, SiluAndMulTakesGateThenUp) {
  const auto out = ref::silu_and_mul({0.0, 2.0, /*up*/ 5.0, 3.0}, 1, 2);
  EXPECT_DOUBLE_EQ(out[0], 0.0) << "silu(0) = 0";
  EXPECT_NEAR(out[1], 2.0 / (1.0 + std::exp(-2.0)) * 3.0, 1e-15);
}

TEST(ReferenceDecoderLayer, LinearMultipliesByTheTransposedWeight) {
  // a [1, 2] = {1, 2}; b [3, 2] (PyTorch Linear [out, in]): c = {1*1+2*0, 1*0+2*1, 1*3+2*4}.
  const auto c = ref::linear({1, 2}, {1, 0, 0, 1, 3, 4}, 1, 3, 2, id);
  EXPECT_EQ(c, (std::vector<double>{1, 2, 11}));
}

ref::DecoderLayerWeights zero_projections(const ref::DecoderLayerShape& s) {
  ref::DecoderLayerWeights w;
  w.attn_norm.assign(s.hidden, 1.0);
  w.mlp_norm.assign(s.hidden, 1.0);
  w.w_qkv.assign((s.heads + 2 * s.kv_heads) * s.dim * s.hidden, 0.25);
  w.w_o.assign(s.hidden * s.heads * s.dim, 0.0);
  w.w_gate_up.assign(2 * s.inter * s.hidden, 0.5);
  w.w_down.assign(s.hidden * s.inter, 0.0);
  return w;
}

TEST(ReferenceDecoderLayer, ZeroProjectionsLeaveTheResidualSumAndAZeroOutput) {
  const ref::DecoderLayerShape s{8, 2, 1, 4, 6, 1e-5};
  const std::size_t tokens = 2 * 3;
  std::vector<double> x(tokens * s.hidden), residual(tokens * s.hidden);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(0.3 * static_cast<double>(i));
    residual[i] = std::cos(0.7 * static_cast<double>(i));
  }
  const auto r = ref::decoder_layer(s, zero_projections(s), x, residual, 2, 3, {1.0, 0.1}, id);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_DOUBLE_EQ(r.residual[i], x[i] + residual[i]) << "W_o = 0: nothing added but x";
    ASSERT_EQ(r.out[i], 0.0) << "W_down = 0";
  }
}

TEST(ReferenceDecoderLayer, OneTokenAttendsOnlyToItself) {
  // One token per sequence: attention returns that token's v, so with W_qkv's value rows at 1
  // and W_o summing the heads, the projection is known in closed form.
  const ref::DecoderLayerShape s{4, 1, 1, 2, 2, 0.0};
  auto w = zero_projections(s);
  // Rows of W_qkv: q 0-1, k 2-3, v 4-5 (one head of each, dim 2).
  const std::size_t v_row = (s.heads + s.kv_heads) * s.dim;
  w.w_qkv.assign((s.heads + 2 * s.kv_heads) * s.dim * s.hidden, 0.0);
  for (std::size_t c = 0; c < s.hidden; ++c) w.w_qkv[v_row * s.hidden + c] = 1.0;  // v[0]
  w.w_o.assign(s.hidden * s.heads * s.dim, 0.0);
  w.w_o[0] = 1.0;  // proj[0] = attn[0] = v[0]
  const std::vector<double> x = {1, 1, 1, 1}, residual = {0, 0, 0, 0};
  const auto r = ref::decoder_layer(s, w, x, residual, 1, 1, {1.0}, id);
  // h = rmsnorm(1, 1, 1, 1) = 1 each, v[0] = sum h = 4, residual = 1 + (4, 0, 0, 0).
  EXPECT_NEAR(r.residual[0], 5.0, 1e-12);
  EXPECT_NEAR(r.residual[1], 1.0, 1e-12);
}

}  // namespace
