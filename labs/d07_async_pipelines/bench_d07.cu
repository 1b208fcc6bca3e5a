// Day 7 benchmarks: one per variant.
//   BM_async_copy_1_cuda_pipeline, _2_primitives, _3_ptx   x -> shared -> y, bytes = read x +
//                                write y
//   BM_gemv_0_cublas             cublasGemmEx on the same data (the vendor baseline)
//   BM_gemv_1_sync ... BM_gemv_5_tma   the progression of lab.h
// For the GEMV, bytes = W (N * K * 2) + x (batch * K * 2) read + y (batch * N * 4) written, and
// flops = 2 * batch * N * K. At batch 1 to 16 the weights are almost all of the bytes and the
// arithmetic intensity is at most 16 flops per byte: every variant is a race to stream W at the
// copy rate, which is what %copy measures (a read-only kernel can pass 100 %: the copy ceiling
// counts a read and a write per byte).
// The headline (mark_key): gemv_3_multistage with 4 stages, N = K = 16384, batch 1 (target: >= 90
// %copy). The Hopper rows report an error on older GPUs instead of a time.
// Every output is checked before timing and again after (course::bench::Recheck), on a sample of
// its elements against the float64 dot products.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/device.h"
#include "course/random.h"
#include "course/reference/gemv.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
namespace ref = course::reference;

// As in test_d07.cu: bfloat16 products are exact in float32, only the float32 sums round.
constexpr course::Tolerance kGemvTolerance{1e-4, 1e-3};
// Sampled outputs checked: each costs a K-long dot product on the host.
constexpr std::size_t kCheckedOutputs = 4096;

double bf16_to_double(bfloat16 v) { return course::to_double(v); }

using Gemv =
    std::function<void(const bfloat16*, const bfloat16*, float*, std::int64_t, std::int64_t, int)>;

// range(0) = N, range(1) = K, range(2) = batch.
void bench_gemv(benchmark::State& state, const Gemv& gemv, bool hopper_only, bool key) {
  const std::int64_t N = state.range(0), K = state.range(1);
  const int batch = static_cast<int>(state.range(2));
  if (hopper_only && course::device_facts().cc_major < 9) {
    state.SkipWithError("needs compute capability 9.0 (Hopper): not timed on this GPU");
    return;
  }
  const auto W =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(N * K), course::seed_for(1));
  const auto x =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(batch * K), course::seed_for(2));
  DeviceBuffer<bfloat16> dW(W), dx(x);
  DeviceBuffer<float> dy(static_cast<std::size_t>(batch * N));
  const auto run = [&] { gemv(dW.data(), dx.data(), dy.data(), N, K, batch); };
  const auto poison = [&] { dy.poison(); };
  const auto check = [&] {
    if (hopper_only) {
      try {
        d07::check_mbarrier_timeouts();
      } catch (const std::exception& e) {
        course::Comparison failed;
        failed.message = e.what();
        return failed;
      }
    }
    course::CompareOptions options;
    options.tolerance = kGemvTolerance;
    return course::bench::compare_sampled(
        dy.download(),
        [&](std::size_t i) {
          return ref::gemv_at(W, x, static_cast<std::size_t>(K), i % static_cast<std::size_t>(N),
                              i / static_cast<std::size_t>(N), bf16_to_double);
        },
        options, kCheckedOutputs);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  const double bytes = 2.0 * static_cast<double>(N) * static_cast<double>(K) +
                       2.0 * batch * static_cast<double>(K) + 4.0 * batch * static_cast<double>(N);
  const double flops = 2.0 * batch * static_cast<double>(N) * static_cast<double>(K);
  // Tensor cores could serve batches of up to 16: the compute floor is their 16-bit rate.
  course::bench::measure(state, run, {bytes, flops, course::Math::kTensor16}, {poison, check});
  if (key) course::bench::mark_key(state);
}

bool is_headline(const benchmark::State& state) {
  return state.range(0) == 16384 && state.range(1) == 16384 && state.range(2) == 1;
}

// N = K = 16384 at batch 1 (the headline), 4 and 16, and an odd shape: N prime, K a multiple of 8
// but not of the 512-element tile, batch 3.
void gemv_shapes(benchmark::internal::Benchmark* b) {
  b->Apply(course::bench::configure)->ArgNames({"N", "K", "batch"});
  for (int batch : {1, 4, 16}) b->Args({16384, 16384, batch});
  b->Args({12289, 11000, 3});
}

void BM_gemv_0_cublas(benchmark::State& state) {
  bench_gemv(state, d07::gemv_0_cublas, false, false);
}
void BM_gemv_1_sync(benchmark::State& state) { bench_gemv(state, d07::gemv_1_sync, false, false); }
void BM_gemv_2_double_buffer(benchmark::State& state) {
  bench_gemv(state, d07::gemv_2_double_buffer, false, false);
}
// range(3) = stages.
void BM_gemv_3_multistage(benchmark::State& state) {
  const int stages = static_cast<int>(state.range(3));
  bench_gemv(
      state,
      [stages](const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
               int batch) { d07::gemv_3_multistage(W, x, y, N, K, batch, stages); },
      false, stages == d07::kDefaultStages && is_headline(state));
}
void BM_gemv_4_bulk(benchmark::State& state) {
  bench_gemv(
      state,
      [](const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
         int batch) { d07::gemv_4_bulk(W, x, y, N, K, batch); },
      true, false);
}
void BM_gemv_5_tma(benchmark::State& state) {
  bench_gemv(
      state,
      [](const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
         int batch) { d07::gemv_5_tma(W, x, y, N, K, batch); },
      true, false);
}

BENCHMARK(BM_gemv_0_cublas)->Apply(gemv_shapes);
BENCHMARK(BM_gemv_1_sync)->Apply(gemv_shapes);
BENCHMARK(BM_gemv_2_double_buffer)->Apply(gemv_shapes);
BENCHMARK(BM_gemv_3_multistage)
    ->Apply(course::bench::configure)
    ->ArgNames({"N", "K", "batch", "stages"})
    ->Args({16384, 16384, 1, 3})
    ->Args({16384, 16384, 1, 4})
    ->Args({16384, 16384, 1, 6})
    ->Args({16384, 16384, 4, 4})
    ->Args({16384, 16384, 16, 4})
    ->Args({12289, 11000, 3, 4});
BENCHMARK(BM_gemv_4_bulk)->Apply(gemv_shapes);
BENCHMARK(BM_gemv_5_tma)->Apply(gemv_shapes);

// The copies of Exercise 1, 2^26 floats: bytes = read + write.
void bench_async_copy(benchmark::State& state,
                      void (*copy)(const float*, float*, std::int64_t, int)) {
  const std::int64_t n = state.range(0);
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(3));
  DeviceBuffer<float> dx(x), dy(static_cast<std::size_t>(n));
  const auto run = [&] { copy(dx.data(), dy.data(), n, 0); };
  const auto poison = [&] { dy.poison(); };
  const auto check = [&] {
    course::CompareOptions options;
    options.tolerance = {0.0, 0.0};
    return course::bench::compare_sampled(
        dy.download(), [&](std::size_t i) { return static_cast<double>(x[i]); }, options);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {8.0 * static_cast<double>(n), 0.0}, {poison, check});
}
void BM_async_copy_1_cuda_pipeline(benchmark::State& state) {
  bench_async_copy(state, d07::async_copy_1_cuda_pipeline);
}
void BM_async_copy_2_primitives(benchmark::State& state) {
  bench_async_copy(state, d07::async_copy_2_primitives);
}
void BM_async_copy_3_ptx(benchmark::State& state) {
  bench_async_copy(state, d07::async_copy_3_ptx);
}
BENCHMARK(BM_async_copy_1_cuda_pipeline)
    ->Apply(course::bench::configure)
    ->ArgNames({"n"})
    ->Arg(std::int64_t{1} << 26);
BENCHMARK(BM_async_copy_2_primitives)
    ->Apply(course::bench::configure)
    ->ArgNames({"n"})
    ->Arg(std::int64_t{1} << 26);
BENCHMARK(BM_async_copy_3_ptx)
    ->Apply(course::bench::configure)
    ->ArgNames({"n"})
    ->Arg(std::int64_t{1} << 26);

}  // namespace
