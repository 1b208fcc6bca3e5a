// Day 12 benchmarks: prefill attention, bfloat16, in TFLOP/s.
//   BM_prefill_1_mma          batch x heads x len x len, head dim 64 or 128, causal or not
//   BM_prefill_1_mma_ragged   one packed batch of eight sequences of different lengths
//   BM_prefill_2_wgmma        the Hopper kernel (TMA, wgmma), head dim 128: an error row elsewhere
// FLOPs: the two matrix products, 4 * len_q * len_kv * head_dim per head and sequence, halved
// under the causal mask (FlashAttention's convention: 4 * b * h * L^2 * d / 2; the exact count of
// visible pairs is L (L + 1) / 2, 0.02 % more at L = 4096). Bytes: q, k, v read once, o and lse
// written once: attention at these lengths is far from memory-bound, so %copy stays low.
// The headline (mark_key): batch 4, 32 heads, length 4096, head dim 128, causal. There is no
// vendor baseline in this binary: FlashAttention 2 and cuDNN are reached from Python, and the
// lesson cites what PyTorch measured with them on the same shape.
// Every output is checked before timing and again after (course::bench::Recheck): a sample of
// (query row, head) pairs, each against the float64 reference over its whole key range, o and
// lse both.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/device.h"
#include "course/random.h"
#include "course/reference/attention.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
namespace ref = course::reference;

// As in test_d12.cu: o at bfloat16's tolerance, lse (float32) at this one.
constexpr course::Tolerance kLseTolerance{2e-5, 2e-4};
// (query row, head) pairs checked: each costs a len_kv x head_dim float64 attention on the host.
constexpr std::int64_t kCheckedRows = 64;

// Runs prefill_1_mma (or prefill_2_wgmma) on a packed batch of sequences (len_q == len_kv for
// each), 32 heads.
void bench_prefill(benchmark::State& state, const std::vector<int>& lengths, int dim, bool causal,
                   bool key, bool hopper = false) {
  constexpr int kHeads = 32;
  if (hopper && course::device_facts().cc_major != 9) {
    state.SkipWithError("needs compute capability 9.0 (Hopper): not timed on this GPU");
    return;
  }
  std::vector<std::int32_t> cu(1, 0);
  double pairs = 0.0;  // (query, key) pairs computed per head
  for (int n : lengths) {
    cu.push_back(cu.back() + n);
    pairs += causal ? 0.5 * n * static_cast<double>(n) : n * static_cast<double>(n);
  }
  const std::int64_t total = cu.back();
  const std::size_t elems = static_cast<std::size_t>(total) * kHeads * dim;
  const auto q = course::random_uniform<bfloat16>(elems, course::seed_for(1), -3.0, 3.0);
  const auto k = course::random_uniform<bfloat16>(elems, course::seed_for(2));
  const auto v = course::random_uniform<bfloat16>(elems, course::seed_for(3));
  DeviceBuffer<bfloat16> dq(q), dk(k), dv(v), d_o(elems);
  DeviceBuffer<float> dlse(static_cast<std::size_t>(total) * kHeads);
  DeviceBuffer<std::int32_t> dcu(cu);
  d12::PrefillArgs<bfloat16> args;
  args.q = dq.data();
  args.k = dk.data();
  args.v = dv.data();
  args.o = d_o.data();
  args.lse = dlse.data();
  args.cu_seqlens_q = dcu.data();
  args.cu_seqlens_kv = dcu.data();
  args.batch = static_cast<int>(lengths.size());
  args.total_q = args.total_kv = total;
  args.max_seqlen_q = *std::max_element(lengths.begin(), lengths.end());
  args.num_heads = args.num_kv_heads = kHeads;
  args.head_dim = dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
  args.scale = static_cast<float>(scale);
  args.causal = causal;

  const auto run = [&] {
    if (hopper) {
      d12::prefill_2_wgmma(args);
    } else {
      d12::prefill_1_mma(args);
    }
  };
  const auto poison = [&] {
    d_o.poison();
    dlse.poison();
  };
  const auto check = [&] {
    if (hopper) {
      try {
        d12::check_mbarrier_timeouts();
      } catch (const std::exception& e) {
        course::Comparison failed;
        failed.message = e.what();
        return failed;
      }
    }
    const auto got_o = d_o.download();
    const auto got_lse = dlse.download();
    std::vector<bfloat16> picked_o;
    std::vector<float> picked_lse;
    std::vector<double> want_o, want_lse;
    const std::int64_t pairs_total = total * kHeads;
    // An odd step, so that the samples visit every head (32 of them), not only head 0.
    const std::int64_t step = std::max<std::int64_t>(1, pairs_total / kCheckedRows) | 1;
    const auto to_double = [](bfloat16 x) { return course::to_double(x); };
    for (std::int64_t p = 0; p < pairs_total; p += step) {
      const std::int64_t row = p / kHeads;
      const int h = static_cast<int>(p % kHeads);
      const std::size_t b = static_cast<std::size_t>(
          std::upper_bound(cu.begin(), cu.end(), static_cast<std::int32_t>(row)) - cu.begin() - 1);
      const auto len = static_cast<std::size_t>(lengths[b]);
      const auto i = static_cast<std::size_t>(row - cu[b]);
      const std::size_t visible = causal ? ref::causal_visible_keys(i, len, len) : ref::kAllKeys;
      const std::size_t kv_first = (static_cast<std::size_t>(cu[b]) * kHeads + h) * dim;
      const std::size_t q_at = (static_cast<std::size_t>(row) * kHeads + h) * dim;
      const ref::AttentionRow r = ref::attention_row_strided(
          q.data() + q_at, k.data() + kv_first, std::ptrdiff_t{kHeads} * dim, v.data() + kv_first,
          std::ptrdiff_t{kHeads} * dim, len, static_cast<std::size_t>(dim), scale, to_double,
          visible);
      for (int d = 0; d < dim; ++d) {
        picked_o.push_back(got_o[q_at + d]);
        want_o.push_back(r.o[d]);
      }
      picked_lse.push_back(got_lse[static_cast<std::size_t>(h) * total + row]);
      want_lse.push_back(r.lse);
    }
    course::CompareOptions o_options;
    o_options.cols = dim;
    o_options.what = "sampled rows of o";
    const course::Comparison o_check = course::compare(picked_o, want_o, o_options);
    if (!o_check.ok) return o_check;
    course::CompareOptions lse_options;
    lse_options.tolerance = kLseTolerance;
    lse_options.what = "sampled lse";
    return course::compare(picked_lse, want_lse, lse_options);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  const double bytes = 2.0 * 4.0 * static_cast<double>(elems) + 4.0 * total * kHeads;
  const double flops = 4.0 * kHeads * pairs * dim;
  course::bench::measure(state, run, {bytes, flops, course::Math::kTensor16}, {poison, check});
  if (key) course::bench::mark_key(state);
}

// range(0) = batch, range(1) = heads (32), range(2) = len, range(3) = dim, range(4) = causal.
void BM_prefill_1_mma(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0)), len = static_cast<int>(state.range(2));
  const int dim = static_cast<int>(state.range(3));
  const bool causal = state.range(4) != 0;
  const bool headline = batch == 4 && len == 4096 && dim == 128 && causal;
  bench_prefill(state, std::vector<int>(static_cast<std::size_t>(batch), len), dim, causal,
                headline);
}
BENCHMARK(BM_prefill_1_mma)
    ->Apply(course::bench::configure)
    ->ArgNames({"batch", "heads", "len", "dim", "causal"})
    ->Args({4, 32, 4096, 128, 1})  // the headline
    ->Args({4, 32, 4096, 128, 0})
    ->Args({4, 32, 4096, 64, 1})
    ->Args({16, 32, 1024, 128, 1});

// Eight sequences from 1 to 4096 tokens (12 014 in all), packed: the grid covers the longest, and
// the blocks past a short sequence's end leave at once.
void BM_prefill_1_mma_ragged(benchmark::State& state) {
  const std::vector<int> lengths = {4096, 77, 3001, 1, 2048, 1234, 512, 1045};
  bench_prefill(state, lengths, static_cast<int>(state.range(0)), state.range(1) != 0, false);
}
BENCHMARK(BM_prefill_1_mma_ragged)
    ->Apply(course::bench::configure)
    ->ArgNames({"dim", "causal"})
    ->Args({128, 1})
    ->Args({128, 0});

// The Hopper kernel on the headline shape and its non-causal twin. range(0) = causal.
void BM_prefill_2_wgmma(benchmark::State& state) {
  bench_prefill(state, std::vector<int>(4, 4096), 128, state.range(0) != 0, false, true);
}
BENCHMARK(BM_prefill_2_wgmma)
    ->Apply(course::bench::configure)
    ->ArgNames({"causal"})
    ->Arg(1)
    ->Arg(0);

}  // namespace
