// Day 11 benchmarks.
//   BM_decode_0_memcpy             cudaMemcpy of the same K and V bytes (read once, written once):
//                                  the copy ceiling's own operation, on the headline's cache
//   BM_decode_attention            bfloat16 decode attention over a shuffled paged cache
//   BM_decode_attention_fp16       the same in float16
// Arguments: batch, qo_heads, kv_heads, len (every sequence), dim (head_dim), splits (0: the
// launcher's choice). bytes = the K and V bytes of every token (each read once) + q read + o and
// lse written; flops = 4 * batch * qo_heads * len * dim. Decoding reads the whole cache to produce
// one token per sequence: at most 2 * ratio flops per byte, so every row is a race to stream K
// and V at the copy rate, which %copy measures (a read-only kernel can pass 100 %: the copy
// ceiling counts a read and a write per byte).
// The headline (mark_key): batch 64, 32 query heads, 8 KV heads, 4096 tokens, head_dim 128
// (target: >= 90 %copy). The split sweep (batch 8, 16384 tokens, splits 1 .. 32) and the 128k
// rows with and without splits show when splitting pays (lesson §6.3).
// upload_paged_kv and plan_decode run once per row, outside the timed call, as an engine runs
// them once per batch of decode steps (lab.h).
// Every output is checked before timing and again after (course::bench::Recheck), on a sample of
// rows (b, h) against the float64 reference.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/check.h"
#include "course/random.h"
#include "course/reference/attention.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::half;
namespace ref = course::reference;

constexpr int kPageSize = 16;
constexpr std::size_t kCheckedRows = 64;  // (sequence, query head) rows checked against float64
// As in test_d11.cu: lse is float32 from float32 scores.
constexpr course::Tolerance kLseTolerance{1e-5, 1e-5};

struct Shape {
  int batch, qo_heads, kv_heads, dim, splits;
  std::int64_t len;
};
Shape shape_of(const benchmark::State& state) {
  return {static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
          static_cast<int>(state.range(2)), static_cast<int>(state.range(4)),
          static_cast<int>(state.range(5)), state.range(3)};
}

// A cache of exactly the pages the batch needs, in shuffled order (a fragmented cache).
d11::PageTable shuffled_table(const Shape& s, std::int64_t* num_pages) {
  const std::int64_t pages_per_seq = (s.len + kPageSize - 1) / kPageSize;
  *num_pages = pages_per_seq * s.batch;
  std::vector<std::int32_t> perm(static_cast<std::size_t>(*num_pages));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(course::seed_for(4));
  std::shuffle(perm.begin(), perm.end(), rng);
  d11::PageTable table;
  table.page_indices = perm;
  for (int b = 0; b <= s.batch; ++b)
    table.indptr.push_back(static_cast<std::int32_t>(b * pages_per_seq));
  table.last_page_len.assign(s.batch,
                             static_cast<std::int32_t>(s.len - (pages_per_seq - 1) * kPageSize));
  return table;
}

double kv_bytes(const Shape& s, std::size_t elem) {
  return 2.0 * static_cast<double>(s.batch) * static_cast<double>(s.len) * s.kv_heads * s.dim *
         static_cast<double>(elem);
}

template <class T>
void bench_decode(benchmark::State& state, bool key) {
  const Shape s = shape_of(state);
  std::int64_t num_pages = 0;
  const d11::PageTable table = shuffled_table(s, &num_pages);
  const d11::CacheShape cache{num_pages, kPageSize, s.kv_heads, s.dim};
  const std::size_t cache_elems =
      static_cast<std::size_t>(num_pages) * kPageSize * s.kv_heads * s.dim;
  const std::size_t rows = static_cast<std::size_t>(s.batch) * s.qo_heads;
  const auto q = course::random_uniform<T>(rows * s.dim, course::seed_for(1));
  const auto k = course::random_uniform<T>(cache_elems, course::seed_for(2));
  const auto v = course::random_uniform<T>(cache_elems, course::seed_for(3));
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.dim));
  DeviceBuffer<T> dq(q), dk(k), dv(v), d_o(rows * s.dim);
  DeviceBuffer<float> d_lse(rows);
  std::vector<double> ref_o, ref_lse;
  std::vector<std::size_t> checked;  // the rows compared
  try {
    // Plan once, outside the timed call (lab.h): the table is validated and uploaded, the
    // splits chosen and the workspace allocated here; a timed call does O(1) host work.
    const d11::PagedKv kv = d11::upload_paged_kv(cache, table);
    d11::DecodePlan plan = d11::plan_decode(kv, s.qo_heads, s.splits);
    d11::DecodeArgs<T> args;
    args.q = dq.data();
    args.k_cache = dk.data();
    args.v_cache = dv.data();
    args.o = d_o.data();
    args.lse = d_lse.data();
    args.num_qo_heads = s.qo_heads;
    args.scale = scale;
    const auto run = [&] { d11::decode_attention(args, kv, plan); };
    const auto poison = [&] {  // the outputs, and the split workspace the merge reads back
      d_o.poison();
      d_lse.poison();
      if (plan.workspace.partial_o.size() > 0) plan.workspace.partial_o.poison();
      if (plan.workspace.partial_lse.size() > 0) plan.workspace.partial_lse.poison();
    };
    // The reference of kCheckedRows evenly spaced rows, computed once.
    const std::size_t step = std::max<std::size_t>(1, rows / kCheckedRows);
    const std::size_t D = static_cast<std::size_t>(s.dim);
    for (std::size_t r = 0; r < rows; r += step) {
      const std::size_t b = r / s.qo_heads, h = r % s.qo_heads;
      const std::size_t g = h / static_cast<std::size_t>(s.qo_heads / s.kv_heads);
      auto at = [&](const std::vector<T>& c, std::size_t j, std::size_t d) {
        const std::size_t page = static_cast<std::size_t>(
            table.page_indices[static_cast<std::size_t>(table.indptr[b]) + j / kPageSize]);
        return course::to_double(c[((page * kPageSize + j % kPageSize) * s.kv_heads + g) * D + d]);
      };
      const auto row =
          ref::attention_row([&](std::size_t d) { return course::to_double(q[r * D + d]); },
                             [&](std::size_t j, std::size_t d) { return at(k, j, d); },
                             [&](std::size_t j, std::size_t d) { return at(v, j, d); },
                             static_cast<std::size_t>(s.len), D, static_cast<double>(scale));
      checked.push_back(r);
      ref_o.insert(ref_o.end(), row.o.begin(), row.o.end());
      ref_lse.push_back(row.lse);
    }
    const auto check = [&] {
      const auto o_all = d_o.download();
      const auto lse_all = d_lse.download();
      std::vector<T> o_rows;
      std::vector<float> lse_rows;
      for (std::size_t r : checked) {
        o_rows.insert(o_rows.end(), o_all.begin() + r * D, o_all.begin() + (r + 1) * D);
        lse_rows.push_back(lse_all[r]);
      }
      course::CompareOptions options;
      options.cols = s.dim;
      options.what = "o (sampled rows)";
      const course::Comparison o_cmp = course::compare(o_rows, ref_o, options);
      if (!o_cmp.ok) return o_cmp;
      course::CompareOptions lse_options;
      lse_options.tolerance = kLseTolerance;
      lse_options.what = "lse (sampled rows)";
      return course::compare(lse_rows, ref_lse, lse_options);
    };
    poison();
    run();
    if (!course::bench::verified(state, check())) return;
    const double bytes = kv_bytes(s, sizeof(T)) + 2.0 * static_cast<double>(rows * D * sizeof(T)) +
                         4.0 * static_cast<double>(rows);
    const double flops = 4.0 * static_cast<double>(rows) * static_cast<double>(s.len) * s.dim;
    course::bench::measure(state, run, {bytes, flops, course::Math::kTensor16}, {poison, check});
    state.counters["splits"] = plan.num_splits;  // the plan's choice (kAutoSplits resolved)
    if (key) course::bench::mark_key(state);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

bool is_headline(const benchmark::State& state) {
  return state.range(0) == 64 && state.range(1) == 32 && state.range(2) == 8 &&
         state.range(3) == 4096 && state.range(4) == 128 && state.range(5) == d11::kAutoSplits;
}

void BM_decode_attention(benchmark::State& state) {
  bench_decode<bfloat16>(state, is_headline(state));
}
void BM_decode_attention_fp16(benchmark::State& state) { bench_decode<half>(state, false); }

const std::vector<std::string> kArgNames = {"batch", "qo_heads", "kv_heads",
                                            "len",   "dim",      "splits"};

BENCHMARK(BM_decode_attention)
    ->Apply(course::bench::configure)
    ->ArgNames(kArgNames)
    ->Args({64, 32, 8, 4096, 128, 0})   // the headline
    ->Args({64, 64, 8, 4096, 128, 0})   // ratio 8
    ->Args({16, 32, 32, 4096, 128, 0})  // ratio 1 (multi-head attention)
    ->Args({64, 32, 8, 4096, 64, 0})    // head_dim 64
    ->Args({1, 32, 8, 131072, 128, 0})  // long context: the launcher splits
    ->Args({1, 32, 8, 131072, 128, 1})  // ... and the same without splits
    ->Args({8, 32, 8, 16384, 128, 1})   // the split sweep
    ->Args({8, 32, 8, 16384, 128, 2})
    ->Args({8, 32, 8, 16384, 128, 4})
    ->Args({8, 32, 8, 16384, 128, 8})
    ->Args({8, 32, 8, 16384, 128, 16})
    ->Args({8, 32, 8, 16384, 128, 32});
BENCHMARK(BM_decode_attention_fp16)
    ->Apply(course::bench::configure)
    ->ArgNames(kArgNames)
    ->Args({64, 32, 8, 4096, 128, 0});

// The copy ceiling's own operation on the headline's K and V: every byte read once and written
// once (bytes = 2 x the K and V bytes), so its %copy is ~100 by construction; the attention
// rows read the same bytes without writing them.
void BM_decode_0_memcpy(benchmark::State& state) {
  const Shape s = shape_of(state);
  const std::size_t elems = static_cast<std::size_t>(kv_bytes(s, sizeof(bfloat16))) / 2;
  const auto host = course::random_uniform<bfloat16>(elems, course::seed_for(5));
  DeviceBuffer<bfloat16> src(host), dst(elems);
  const auto run = [&] {
    COURSE_CUDA_CHECK(
        cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice));
  };
  const auto poison = [&] { dst.poison(); };
  const auto check = [&] {
    course::CompareOptions options;
    options.tolerance = {0.0, 0.0};
    return course::bench::compare_sampled(
        dst.download(), [&](std::size_t i) { return course::to_double(host[i]); }, options);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {2.0 * static_cast<double>(src.bytes()), 0.0},
                         {poison, check});
}
BENCHMARK(BM_decode_0_memcpy)
    ->Apply(course::bench::configure)
    ->ArgNames(kArgNames)
    ->Args({64, 32, 8, 4096, 128, 0});

}  // namespace
