// Day 14 tests. Each suite is one exercise of README.md. RopeInvFreq is host arithmetic; the
// others run on the GPU at small shapes (the sanitizers run all of them) and compare with
// course/reference/decoder_layer.h in float64, computed from the values the GPU saw. Outputs are
// poisoned before every call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/random.h"
#include "course/reference/decoder_layer.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
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

std::vector<double> inv_freqs(int dim, float theta) {
  std::vector<double> f(dim / 2);
  for (int i = 0; i < dim / 2; ++i) f[i] = d14::rope_inv_freq(i, dim, theta);
  return f;
}

// ---------------------------------------------------------------- Exercise 1a: RopeInvFreq
COURSE_POINTS(RopeInvFreq, 5);

TEST(RopeInvFreq, IsThetaToTheMinusTwoIOverD) {
  for (int dim : {64, 128})
    for (float theta : {10000.0f, 500000.0f})
      for (int i = 0; i < dim / 2; ++i) {
        const float got = d14::rope_inv_freq(i, dim, theta);
        const double want = std::pow(static_cast<double>(theta), -2.0 * i / dim);
        ASSERT_NE(got, -1.0f) << "rope_inv_freq returned -1: not written yet (TODO(d14.1))";
        ASSERT_NEAR(got, want, 4e-7 * want)
            << "pair " << i << " of head_dim " << dim << ", theta " << theta
            << ": expected theta^(-2 i / head_dim) = " << want << " (lesson §3.1)";
      }
}

TEST(RopeInvFreq, StartsAtOneAndFallsTowardOneOverTheta) {
  const float first = d14::rope_inv_freq(0, 128, 10000.0f);
  ASSERT_NE(first, -1.0f) << "rope_inv_freq returned -1: not written yet (TODO(d14.1))";
  EXPECT_EQ(first, 1.0f) << "pair 0 turns at one radian per position";
  for (int i = 1; i < 64; ++i)
    EXPECT_LT(d14::rope_inv_freq(i, 128, 10000.0f), d14::rope_inv_freq(i - 1, 128, 10000.0f))
        << "later pairs turn more slowly";
}

// ---------------------------------------------------------------- Exercise 1b: RopeQkv
COURSE_POINTS(RopeQkv, 20);

class RopeQkv : public course::GpuTest {};

void check_rope(std::int64_t tokens, int heads, int kv_heads, int dim, float theta,
                std::uint64_t salt) {
  SCOPED_TRACE("tokens " + std::to_string(tokens) + ", heads " + std::to_string(heads) + "/" +
               std::to_string(kv_heads) + ", dim " + std::to_string(dim));
  const std::size_t row = static_cast<std::size_t>(heads + 2 * kv_heads) * dim;
  const auto qkv = course::random_uniform<bfloat16>(tokens * row, course::seed_for(salt), -2, 2);
  std::vector<std::int32_t> positions(tokens);
  const auto pos_seed = course::random_uniform<float>(tokens, course::seed_for(salt + 1), 0, 8192);
  for (std::int64_t t = 0; t < tokens; ++t) positions[t] = static_cast<std::int32_t>(pos_seed[t]);
  if (tokens > 1) positions[1] = 0;  // position 0: no rotation at all
  DeviceBuffer<bfloat16> d_qkv(qkv);
  DeviceBuffer<std::int32_t> d_pos(positions);
  DeviceBuffer<bfloat16> q(tokens * heads * dim), k(tokens * kv_heads * dim),
      v(tokens * kv_heads * dim);
  q.poison();
  k.poison();
  v.poison();
  d14::rope_qkv(d_qkv.data(), d_pos.data(), q.data(), k.data(), v.data(), tokens, heads, kv_heads,
                dim, theta);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const ref::QkvSplit want = ref::rope_qkv(course::as_doubles(qkv), positions, tokens, heads,
                                           kv_heads, dim, inv_freqs(dim, theta));
  // One rounding to bfloat16 after float32 arithmetic whose cos/sin are accurate to ~2^-21:
  // the default bfloat16 tolerance.
  COURSE_EXPECT_MATCH(q.read_back(), want.q, opts(dim, "q (rotated query heads)"));
  COURSE_EXPECT_MATCH(k.read_back(), want.k, opts(dim, "k (rotated key heads)"));
  COURSE_EXPECT_MATCH(v.read_back(), want.v, opts(dim, "v (copied value heads)"));
}

TEST_F(RopeQkv, RotatesQueryAndKeyHeadsAndCopiesValues) {
  check_rope(1, 1, 1, 64, 10000.0f, 10);
  check_rope(7, 4, 2, 64, 10000.0f, 11);
  check_rope(33, 2, 2, 128, 500000.0f, 12);
  check_rope(5, 3, 1, 128, 10000.0f, 13);
}

TEST_F(RopeQkv, HandlesManyTokensAndHeads) { check_rope(301, 8, 2, 128, 10000.0f, 14); }

// ---------------------------------------------------------------- Exercise 2: SiluAndMul
COURSE_POINTS(SiluAndMul, 15);

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
COURSE_POINTS(DecoderLayer, 40);
COURSE_POINTS(LayerTrace, 20);

// The layer's output comes after nine stages, each storing bfloat16; the reference rounds at the
// same places, so what is left is an intermediate that the GPU's float32 and the reference's
// float64 round to neighbouring bfloat16 values (one step, 2^-8, on a few elements) carried
// through the next GEMMs, and Day 12's rounding of the probabilities to bfloat16 before P V.
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
  d14::decoder_layer(k, d.weights(), x.data(), residual.data(), out.data(), c.batch, c.seq_len,
                     ws.data(), ws_bytes, stream, recorder);
  COURSE_CUDA_CHECK(cudaStreamSynchronize(stream));
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const ref::DecoderLayerResult want =
      ref::decoder_layer(d.shape, d.w64, course::as_doubles(d.x), course::as_doubles(d.residual),
                         c.batch, c.seq_len, inv_freqs(k.head_dim, k.rope_theta), round_bf16);
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
  ASSERT_EQ(stages.size(), names.size())
      << "the recorder saw " << stages.size() << " stages, the layer has " << names.size()
      << ": open a Stage around each of them (TODO(d14.4), lesson §6)";
  double previous_end = 0.0;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    EXPECT_EQ(stages[i].name, names[i]) << "stage " << i << " is out of order";
    EXPECT_GE(stages[i].end_us, stages[i].start_us) << stages[i].name << " ends before it starts";
    EXPECT_GE(stages[i].start_us, previous_end - 1e-3)
        << stages[i].name
        << " starts before the previous stage ends: one stream runs them in order";
    previous_end = stages[i].end_us;
  }
  const std::string path = ::testing::TempDir() + "d14_trace.json";
  d14::write_trace(path, stages);
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  const std::string json = text.str();
  ASSERT_FALSE(json.empty()) << "write_trace wrote nothing to " << path;
  EXPECT_EQ(json.front(), '{');
  for (const auto& name : names)
    EXPECT_NE(json.find("\"name\": \"" + name + "\""), std::string::npos)
        << "the trace has no event named " << name;
  std::remove(path.c_str());
}

}  // namespace
