// Day 14 benchmarks: the fused kernels of Exercises 1-2 alone, and the whole decoder layer at a
// Llama-3-8B shape (hidden 4096, 32 query heads and 8 KV heads of 128, intermediate 14336,
// bfloat16) against the same layer with its element-wise work unfused (unfused_baseline.cu: the
// same GEMMs and attention, separate add, RMSNorm, split, RoPE, SiLU and multiply kernels).
// Every output is checked before timing and again after (course::bench::Recheck). The kernels
// are checked on samples against the float64 reference; the layer at this size cannot be (a
// float64 layer of 2048 tokens is trillions of operations on the CPU: the tests check it at
// small shapes), so the fused layer is checked against the unfused baseline's output, and the
// unfused baseline against its own first run.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/random.h"
#include "course/reference/decoder_layer.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
namespace ref = course::reference;

constexpr int kHidden = 4096, kHeads = 32, kKvHeads = 8, kDim = 128, kInter = 14336;

// The fused layer vs the unfused one: the fused add + RMSNorm normalises the float32 sum where
// the unfused one normalises the sum rounded to bfloat16, and the fused SiLU-and-mul rounds once
// where the unfused chain rounds twice: one bfloat16 step (2^-8) on many intermediates, averaged
// by the GEMMs that follow. 2x the bfloat16 defaults in norm, 3x per element.
constexpr course::Tolerance kFusedVsUnfused{1.6e-2, 4.8e-2};

course::CompareOptions opts(std::int64_t cols, const std::string& what,
                            course::Tolerance tolerance = {-1.0, -1.0}) {
  course::CompareOptions o;
  o.tolerance = tolerance;
  o.cols = cols;
  o.what = what;
  return o;
}

// ---------------------------------------------------------------- Exercise 1: RoPE + split
// range(0) = tokens.
void BM_rope_qkv(benchmark::State& state) {
  const std::int64_t tokens = state.range(0);
  const std::int64_t row = (kHeads + 2 * kKvHeads) * kDim;
  const float theta = 500000.0f;
  const auto qkv = course::random_uniform<bfloat16>(tokens * row, course::seed_for(1), -2, 2);
  std::vector<std::int32_t> positions(tokens);
  for (std::int64_t t = 0; t < tokens; ++t) positions[t] = static_cast<std::int32_t>(t % 2048);
  DeviceBuffer<bfloat16> d_qkv(qkv), q(tokens * kHeads * kDim), k(tokens * kKvHeads * kDim),
      v(tokens * kKvHeads * kDim);
  DeviceBuffer<std::int32_t> d_pos(positions);
  std::vector<double> inv_freq(kDim / 2);
  for (int i = 0; i < kDim / 2; ++i) inv_freq[i] = d14::rope_inv_freq(i, kDim, theta);
  const auto run = [&] {
    d14::rope_qkv(d_qkv.data(), d_pos.data(), q.data(), k.data(), v.data(), tokens, kHeads,
                  kKvHeads, kDim, theta);
  };
  const auto poison = [&] {
    q.poison();
    k.poison();
    v.poison();
  };
  // The reference of one sampled element of q: its head's pair, rotated in float64.
  const auto q_at = [&](std::size_t i) {
    const std::size_t t = i / (kHeads * kDim), h = i / kDim % kHeads, d = i % kDim;
    const std::size_t half = kDim / 2, pair = d % half;
    const double a = positions[t] * inv_freq[pair];
    const double x1 = course::to_double(qkv[t * row + h * kDim + pair]);
    const double x2 = course::to_double(qkv[t * row + h * kDim + pair + half]);
    return d < half ? x1 * std::cos(a) - x2 * std::sin(a) : x2 * std::cos(a) + x1 * std::sin(a);
  };
  const auto check = [&] {
    return course::bench::compare_sampled(q.download(), q_at, opts(kDim, "sampled q"));
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {4.0 * tokens * row + 4.0 * tokens, 0.0}, {poison, check});
}
BENCHMARK(BM_rope_qkv)
    ->ArgNames({"tokens"})
    ->Arg(4096)
    ->Arg(16384)
    ->Apply(course::bench::configure);

// ---------------------------------------------------------------- Exercise 2: SiLU-and-mul
// range(0) = tokens, range(1) = inter.
void BM_silu_and_mul(benchmark::State& state) {
  const std::int64_t tokens = state.range(0), inter = state.range(1);
  const auto gu = course::random_uniform<bfloat16>(tokens * 2 * inter, course::seed_for(2), -6, 6);
  DeviceBuffer<bfloat16> d_gu(gu), out(tokens * inter);
  const auto run = [&] { d14::silu_and_mul(d_gu.data(), out.data(), tokens, inter); };
  const auto poison = [&] { out.poison(); };
  const auto at = [&](std::size_t i) {
    const std::size_t t = i / inter, c = i % inter;
    const double g = course::to_double(gu[t * 2 * inter + c]);
    return g / (1.0 + std::exp(-g)) * course::to_double(gu[t * 2 * inter + inter + c]);
  };
  const auto check = [&] {
    return course::bench::compare_sampled(out.download(), at, opts(inter, "sampled out"));
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {6.0 * tokens * inter, 0.0}, {poison, check});
}
BENCHMARK(BM_silu_and_mul)
    ->ArgNames({"tokens", "inter"})
    ->Args({4096, 14336})
    ->Args({16384, 14336})
    ->Apply(course::bench::configure);

// ---------------------------------------------------------------- Exercise 3: the layer
d14::LayerConfig llama_config() {
  d14::LayerConfig c;
  c.hidden = kHidden;
  c.num_heads = kHeads;
  c.num_kv_heads = kKvHeads;
  c.head_dim = kDim;
  c.intermediate = kInter;
  c.rope_theta = 500000.0f;
  return c;
}

// The weights, made once per process (about 436 MiB of bfloat16).
struct Weights {
  DeviceBuffer<bfloat16> attn_norm, w_qkv, w_o, mlp_norm, w_gate_up, w_down;
  d14::LayerWeights view() {
    return {attn_norm.data(), w_qkv.data(),     w_o.data(),
            mlp_norm.data(),  w_gate_up.data(), w_down.data()};
  }
};
Weights& weights() {
  static Weights* w = [] {
    auto* r = new Weights;
    const auto linear = [](std::size_t out, std::size_t in, std::uint64_t s) {
      const double a = std::sqrt(3.0 / static_cast<double>(in));
      return DeviceBuffer<bfloat16>(
          course::random_uniform<bfloat16>(out * in, course::seed_for(s), -a, a));
    };
    r->attn_norm = DeviceBuffer<bfloat16>(
        course::random_uniform<bfloat16>(kHidden, course::seed_for(10), 0.5, 1.5));
    r->mlp_norm = DeviceBuffer<bfloat16>(
        course::random_uniform<bfloat16>(kHidden, course::seed_for(11), 0.5, 1.5));
    r->w_qkv = linear((kHeads + 2 * kKvHeads) * kDim, kHidden, 12);
    r->w_o = linear(kHidden, kHeads * kDim, 13);
    r->w_gate_up = linear(2 * std::size_t{kInter}, kHidden, 14);
    r->w_down = linear(kHidden, kInter, 15);
    return r;
  }();
  return *w;
}

struct LayerRun {
  int batch, seq_len;
  std::int64_t tokens;
  std::vector<bfloat16> x, residual;
  DeviceBuffer<bfloat16> d_x, d_residual, d_residual0, out, ws_fused, ws_unfused;
  std::size_t fused_bytes, unfused_bytes;
  LayerRun(int b, int l)
      : batch(b),
        seq_len(l),
        tokens(std::int64_t{b} * l),
        x(course::random_uniform<bfloat16>(tokens * kHidden, course::seed_for(20))),
        residual(course::random_uniform<bfloat16>(tokens * kHidden, course::seed_for(21))),
        d_x(x),
        d_residual(residual),
        d_residual0(residual),
        out(tokens * kHidden),
        fused_bytes(d14::layer_workspace_bytes(llama_config(), b, l)),
        unfused_bytes(d14::unfused_workspace_bytes(llama_config(), b, l)) {
    ws_fused = DeviceBuffer<bfloat16>(fused_bytes / 2 + 1);
    ws_unfused = DeviceBuffer<bfloat16>(unfused_bytes / 2 + 1);
  }
  void fused() {
    d14::decoder_layer(llama_config(), weights().view(), d_x.data(), d_residual.data(), out.data(),
                       batch, seq_len, ws_fused.data(), fused_bytes);
  }
  void unfused() {
    d14::decoder_layer_unfused(llama_config(), weights().view(), d_x.data(), d_residual.data(),
                               out.data(), batch, seq_len, ws_unfused.data(), unfused_bytes);
  }
  // The layer updates the residual in place: one application from the inputs. The residual comes
  // back from a device copy, as every in-place benchmark's does (course/bench.h): an upload from
  // the host (67 MB at 4 x 2048) would leave the GPU idle for milliseconds before every sample,
  // which no layer of a model gets.
  void restore() {
    COURSE_CUDA_CHECK(cudaMemcpyAsync(d_residual.data(), d_residual0.data(), d_residual.bytes(),
                                      cudaMemcpyDeviceToDevice));
    out.poison();
  }
};

course::bench::Traffic layer_traffic(int batch, int seq_len) {
  const double t = double{1.0} * batch * seq_len;
  const double qkv_n = (kHeads + 2 * kKvHeads) * kDim, qd = kHeads * kDim;
  const double weights =
      2.0 * (kHidden * qkv_n + qd * kHidden + 3.0 * kHidden * kInter + 2 * kHidden);
  const double acts = 2.0 * t * kHidden * 4.0;  // x and residual in, residual and out written
  const double gemm = 2.0 * t * (kHidden * qkv_n + qd * kHidden + 3.0 * kHidden * kInter);
  const double attn = 4.0 * batch * (double{1.0} * seq_len * (seq_len + 1) / 2) * kHeads * kDim;
  return {weights + acts, gemm + attn, course::Math::kTensor16};
}

std::map<std::pair<int, int>, double>& unfused_medians() {
  static std::map<std::pair<int, int>, double> m;
  return m;
}

// The unfused layer's median on this shape, timed once per process (Google Benchmark state of
// its own row is not at hand here: a fresh measurement through the same timer).
double unfused_median_us(LayerRun& r) {
  const auto key = std::make_pair(r.batch, r.seq_len);
  auto it = unfused_medians().find(key);
  if (it != unfused_medians().end()) return it->second;
  course::bench::BracketedTimer timer;
  std::vector<double> samples;
  for (int i = 0; i < 20; ++i) samples.push_back(1e6 * timer.time([&] { r.unfused(); }));
  const double median = course::bench::percentile(samples, 0.5);
  unfused_medians()[key] = median;
  return median;
}

// range(0) = batch, range(1) = seq_len.
void BM_decoder_layer(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0)), len = static_cast<int>(state.range(1));
  std::unique_ptr<LayerRun> r;
  std::vector<bfloat16> want;
  try {
    r = std::make_unique<LayerRun>(batch, len);
    r->restore();
    r->unfused();  // the baseline's output: the re-check's reference
    want = r->out.download();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  const auto check = [&] {
    return course::bench::compare_sampled(
        r->out.download(), [&](std::size_t i) { return course::to_double(want[i]); },
        opts(kHidden, "sampled out, against the unfused layer", kFusedVsUnfused));
  };
  const auto run = [&] { r->fused(); };
  const auto restore = [&] { r->restore(); };
  if (!course::bench::first_run_verified(state, restore, run, check)) return;
  course::bench::measure(state, run, layer_traffic(batch, len), {restore, check});
  const double mine = state.counters["median_us"];
  if (mine > 0) state.counters["x_unfused"] = unfused_median_us(*r) / mine;
  if (batch == 4 && len == 512) course::bench::mark_key(state);
}
BENCHMARK(BM_decoder_layer)
    ->ArgNames({"batch", "len"})
    ->Args({1, 512})
    ->Args({4, 512})
    ->Args({4, 2048})
    ->Apply(course::bench::configure);

void BM_decoder_layer_unfused(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0)), len = static_cast<int>(state.range(1));
  std::unique_ptr<LayerRun> r;
  std::vector<bfloat16> first;
  try {
    r = std::make_unique<LayerRun>(batch, len);
    r->restore();
    r->unfused();
    first = r->out.download();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  const auto check = [&] {
    return course::bench::compare_sampled(
        r->out.download(), [&](std::size_t i) { return course::to_double(first[i]); },
        opts(kHidden, "sampled out, against the baseline's first run"));
  };
  course::bench::measure(state, [&] { r->unfused(); }, layer_traffic(batch, len),
                         {[&] { r->restore(); }, check});
}
BENCHMARK(BM_decoder_layer_unfused)
    ->ArgNames({"batch", "len"})
    ->Args({1, 512})
    ->Args({4, 512})
    ->Args({4, 2048})
    ->Apply(course::bench::configure);

}  // namespace
