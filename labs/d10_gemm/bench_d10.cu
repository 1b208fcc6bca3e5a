// Day 10 benchmarks: one per step, and the vendor rows.
//   BM_gemm_0_cublas_fp32        cublasSgemm (default math mode: float32 FMA, not TF32)
//   BM_gemm_0_cublas_bf16        cublasGemmEx, bfloat16 in and out, CUBLAS_COMPUTE_32F
//   BM_gemm_0_cublaslt_fp8       cuBLASLt FP8 e4m3 TN, per-tensor scale pointers, bfloat16 D
//   BM_gemm_1_naive ... BM_gemm_8_fp8   the steps of lab.h
//   BM_mma_sync_ceiling          mma.sync.m16n8k16 from registers only: step 6's instruction's
//                                ceiling on this GPU (lesson §7.7)
// flops = 2 M N K; bytes = A and B read once, C written once (a GEMM of these sizes is
// compute-bound: TFLOP/s is the figure). Every step's row also reports %vendor = 100 * the
// vendor's median / this row's median, the vendor timed in the same process on the same shape
// and data (once per shape: cached). The headline (mark_key): gemm_7_wgmma at 8192^3 (target
// >= 80 % of cuBLAS). The Hopper rows report an error on other GPUs instead of a time.
// Every output is checked before timing and again after (course::bench::Recheck), on a sample of
// its elements against float64 dot products.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/device.h"
#include "course/random.h"
#include "course/reference/gemm.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using d10::fp8_e4m3;
namespace ref = course::reference;

constexpr std::size_t kCheckedOutputs = 4096;  // each costs a K-long dot product on the host
constexpr int kVendorSamples = 20;
// As in test_d10.cu: float32 sums of K products; bfloat16 rounding of the output; FP8 wgmma's
// reduced-precision accumulation (K here is up to 16384: float32's K u term is 1e-3).
constexpr course::Tolerance kFp32Tolerance{2e-3, 8e-3};
constexpr course::Tolerance kBf16Tolerance{1e-2, 2.5e-2};
constexpr course::Tolerance kFp8Tolerance{1.5e-2, 4e-2};

double f32_to_double(float v) { return v; }
double bf16_to_double(bfloat16 v) { return course::to_double(v); }
double fp8_to_double(fp8_e4m3 v) { return static_cast<double>(static_cast<float>(v)); }

// The key of the vendor's median (course::bench::vendor_median_us): the kind and the shape.
std::string vendor_key(const std::string& kind, std::int64_t M, std::int64_t N, std::int64_t K) {
  return kind + "/" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
}

double gemm_flops(std::int64_t M, std::int64_t N, std::int64_t K) {
  return 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
}
double gemm_bytes(std::int64_t M, std::int64_t N, std::int64_t K, double in_bytes,
                  double out_bytes) {
  return in_bytes * (static_cast<double>(M) * K + static_cast<double>(N) * K) +
         out_bytes * static_cast<double>(M) * N;
}

// Checks once, times with a re-check, adds %vendor (unless `vendor` is empty: a vendor row).
// `run` enqueues the work; `check` compares; `vendor` runs the vendor on the same shape.
template <class Out>
void time_checked(benchmark::State& state, const std::function<void()>& run, DeviceBuffer<Out>& C,
                  const std::function<course::Comparison()>& check, course::bench::Traffic traffic,
                  const std::string& vendor_shape, const std::function<void()>& vendor, bool key) {
  const auto poison = [&] { C.poison(); };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, traffic, {poison, check});
  if (vendor) course::bench::report_vendor_ratio(state, vendor_shape, vendor, kVendorSamples);
  if (key) course::bench::mark_key(state);
}

// ---------------------------------------------------------------- float32 (steps 1-5)
using Fp32Gemm = void (*)(const float*, const float*, float*, std::int64_t, std::int64_t,
                          std::int64_t);

// range(0) = M, range(1) = N, range(2) = K. vendor_row: this row times cuBLAS itself.
void bench_fp32(benchmark::State& state, Fp32Gemm gemm, bool vendor_row) {
  const std::int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const auto A =
      course::random_uniform<float>(static_cast<std::size_t>(M * K), course::seed_for(1));
  const auto B =
      course::random_uniform<float>(static_cast<std::size_t>(K * N), course::seed_for(2));
  DeviceBuffer<float> dA(A), dB(B), dC(static_cast<std::size_t>(M * N));
  const auto run = [&] { gemm(dA.data(), dB.data(), dC.data(), M, N, K); };
  const auto check = [&] {
    course::CompareOptions options;
    options.tolerance = kFp32Tolerance;
    return course::bench::compare_sampled(
        dC.download(),
        [&](std::size_t i) {
          return ref::gemm_at(A, B, static_cast<std::size_t>(N), static_cast<std::size_t>(K),
                              ref::BLayout::kRowMajor, i / static_cast<std::size_t>(N),
                              i % static_cast<std::size_t>(N), f32_to_double);
        },
        options, kCheckedOutputs);
  };
  std::function<void()> vendor;
  if (!vendor_row)
    vendor = [&] { d10::gemm_0_cublas_fp32(dA.data(), dB.data(), dC.data(), M, N, K); };
  time_checked<float>(state, run, dC, check,
                      {gemm_bytes(M, N, K, 4, 4), gemm_flops(M, N, K), course::Math::kTensorTf32},
                      vendor_key("fp32", M, N, K), vendor, false);
}

// Square 1024-4096, the skinny shapes of decoding (M = 1, 16, 128), one shape of no tile
// multiple (N % 4 == 0 for the 16-byte steps).
void fp32_shapes(benchmark::internal::Benchmark* b) {
  b->Apply(course::bench::configure)->ArgNames({"M", "N", "K"});
  for (std::int64_t n : {1024, 2048, 4096}) b->Args({n, n, n});
  for (std::int64_t m : {1, 16, 128}) b->Args({m, 4096, 4096});
  b->Args({4095, 4100, 4096});
}

void BM_gemm_0_cublas_fp32(benchmark::State& state) {
  bench_fp32(state, d10::gemm_0_cublas_fp32, true);
}
void BM_gemm_1_naive(benchmark::State& state) { bench_fp32(state, d10::gemm_1_naive, false); }
void BM_gemm_2_smem(benchmark::State& state) { bench_fp32(state, d10::gemm_2_smem, false); }
void BM_gemm_3_register_tile(benchmark::State& state) {
  bench_fp32(state, d10::gemm_3_register_tile, false);
}
void BM_gemm_4_vectorized(benchmark::State& state) {
  bench_fp32(state, d10::gemm_4_vectorized, false);
}
void BM_gemm_5_warp_tile(benchmark::State& state) {
  bench_fp32(state, d10::gemm_5_warp_tile, false);
}
BENCHMARK(BM_gemm_0_cublas_fp32)->Apply(fp32_shapes);
BENCHMARK(BM_gemm_1_naive)->Apply(fp32_shapes);
BENCHMARK(BM_gemm_2_smem)->Apply(fp32_shapes);
BENCHMARK(BM_gemm_3_register_tile)->Apply(fp32_shapes);
BENCHMARK(BM_gemm_4_vectorized)->Apply(fp32_shapes);
BENCHMARK(BM_gemm_5_warp_tile)->Apply(fp32_shapes);

// ---------------------------------------------------------------- bfloat16 (steps 6-7)
using Bf16Gemm = std::function<void(const bfloat16*, const bfloat16*, bfloat16*, std::int64_t,
                                    std::int64_t, std::int64_t, d10::BLayout)>;

// range(0..2) = M, N, K; layout as given. hopper_only: the row needs compute capability 9.0.
void bench_bf16(benchmark::State& state, const Bf16Gemm& gemm, d10::BLayout layout,
                bool hopper_only, bool vendor_row, bool key) {
  const std::int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  if (hopper_only && !course::is_hopper()) {
    state.SkipWithError("needs compute capability 9.0 (Hopper, sm_90a): not timed on this GPU");
    return;
  }
  const auto A =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(M * K), course::seed_for(3));
  const auto B =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(K * N), course::seed_for(4));
  DeviceBuffer<bfloat16> dA(A), dB(B), dC(static_cast<std::size_t>(M * N));
  const auto run = [&] { gemm(dA.data(), dB.data(), dC.data(), M, N, K, layout); };
  const ref::BLayout rl =
      layout == d10::BLayout::kRowMajor ? ref::BLayout::kRowMajor : ref::BLayout::kColMajor;
  const auto check = [&] {
    if (hopper_only) {
      try {
        d10::check_mbarrier_timeouts();
      } catch (const std::exception& e) {
        course::Comparison failed;
        failed.message = e.what();
        return failed;
      }
    }
    course::CompareOptions options;
    options.tolerance = kBf16Tolerance;
    return course::bench::compare_sampled(
        dC.download(),
        [&](std::size_t i) {
          return ref::gemm_at(A, B, static_cast<std::size_t>(N), static_cast<std::size_t>(K), rl,
                              i / static_cast<std::size_t>(N), i % static_cast<std::size_t>(N),
                              bf16_to_double);
        },
        options, kCheckedOutputs);
  };
  std::function<void()> vendor;
  if (!vendor_row)
    vendor = [&] { d10::gemm_0_cublas_bf16(dA.data(), dB.data(), dC.data(), M, N, K, layout); };
  const std::string kind = layout == d10::BLayout::kRowMajor ? "bf16_nn" : "bf16_tn";
  time_checked<bfloat16>(state, run, dC, check,
                         {gemm_bytes(M, N, K, 2, 2), gemm_flops(M, N, K), course::Math::kTensor16},
                         vendor_key(kind, M, N, K), vendor, key);
}

// Square 1024-8192, decoding shapes, and one shape of no tile multiple (K % 8 == 0; N odd for
// B stored [N, K], N % 8 == 0 for a row-major B).
void add_bf16_shapes(benchmark::internal::Benchmark* b, std::int64_t odd_n) {
  for (std::int64_t n : {1024, 2048, 4096, 8192}) b->Args({n, n, n});
  for (std::int64_t m : {1, 16, 128}) b->Args({m, 8192, 8192});
  b->Args({16, 16384, 16384});
  b->Args({4095, odd_n, 4096});
}
void tn_shapes(benchmark::internal::Benchmark* b) {
  b->Apply(course::bench::configure)->ArgNames({"M", "N", "K"});
  add_bf16_shapes(b, 4097);
}

// range(3) = b_col_major (1: B stored [N, K]; 0: row-major [K, N]).
void mma_shapes(benchmark::internal::Benchmark* b) {
  b->Apply(course::bench::configure)->ArgNames({"M", "N", "K", "b_col_major"});
  for (std::int64_t n : {1024, 2048, 4096, 8192}) b->Args({n, n, n, 1});
  for (std::int64_t m : {1, 16, 128}) b->Args({m, 8192, 8192, 1});
  b->Args({16, 16384, 16384, 1});
  b->Args({4095, 4097, 4096, 1});
  b->Args({4096, 4096, 4096, 0});
  b->Args({8192, 8192, 8192, 0});
  b->Args({4095, 4104, 4096, 0});
}
d10::BLayout layout_arg(const benchmark::State& state) {
  return state.range(3) != 0 ? d10::BLayout::kColMajor : d10::BLayout::kRowMajor;
}

void BM_gemm_0_cublas_bf16(benchmark::State& state) {
  bench_bf16(state, d10::gemm_0_cublas_bf16, layout_arg(state), false, true, false);
}
void BM_gemm_6_mma(benchmark::State& state) {
  bench_bf16(state, d10::gemm_6_mma, layout_arg(state), false, false, false);
}
void BM_gemm_7_wgmma(benchmark::State& state) {
  const bool key = state.range(0) == 8192 && state.range(1) == 8192 && state.range(2) == 8192;
  bench_bf16(
      state,
      [](const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M, std::int64_t N,
         std::int64_t K, d10::BLayout) { d10::gemm_7_wgmma(A, B, C, M, N, K); },
      d10::BLayout::kColMajor, true, false, key);
}
BENCHMARK(BM_gemm_0_cublas_bf16)->Apply(mma_shapes);
BENCHMARK(BM_gemm_6_mma)->Apply(mma_shapes);
BENCHMARK(BM_gemm_7_wgmma)->Apply(tn_shapes);

// ---------------------------------------------------------------- the mma.sync ceiling
// What step 6's instruction can do at best on this GPU (mma_ceiling.cu): mma.sync from registers
// only, 16 warps per SM. The thread sums are exact, so every one is checked, before and after
// timing. Step 6's TFLOP/s over this row's is the share of the ceiling it reaches (lesson §7.7).
constexpr int kCeilingIterations = 4096, kCeilingBlocksPerSm = 2;

void BM_mma_sync_ceiling(benchmark::State& state) {
  const int blocks = course::device_facts().sm_count * kCeilingBlocksPerSm;
  const std::size_t threads = static_cast<std::size_t>(blocks) * d10::kMmaCeilingThreads;
  DeviceBuffer<float> out(threads);
  const auto run = [&] { d10::mma_sync_ceiling(out.data(), blocks, kCeilingIterations); };
  const auto check = [&] {
    constexpr double kExpected = 16.0 * 4 * d10::kMmaCeilingChains * kCeilingIterations;
    const auto got = out.download();
    course::CompareOptions options;
    options.tolerance = {0.0, 0.0};  // exact: every partial sum is an integer below 2^24
    options.what = "thread sums";
    return course::compare(got, std::vector<double>(got.size(), kExpected), options);
  };
  const auto poison = [&] { out.poison(); };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  const double mmas =
      static_cast<double>(threads / 32) * d10::kMmaCeilingChains * kCeilingIterations;
  course::bench::measure(state, run, {static_cast<double>(sizeof(float) * threads), 4096.0 * mmas},
                         {poison, check});
}
BENCHMARK(BM_mma_sync_ceiling)->Apply(course::bench::configure);

// ---------------------------------------------------------------- FP8 (step 8)
using Fp8Gemm = void (*)(const fp8_e4m3*, const fp8_e4m3*, bfloat16*, std::int64_t, std::int64_t,
                         std::int64_t, const float*, const float*);

void bench_fp8(benchmark::State& state, Fp8Gemm gemm, bool vendor_row) {
  const std::int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  if (!course::is_hopper()) {
    state.SkipWithError("needs compute capability 9.0 (Hopper, sm_90a): not timed on this GPU");
    return;
  }
  const auto to_fp8 = [](const std::vector<float>& v) {
    std::vector<fp8_e4m3> out(v.size());
    course::detail::parallel_chunks(v.size(), [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) out[i] = fp8_e4m3(v[i]);
    });
    return out;
  };
  const auto A =
      to_fp8(course::random_uniform<float>(static_cast<std::size_t>(M * K), course::seed_for(5)));
  const auto B =
      to_fp8(course::random_uniform<float>(static_cast<std::size_t>(N * K), course::seed_for(6)));
  constexpr float kScaleA = 0.375f, kScaleB = 2.5f;
  DeviceBuffer<fp8_e4m3> dA(A), dB(B);
  DeviceBuffer<float> scale_a(std::vector<float>{kScaleA}), scale_b(std::vector<float>{kScaleB});
  DeviceBuffer<bfloat16> dC(static_cast<std::size_t>(M * N));
  const auto run = [&] {
    gemm(dA.data(), dB.data(), dC.data(), M, N, K, scale_a.data(), scale_b.data());
  };
  const auto check = [&] {
    try {
      d10::check_mbarrier_timeouts();
    } catch (const std::exception& e) {
      course::Comparison failed;
      failed.message = e.what();
      return failed;
    }
    course::CompareOptions options;
    options.tolerance = kFp8Tolerance;
    return course::bench::compare_sampled(
        dC.download(),
        [&](std::size_t i) {
          return static_cast<double>(kScaleA) * kScaleB *
                 ref::gemm_at(A, B, static_cast<std::size_t>(N), static_cast<std::size_t>(K),
                              ref::BLayout::kColMajor, i / static_cast<std::size_t>(N),
                              i % static_cast<std::size_t>(N), fp8_to_double);
        },
        options, kCheckedOutputs);
  };
  std::function<void()> vendor;
  if (!vendor_row)
    vendor = [&] {
      d10::gemm_0_cublaslt_fp8(dA.data(), dB.data(), dC.data(), M, N, K, scale_a.data(),
                               scale_b.data());
    };
  time_checked<bfloat16>(state, run, dC, check,
                         {gemm_bytes(M, N, K, 1, 2), gemm_flops(M, N, K), course::Math::kTensorFp8},
                         vendor_key("fp8", M, N, K), vendor, false);
}

void BM_gemm_0_cublaslt_fp8(benchmark::State& state) {
  bench_fp8(state, d10::gemm_0_cublaslt_fp8, true);
}
void BM_gemm_8_fp8(benchmark::State& state) {
  bench_fp8(
      state,
      [](const fp8_e4m3* A, const fp8_e4m3* B, bfloat16* C, std::int64_t M, std::int64_t N,
         std::int64_t K, const float* sa,
         const float* sb) { d10::gemm_8_fp8(A, B, C, M, N, K, sa, sb); },
      false);
}
BENCHMARK(BM_gemm_0_cublaslt_fp8)->Apply(tn_shapes);
BENCHMARK(BM_gemm_8_fp8)->Apply(tn_shapes);

}  // namespace
