// Day 14 tests. Each suite is one exercise of README.md. RopeInvFreq is host arithmetic; the
// others run on the GPU at small shapes (the sanitizers run all of them but the 2^31-element
// ones) and compare with course/reference/decoder_layer.h in float64, computed from the values
// the GPU saw and from inverse frequencies the test computes itself (never from the code under
// test). Outputs are poisoned before every call. Every value the code under test hands back
// reaches its assertion through an observation (read_back, gather, course::observed), so that
// the grader can replay it in the reference program (course/observe.h).
//
// What a kernel (or the layer) of this day can get wrong, and the test that sees it:
//   rope_inv_freq with a wrong exponent (-i / d, -2 i / (d - 1)), pair 0 not 1
//                                      RopeInvFreq.*; RopeQkv.* and DecoderLayer.* too (their
//                                      references compute the frequencies themselves)
//   RoPE: pairs (2i, 2i + 1) instead of (i, i + d/2), a sign, cos and sin swapped, another
//   token's position, value heads rotated or not copied
//                                      RopeQkv.RotatesQueryAndKeyHeadsAndCopiesValues
//   RoPE: key heads placed with num_heads instead of num_kv_heads (grouped-query)
//                                      RopeQkv.RotatesQueryAndKeyHeadsAndCopiesValues
//   RoPE: a head_dim the kernel did not expect (2 and 6: halves of 1 and 3; 256: a half of a
//   whole block); a limit of lab.h not enforced
//                                      RopeQkv.HandlesEveryEvenHeadDimUpTo256
//   RoPE: more (head, pair) work than threads (the loops' strides)
//                                      RopeQkv.HandlesManyTokensAndHeads
//   RoPE: 16-byte vectors on outputs that are not 16-byte aligned, writes past q, k or v
//                                      RopeQkv.HandlesOutputsThatAreNot16ByteAligned, the
//                                      guards of every RoPE test
//   RoPE: the angle p * inv_freq in float32 fed to __sincosf unreduced (~0.01 rad off at
//   position 2^17)                     RopeQkv.StaysAccurateAtLongContextPositions
//   RoPE: the offsets t * row of qkv or of q in 32 bits
//                                      RopeQkvLargeIndex (2^31 + elements)
//   RoPE: no barrier after the shared cos/sin table
//                                      racecheck, and the RoPE tests
//   SiLU-and-mul: gate and up swapped, silu of the product, a second rounding
//                                      SiluAndMul.MatchesTheReferenceOnVectorizedRows
//   SiLU-and-mul: odd widths, unaligned rows (the 16-byte path taken where it must not be), a
//   store past the row                 SiluAndMul.HandlesOddWidthsAndMisalignedPointers
//   the layer: a stage missing, out of order, or on the wrong tensor
//                                      DecoderLayer.*
//   the layer: num_heads * head_dim mixed up with hidden (the QKV GEMM's N, the O GEMM's K,
//   the attention's scale 1 / sqrt(head_dim))
//                                      DecoderLayer.HandlesHeadsWhoseWidthIsNotTheHiddenSize
//   the layer: grouped-query heads, head_dim 64
//                                      DecoderLayer.HandlesGroupedQueryAttentionAndHeadDim64
//   the layer: the legacy stream's work not ordered after the caller's stream (and back)
//                                      DecoderLayer.OrdersItsWorkOnTheCallersStream
//   the layer: a stage without its Stage (timings, NVTX range), or out of order
//                                      LayerTrace.RecordsEveryStageInOrderAndWritesAChromeTrace
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/large.h"
#include "course/random.h"
#include "course/reference/decoder_layer.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::observed;
namespace ref = course::reference;

double round_bf16(double v) {
  return course::DType<bfloat16>::to_double(course::DType<bfloat16>::from_double(v));
}

course::CompareOptions opts(std::int64_t cols, const std::string& what,
                            course::Tolerance tolerance = {-1.0, -1.0}) {
  course::CompareOptions o;
  o.tolerance = tolerance;
  o.cols = cols;
  o.what = what;
  return o;
}

// The references' inverse frequencies, computed here and never by the code under test: lab.h's
// theta^(-2 i / head_dim) in float64, rounded once to float32, the value the kernel multiplies
// the position by (lab.h: "computed in float32"). The rounding matters at long positions: one
// float32 step of inv_freq moves the angle at position 2^17 by up to 8e-3 rad.
std::vector<double> reference_inv_freqs(int dim, float theta) {
  std::vector<double> f(dim / 2);
  for (int i = 0; i < dim / 2; ++i)
    f[i] = static_cast<float>(std::pow(static_cast<double>(theta), -2.0 * i / dim));
  return f;
}

// rope_inv_freq's values for every pair of one head_dim and theta (code under test), observed.
std::vector<float> student_inv_freqs(int dim, float theta) {
  std::vector<float> f(dim / 2);
  for (int i = 0; i < dim / 2; ++i) f[i] = d14::rope_inv_freq(i, dim, theta);
  return observed(f, "rope_inv_freq");
}

// Runs `call` (code under test), observed: false, with a failure naming `what` and the
// exception, when it threw.
bool runs(const char* what, const std::function<void()>& call) {
  // Any exception counts (runtime_error or another: threw or threw_other).
  const course::Thrown t = course::observed_throw<std::runtime_error>(call, what);
  if (t.threw || t.threw_other) ADD_FAILURE() << what << " threw: " << t.what;
  return !t.threw && !t.threw_other;
}

// ---------------------------------------------------------------- Exercise 1a: RopeInvFreq

TEST(RopeInvFreq, IsThetaToTheMinusTwoIOverD) {
  for (int dim : {64, 128, 256})
    for (float theta : {10000.0f, 500000.0f}) {
      const std::vector<float> got = student_inv_freqs(dim, theta);
      ASSERT_EQ(got.size(), static_cast<std::size_t>(dim / 2));
      for (int i = 0; i < dim / 2; ++i) {
        const double want = std::pow(static_cast<double>(theta), -2.0 * i / dim);
        ASSERT_NE(got[i], -1.0f) << "rope_inv_freq returned -1: not written yet (TODO(d14.1a))";
        ASSERT_NEAR(got[i], want, 4e-7 * want)
            << "pair " << i << " of head_dim " << dim << ", theta " << theta
            << ": expected theta^(-2 i / head_dim) = " << want << " (lesson §3.1)";
      }
    }
}

TEST(RopeInvFreq, StartsAtOneAndFallsTowardOneOverTheta) {
  const std::vector<float> f = student_inv_freqs(128, 10000.0f);
  ASSERT_EQ(f.size(), 64u);
  ASSERT_NE(f[0], -1.0f) << "rope_inv_freq returned -1: not written yet (TODO(d14.1a))";
  EXPECT_EQ(f[0], 1.0f) << "pair 0 turns at one radian per position";
  for (int i = 1; i < 64; ++i) EXPECT_LT(f[i], f[i - 1]) << "later pairs turn more slowly";
}

// ---------------------------------------------------------------- Exercise 1b: RopeQkv

class RopeQkv : public course::GpuTest {};

// Positions uniform in [0, max_position), position 0 at token 1 and max_position - 1 at token 2.
// offset: q, k and v start that many elements past an aligned address (1: no 16-byte vectors).
void check_rope(std::int64_t tokens, int heads, int kv_heads, int dim, float theta,
                std::uint64_t salt, std::int32_t max_position = 8192, std::size_t offset = 0) {
  SCOPED_TRACE("tokens " + std::to_string(tokens) + ", heads " + std::to_string(heads) + "/" +
               std::to_string(kv_heads) + ", dim " + std::to_string(dim) + ", positions < " +
               std::to_string(max_position) + (offset ? ", q, k, v not 16-byte aligned" : ""));
  const std::size_t row = static_cast<std::size_t>(heads + 2 * kv_heads) * dim;
  const auto qkv = course::random_uniform<bfloat16>(tokens * row, course::seed_for(salt), -2, 2);
  std::vector<std::int32_t> positions(tokens);
  const auto pos_seed =
      course::random_uniform<float>(tokens, course::seed_for(salt + 1), 0, max_position);
  for (std::int64_t t = 0; t < tokens; ++t)
    positions[t] = std::min(static_cast<std::int32_t>(pos_seed[t]), max_position - 1);
  if (tokens > 1) positions[1] = 0;                 // position 0: no rotation at all
  if (tokens > 2) positions[2] = max_position - 1;  // the longest angle
  DeviceBuffer<bfloat16> d_qkv(qkv);
  DeviceBuffer<std::int32_t> d_pos(positions);
  course::Guarded<bfloat16> q(tokens * heads * dim, offset), k(tokens * kv_heads * dim, offset),
      v(tokens * kv_heads * dim, offset);
  if (!runs("d14::rope_qkv", [&] {
        d14::rope_qkv(d_qkv.data(), d_pos.data(), q.data(), k.data(), v.data(), tokens, heads,
                      kv_heads, dim, theta);
        COURSE_CUDA_CHECK(cudaDeviceSynchronize());
      }))
    return;
  const ref::QkvSplit want = ref::rope_qkv(course::as_doubles(qkv), positions, tokens, heads,
                                           kv_heads, dim, reference_inv_freqs(dim, theta));
  // One rounding to bfloat16 after float32 arithmetic whose cos/sin are accurate to ~2^-21:
  // the default bfloat16 tolerance.
  COURSE_EXPECT_MATCH(q.read_back(), want.q, opts(dim, "q (rotated query heads)"));
  COURSE_EXPECT_MATCH(k.read_back(), want.k, opts(dim, "k (rotated key heads)"));
  COURSE_EXPECT_MATCH(v.read_back(), want.v, opts(dim, "v (copied value heads)"));
  course::expect_guards_untouched(q, "q");
  course::expect_guards_untouched(k, "k");
  course::expect_guards_untouched(v, "v");
}

TEST_F(RopeQkv, RotatesQueryAndKeyHeadsAndCopiesValues) {
  check_rope(1, 1, 1, 64, 10000.0f, 10);
  check_rope(7, 4, 2, 64, 10000.0f, 11);
  check_rope(33, 2, 2, 128, 500000.0f, 12);
  check_rope(5, 3, 1, 128, 10000.0f, 13);
}

TEST_F(RopeQkv, HandlesManyTokensAndHeads) { check_rope(301, 8, 2, 128, 10000.0f, 14); }

// A launcher that picks 16-byte vectors must check the pointers, not only head_dim.
TEST_F(RopeQkv, HandlesOutputsThatAreNot16ByteAligned) {
  check_rope(9, 4, 2, 128, 10000.0f, 27, 8192, 1);
}

// lab.h: head_dim even and at most 256. 2 and 6 have a half (1, 3) that is no multiple of a
// vector or a warp; 256 has a half of 128, the whole block. Just outside the limits: refused.
TEST_F(RopeQkv, HandlesEveryEvenHeadDimUpTo256) {
  check_rope(3, 2, 1, 2, 10000.0f, 15);
  check_rope(5, 3, 2, 6, 10000.0f, 16);
  check_rope(4, 2, 1, 256, 500000.0f, 17);
  DeviceBuffer<bfloat16> qkv(3 * 258), q(258), k(258), v(258);
  DeviceBuffer<std::int32_t> pos(std::vector<std::int32_t>{0});
  const auto call = [&](int dim) {
    d14::rope_qkv(qkv.data(), pos.data(), q.data(), k.data(), v.data(), 1, 1, 1, dim, 10000.0f);
  };
  COURSE_EXPECT_THROW(call(258), course::InvalidArgument);
  COURSE_EXPECT_THROW(call(7), course::InvalidArgument);
  COURSE_EXPECT_THROW(call(0), course::InvalidArgument);
}

// Llama 3.1's context: positions up to 2^17. An angle p * inv_freq rounded to float32 there is
// off by up to 2^-8 rad, and __sincosf of an angle that large (which it reduces in float32
// itself) loses as much again or more: together more than bfloat16's tolerance on some elements.
// The lesson's way (the angle in float64, reduced to [-pi, pi] before __sincosf, §3.2) stays
// within 1e-6 rad.
TEST_F(RopeQkv, StaysAccurateAtLongContextPositions) {
  check_rope(256, 4, 2, 64, 10000.0f, 18, 1 << 17);
  check_rope(32, 2, 1, 128, 500000.0f, 19, 1 << 17);
}

// 64-bit indices: 32 query heads and one key/value head of 128, over just enough tokens that q
// holds 2^31 + elements (qkv 2^31 + 7%): the offsets t * row of qkv and of q pass 2^31. Filled on
// the GPU with a pattern the host recomputes at any index (course/large.h); whole tokens are
// checked at the start, around both wrap points and at the end. Alone on the GPU (lab.json's
// serial_suites), left out of the sanitizer runs.
class RopeQkvLargeIndex : public course::GpuTest {};

TEST_F(RopeQkvLargeIndex, RotatesTokensPastTwoToThe31) {
  constexpr int kHeads = 32, kKvHeads = 1, kDim = 128;
  constexpr std::int64_t kRow = (kHeads + 2 * kKvHeads) * kDim, kQRow = kHeads * kDim,
                         kKvRow = kKvHeads * kDim;
  constexpr float kTheta = 500000.0f;
  const std::int64_t tokens = course::large_rows(kQRow);
  const std::int64_t n_qkv = tokens * kRow, n_q = tokens * kQRow, n_kv = tokens * kKvRow;
  COURSE_SKIP_UNLESS_GPU_MEMORY(static_cast<std::size_t>(n_qkv + n_q + 2 * n_kv) * 2 +
                                static_cast<std::size_t>(tokens) * 4);  // 9.3 GB
  const course::Pattern p{course::seed_for(50), -2.0, 2.0};
  DeviceBuffer<bfloat16> qkv(n_qkv), q(n_q), k(n_kv), v(n_kv);
  course::fill_pattern(qkv.data(), n_qkv, p);
  for (auto* out : {&q, &k, &v}) course::poison_on_device(out->data(), out->size());
  std::vector<std::int32_t> positions(static_cast<std::size_t>(tokens));
  const auto pos_seed = course::random_uniform<float>(tokens, course::seed_for(51), 0, 8192);
  for (std::int64_t t = 0; t < tokens; ++t) positions[t] = static_cast<std::int32_t>(pos_seed[t]);
  DeviceBuffer<std::int32_t> d_pos(positions);
  if (!runs("d14::rope_qkv", [&] {
        d14::rope_qkv(qkv.data(), d_pos.data(), q.data(), k.data(), v.data(), tokens, kHeads,
                      kKvHeads, kDim, kTheta);
        COURSE_CUDA_CHECK(cudaDeviceSynchronize());
      }))
    return;
  // The tokens whose row of q, or of qkv, holds the elements around 2^31 (and the first, the
  // last and a few drawn at random).
  std::vector<std::int64_t> sampled =
      course::large_sample_rows(tokens, kQRow, course::seed_for(52));
  for (const std::int64_t t : course::large_sample_rows(tokens, kRow, course::seed_for(53)))
    sampled.push_back(t);
  std::sort(sampled.begin(), sampled.end());
  sampled.erase(std::unique(sampled.begin(), sampled.end()), sampled.end());
  const auto at_q = course::indices_of_rows(sampled, kQRow);
  const auto at_kv = course::indices_of_rows(sampled, kKvRow);
  const auto got_q = course::gather(q.data(), n_q, at_q);  // observed
  const auto got_k = course::gather(k.data(), n_kv, at_kv);
  const auto got_v = course::gather(v.data(), n_kv, at_kv);
  ref::QkvSplit want;
  const std::vector<double> inv_freq = reference_inv_freqs(kDim, kTheta);
  for (const std::int64_t t : sampled) {
    std::vector<double> row(static_cast<std::size_t>(kRow));
    for (std::int64_t j = 0; j < kRow; ++j)
      row[static_cast<std::size_t>(j)] = course::pattern_double_value<bfloat16>(p, t * kRow + j);
    const ref::QkvSplit one =
        ref::rope_qkv(row, {positions[t]}, 1, kHeads, kKvHeads, kDim, inv_freq);
    want.q.insert(want.q.end(), one.q.begin(), one.q.end());
    want.k.insert(want.k.end(), one.k.begin(), one.k.end());
    want.v.insert(want.v.end(), one.v.begin(), one.v.end());
  }
  const std::string shape = " of " + std::to_string(tokens) +
                            " tokens, 32 + 2 x 1 heads of 128 (q: 2^31 + " +
                            std::to_string(n_q - course::kTwoTo31) +
                            " elements; TODO(d14.1b): " + "the offsets t * row in 64 bits)";
  COURSE_EXPECT_SAMPLES_MATCH(got_q, want.q, at_q, opts(kDim, "q" + shape));
  COURSE_EXPECT_SAMPLES_MATCH(got_k, want.k, at_kv, opts(kDim, "k" + shape));
  COURSE_EXPECT_SAMPLES_MATCH(got_v, want.v, at_kv, opts(kDim, "v" + shape));
}

// ---------------------------------------------------------------- Exercise 2: SiluAndMul

class SiluAndMul : public course::GpuTest {};

void check_silu(std::int64_t tokens, std::int64_t inter, std::size_t offset, std::uint64_t salt) {
  SCOPED_TRACE("tokens " + std::to_string(tokens) + ", inter " + std::to_string(inter) +
               (offset ? ", pointers offset by one element" : ""));
  const auto gu =
      course::random_uniform<bfloat16>(tokens * 2 * inter, course::seed_for(salt), -6, 6);
  course::Guarded<bfloat16> d_gu(gu, offset);
  course::Guarded<bfloat16> out(tokens * inter, offset);
  d14::silu_and_mul(d_gu.data(), out.data(), tokens, inter);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  COURSE_EXPECT_MATCH(out.read_back(), ref::silu_and_mul(course::as_doubles(gu), tokens, inter),
                      opts(inter, "out = silu(gate) * up"));
  course::expect_guards_untouched(out, "out");
}

TEST_F(SiluAndMul, MatchesTheReferenceOnVectorizedRows) {
  check_silu(1, 8, 0, 20);
  check_silu(17, 344, 0, 21);
  check_silu(3, 4096, 0, 22);
}

TEST_F(SiluAndMul, HandlesOddWidthsAndMisalignedPointers) {
  check_silu(1, 1, 0, 23);
  check_silu(5, 7, 0, 24);
  check_silu(4, 344, 1, 25);
  check_silu(2, 1001, 1, 26);
}

// ---------------------------------------------------------------- Exercise 3: DecoderLayer

// The layer's output comes after eight stages, each storing bfloat16; the reference rounds at the
// same places (and once more, the gate/up product, which the Hopper path keeps in float32 inside
// the GEMM's epilogue: half a bfloat16 step on act, averaged out by the down GEMM), so what is
// left is an intermediate that the GPU's float32 and the reference's float64 round to
// neighbouring bfloat16 values (one step, 2^-8, on a few elements) carried through the next
// GEMMs, and Day 12's rounding of the probabilities to bfloat16 before P V.
// 1.5x the bfloat16 defaults leaves room for that; a wrong stage (a missed RoPE, the gate and
// up halves swapped, a non-causal attention) is off by tens of percent.
constexpr course::Tolerance kLayerTolerance{1.2e-2, 2.4e-2};

struct LayerCase {
  d14::LayerConfig config;
  int batch = 1, seq_len = 1;
};

struct LayerData {
  ref::DecoderLayerShape shape;
  ref::DecoderLayerWeights w64;
  std::vector<bfloat16> attn_norm, w_qkv, w_o, mlp_norm, w_gate_up, w_down, x, residual;
  DeviceBuffer<bfloat16> d_attn_norm, d_w_qkv, d_w_o, d_mlp_norm, d_w_gate_up, d_w_down;
  d14::LayerWeights weights() {
    return {d_attn_norm.data(), d_w_qkv.data(),     d_w_o.data(),
            d_mlp_norm.data(),  d_w_gate_up.data(), d_w_down.data()};
  }
};

LayerData make_layer(const LayerCase& c, std::uint64_t salt) {
  const auto& k = c.config;
  LayerData d;
  d.shape = {static_cast<std::size_t>(k.hidden),       static_cast<std::size_t>(k.num_heads),
             static_cast<std::size_t>(k.num_kv_heads), static_cast<std::size_t>(k.head_dim),
             static_cast<std::size_t>(k.intermediate), k.eps};
  const std::size_t tokens = static_cast<std::size_t>(c.batch) * c.seq_len;
  const std::size_t qd = k.num_heads * k.head_dim, kvd = k.num_kv_heads * k.head_dim;
  // Weights scaled by 1 / sqrt(fan_in) * sqrt(3): outputs of unit size at every stage.
  const auto linear = [&](std::size_t out, std::size_t in, std::uint64_t s) {
    const double a = std::sqrt(3.0 / static_cast<double>(in));
    return course::random_uniform<bfloat16>(out * in, course::seed_for(salt + s), -a, a);
  };
  d.attn_norm = course::random_uniform<bfloat16>(k.hidden, course::seed_for(salt + 1), 0.5, 1.5);
  d.mlp_norm = course::random_uniform<bfloat16>(k.hidden, course::seed_for(salt + 2), 0.5, 1.5);
  d.w_qkv = linear(qd + 2 * kvd, k.hidden, 3);
  d.w_o = linear(k.hidden, qd, 4);
  d.w_gate_up = linear(2 * static_cast<std::size_t>(k.intermediate), k.hidden, 5);
  d.w_down = linear(k.hidden, k.intermediate, 6);
  d.x = course::random_uniform<bfloat16>(tokens * k.hidden, course::seed_for(salt + 7));
  d.residual = course::random_uniform<bfloat16>(tokens * k.hidden, course::seed_for(salt + 8));
  d.w64 = {course::as_doubles(d.attn_norm), course::as_doubles(d.w_qkv),
           course::as_doubles(d.w_o),       course::as_doubles(d.mlp_norm),
           course::as_doubles(d.w_gate_up), course::as_doubles(d.w_down)};
  d.d_attn_norm = DeviceBuffer<bfloat16>(d.attn_norm);
  d.d_w_qkv = DeviceBuffer<bfloat16>(d.w_qkv);
  d.d_w_o = DeviceBuffer<bfloat16>(d.w_o);
  d.d_mlp_norm = DeviceBuffer<bfloat16>(d.mlp_norm);
  d.d_w_gate_up = DeviceBuffer<bfloat16>(d.w_gate_up);
  d.d_w_down = DeviceBuffer<bfloat16>(d.w_down);
  return d;
}

// Runs the layer on `stream` (with `recorder` when given) and compares out and residual.
void check_layer(const LayerCase& c, std::uint64_t salt, cudaStream_t stream = nullptr,
                 d14::StageRecorder* recorder = nullptr) {
  const auto& k = c.config;
  SCOPED_TRACE("hidden " + std::to_string(k.hidden) + ", heads " + std::to_string(k.num_heads) +
               "/" + std::to_string(k.num_kv_heads) + ", dim " + std::to_string(k.head_dim) +
               ", intermediate " + std::to_string(k.intermediate) + ", batch " +
               std::to_string(c.batch) + ", seq_len " + std::to_string(c.seq_len));
  LayerData d = make_layer(c, salt);
  const std::size_t tokens = static_cast<std::size_t>(c.batch) * c.seq_len;
  DeviceBuffer<bfloat16> x(d.x), residual(d.residual), out(tokens * k.hidden);
  out.poison();
  const std::size_t ws_bytes = d14::layer_workspace_bytes(k, c.batch, c.seq_len);
  DeviceBuffer<bfloat16> ws(ws_bytes / 2 + 1);  // cudaMalloc: 256-byte aligned
  ws.poison();  // a stage that reads an unwritten intermediate sees NaN
  if (!runs("d14::decoder_layer", [&] {
        d14::decoder_layer(k, d.weights(), x.data(), residual.data(), out.data(), c.batch,
                           c.seq_len, ws.data(), ws_bytes, stream, recorder);
        COURSE_CUDA_CHECK(cudaStreamSynchronize(stream));
        COURSE_CUDA_CHECK(cudaDeviceSynchronize());
      }))
    return;
  const ref::DecoderLayerResult want = ref::decoder_layer(
      d.shape, d.w64, course::as_doubles(d.x), course::as_doubles(d.residual), c.batch, c.seq_len,
      reference_inv_freqs(k.head_dim, k.rope_theta), round_bf16);
  COURSE_EXPECT_MATCH(
      residual.read_back(), want.residual,
      opts(k.hidden, "residual (x + residual + attention's projection)", kLayerTolerance));
  COURSE_EXPECT_MATCH(out.read_back(), want.out,
                      opts(k.hidden, "out (the MLP's output)", kLayerTolerance));
}

d14::LayerConfig config(int hidden, int heads, int kv_heads, int dim, int inter) {
  d14::LayerConfig c;
  c.hidden = hidden;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = dim;
  c.intermediate = inter;
  return c;
}

class DecoderLayer : public course::GpuTest {};

TEST_F(DecoderLayer, MatchesTheReferenceOnOneToken) {
  check_layer({config(256, 2, 2, 128, 128), 1, 1}, 30);
}

TEST_F(DecoderLayer, MatchesTheReferenceOnABatchOfOddLengths) {
  check_layer({config(256, 2, 2, 128, 344), 2, 33}, 31);
}

TEST_F(DecoderLayer, HandlesGroupedQueryAttentionAndHeadDim64) {
  check_layer({config(256, 4, 2, 64, 344), 3, 70}, 32);
}

// lab.h: num_heads * head_dim need not equal hidden (Gemma, and Llama's grouped-query shapes,
// have such layers). Every shape above has them equal, so a layer that uses one for the other
// (the QKV GEMM's N, the O GEMM's K, the attention's scale, RoPE's head size) passes there; here
// the heads are wider (256 > 192) and narrower (256 < 520) than the hidden size.
TEST_F(DecoderLayer, HandlesHeadsWhoseWidthIsNotTheHiddenSize) {
  check_layer({config(192, 4, 2, 64, 200), 2, 19}, 34);
  check_layer({config(520, 2, 1, 128, 136), 1, 40}, 35);
}

TEST_F(DecoderLayer, OrdersItsWorkOnTheCallersStream) {
  cudaStream_t stream = nullptr;
  COURSE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  check_layer({config(256, 2, 1, 128, 256), 2, 47}, 33, stream);
  COURSE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// ---------------------------------------------------------------- Exercise 4: LayerTrace
class LayerTrace : public course::GpuTest {};

TEST_F(LayerTrace, RecordsEveryStageInOrderAndWritesAChromeTrace) {
  d14::StageRecorder recorder;
  check_layer({config(256, 2, 2, 128, 344), 2, 33}, 40, nullptr, &recorder);
  const std::vector<d14::StageTiming> stages = recorder.collect();
  const auto& names = d14::layer_stage_names();
  // The recorder is given, but what it recorded is the layer's: observed, stage by stage.
  const std::size_t count = observed(stages.size(), "stages recorded");
  ASSERT_EQ(count, names.size()) << "the recorder saw " << count << " stages, the layer has "
                                 << names.size()
                                 << ": open a Stage around each of them (TODO(d14.3), lesson §6)";
  double previous_end = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string name = observed(stages[i].name, "stage name");
    const double start = observed(stages[i].start_us, "stage start");
    const double end = observed(stages[i].end_us, "stage end");
    EXPECT_EQ(name, names[i]) << "stage " << i << " is out of order";
    EXPECT_GE(end, start) << name << " ends before it starts";
    EXPECT_GE(start, previous_end - 1e-3)
        << name << " starts before the previous stage ends: one stream runs them in order";
    previous_end = end;
  }
  const std::string path = ::testing::TempDir() + "d14_trace.json";
  if (!runs("d14::write_trace", [&] { d14::write_trace(path, stages); })) return;
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  const std::string json = observed(text.str(), "the trace file");
  ASSERT_FALSE(json.empty()) << "write_trace wrote nothing to " << path;
  EXPECT_EQ(json.front(), '{');
  for (const auto& name : names)
    EXPECT_NE(json.find("\"name\": \"" + name + "\""), std::string::npos)
        << "the trace has no event named " << name;
  std::remove(path.c_str());
}

}  // namespace
