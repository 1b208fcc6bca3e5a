// Day 9 benchmarks: the GEMMs of lab.h next to cuBLAS, on the same data.
//   BM_gemm_0_cublas        cublasGemmEx, bfloat16 in, float32 out (the vendor baseline)
//   BM_wmma_gemm_bf16       Exercise 1: one warp per 16x16 tile, no shared memory
//   BM_gemm_1_mma           Exercise 6: 64x64 block tiles, swizzled shared memory, ldmatrix +
//                           mma.sync, synchronous (no pipelining: that is Day 10)
// bytes = A (M K 2) + B (N K 2) read + C (M N 4) written, flops = 2 M N K; TFLOP/s is the figure
// that matters (a GEMM of this size is compute-bound). %vendor = 100 * cuBLAS's median / this
// row's median, cuBLAS timed on the same shape and data in the same process (once per shape).
// There is no speed target today: the point is the instructions; Day 10 makes the GEMM fast.
// The headline (mark_key): gemm_1_mma at M = N = K = 4096.
// Every output is checked before timing and again after (course::bench::Recheck), on a sample of
// its elements against the float64 dot products.
//   build/<dir>/labs/d09_tensor_cores/d09_solution_bench --benchmark_filter=gemm_1_mma
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/random.h"
#include "course/reference/gemm.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
namespace ref = course::reference;

// Products of bfloat16 values are exact in float32; only the float32 sums round. Their error
// grows like sqrt(K / 16) float32 ulps of the partial sums in practice (about 1e-6 of rms(C) at
// K = 4096); 1e-4 in norm and 1e-3 per element leave room for any order of summation (cuBLAS's
// split-K included) while a dropped 16-element k step is off by ~1 %.
constexpr course::Tolerance kGemmTolerance{1e-4, 1e-3};
constexpr std::size_t kCheckedOutputs = 4096;  // each costs a K-long dot product on the host
constexpr int kVendorSamples = 30;

double bf16_to_double(bfloat16 v) { return course::to_double(v); }

using Gemm = std::function<void(const bfloat16*, const bfloat16*, float*, std::int64_t,
                                std::int64_t, std::int64_t)>;

// range(0) = M, range(1) = N, range(2) = K.
void bench_gemm(benchmark::State& state, const Gemm& gemm, bool vendor, bool key) {
  const std::int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const auto A =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(M * K), course::seed_for(1));
  const auto B =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(N * K), course::seed_for(2));
  DeviceBuffer<bfloat16> dA(A), dB(B);
  DeviceBuffer<float> dC(static_cast<std::size_t>(M * N));
  const auto run = [&] { gemm(dA.data(), dB.data(), dC.data(), M, N, K); };
  const auto poison = [&] { dC.poison(); };
  const auto check = [&] {
    course::CompareOptions options;
    options.tolerance = kGemmTolerance;
    return course::bench::compare_sampled(
        dC.download(),
        [&](std::size_t i) {
          return ref::gemm_at(A, B, static_cast<std::size_t>(N), static_cast<std::size_t>(K),
                              ref::BLayout::kColMajor, i / static_cast<std::size_t>(N),
                              i % static_cast<std::size_t>(N), bf16_to_double);
        },
        options, kCheckedOutputs);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  const double bytes = 2.0 * static_cast<double>(M) * static_cast<double>(K) +
                       2.0 * static_cast<double>(N) * static_cast<double>(K) +
                       4.0 * static_cast<double>(M) * static_cast<double>(N);
  const double flops =
      2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  course::bench::measure(state, run, {bytes, flops, course::Math::kTensor16}, {poison, check});
  if (vendor) {
    course::bench::report_vendor_ratio(
        state, std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K),
        [&] { d09::gemm_0_cublas(dA.data(), dB.data(), dC.data(), M, N, K); }, kVendorSamples);
  }
  if (key) course::bench::mark_key(state);
}

bool is_headline(const benchmark::State& state) {
  return state.range(0) == 4096 && state.range(1) == 4096 && state.range(2) == 4096;
}

// Square 1024 and 4096 (the headline), and an odd shape: M and N not multiples of any tile, K a
// multiple of 8 but not of the 64-element K tile.
void gemm_shapes(benchmark::internal::Benchmark* b) {
  b->Apply(course::bench::configure)->ArgNames({"M", "N", "K"});
  b->Args({1024, 1024, 1024});
  b->Args({4096, 4096, 4096});
  b->Args({4095, 4097, 1000});
}

void BM_gemm_0_cublas(benchmark::State& state) {
  bench_gemm(state, d09::gemm_0_cublas, false, false);
}
void BM_wmma_gemm_bf16(benchmark::State& state) {
  bench_gemm(state, d09::wmma_gemm_bf16, true, false);
}
void BM_gemm_1_mma(benchmark::State& state) {
  bench_gemm(state, d09::gemm_mma_bf16, true, is_headline(state));
}

BENCHMARK(BM_gemm_0_cublas)->Apply(gemm_shapes);
// WMMA needs multiples of 16: the square shapes only.
BENCHMARK(BM_wmma_gemm_bf16)
    ->Apply(course::bench::configure)
    ->ArgNames({"M", "N", "K"})
    ->Args({1024, 1024, 1024})
    ->Args({4096, 4096, 4096});
BENCHMARK(BM_gemm_1_mma)->Apply(gemm_shapes);

}  // namespace
