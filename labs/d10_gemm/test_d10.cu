// Day 10 tests. Each suite is one step of README.md (a suite named StepSomething counts toward
// Step). Outputs are poisoned before every run, so an element the kernel never wrote is reported
// as such, and guard elements around C must keep their poison. The Hopper suites (GemmWgmma...,
// GemmFp8) skip, saying why, on GPUs other than compute capability 9.0. Every shape is small
// enough for a full float64 reference (M N K multiply-adds on the CPU, most of this day's test
// time: a 1024^3 reference alone takes a second), computed once per shape and process.
//
// What a kernel of this day can get wrong, and the test that sees it:
//   - M, N or K not a multiple of the block tile, a thread's block or the K-tile (a missing zero
//     fill or bounds test): every suite's Shapes (127 x 257 x 61, 129 x 130 x 131, K = 61, 513
//     in steps 1-3; K = 72, 200, 264, 520 in steps 6-7; K = 80, 208, 528 in step 8).
//   - sizes of 1 (1 x 1 x 1, M = 1, N = 1): every suite's Shapes.
//   - a block origin computed with the wrong tile side (only seen with several blocks along M
//     and N): M520_N390_K100 (steps 1-3), M520_N392_K100 (steps 4-5: the only shape with
//     blockIdx.y > 0 in step 5), M300_N520_* and M1153_N264_* (steps 6-8).
//   - the grouped tile order inside the kernel with two groups of tile rows, the second short:
//     M1153_N264_* in GemmMma, GemmWgmma, GemmFp8; grouped_tile itself: GemmMmaTileOrder (host).
//   - the K loop: double buffers (step 5: 13 K-tiles at K = 100), a cp.async ring that refills
//     its stages (step 6: K = 200, 520), an mbarrier ring that wraps with both parities (steps
//     7-8: K = 520, 640, 528, 1168): GemmWarpTile, GemmMma, GemmWgmma, GemmFp8.
//   - step 6's two layouts of B (ldmatrix with and without .trans): GemmMma *_TN and *_NN.
//   - the epilogue's slow paths: C not 16-byte aligned and N % 8 != 0 (GemmMmaEpilogue); odd N
//     in steps 7-8 (N = 1, 129, 257 in GemmWgmma, GemmFp8).
//   - writes before the start or past the end of C: the guards of every GPU test.
//   - bfloat16 output truncated instead of rounded to nearest even (off by up to 2^-8, inside
//     any tolerance of random inputs): GemmMmaRounding, GemmWgmmaRounding (integer inputs whose
//     float32 sums are exact, compared bit for bit).
//   - FP8: a scale left out (the scales are 0.375 and 2.5): GemmFp8.
//   - steps 7-8's pipeline: a stage released while its wgmma may still read it (wrong results in
//     GemmWgmma, GemmFp8), a wrong transaction count that would hang (GemmWgmmaTimeout).
//   - steps 7-8's persistent tile loop: a stage count restarted per tile, a tile's last stage
//     never released, tiles skipped or done twice: M1025_N16400_K8 (585 tiles) in GemmWgmma,
//     M1025_N8200_K8 in GemmWgmmaSiluMul.
//   - the gated MLP's epilogue (given; it fails where step 7 does): GemmWgmmaSiluMul.
//   - a missing barrier on the shared tiles (steps 2-6): racecheck, and wrong results in the
//     shapes of many K-tiles; a read past the end of A or B that feeds no output: memcheck.
//   - the swizzle, the descriptor and the stage of steps 6-8: GemmMmaSwizzle,
//     GemmWgmmaDescriptor, GemmFp8Stage (host).
//   - slow but right (bank conflicts, uncoalesced loads, a lost pipeline): no test; the graded
//     benchmark rows, one per step (GRADE_BENCHMARKS in CMakeLists.txt), at 2048^3 to 8192^3.
//   - not tested: flat indices of C at or past 2^31 (M N >= 2^31 needs a C of 4-8 GiB and
//     minutes under memcheck); lab.h's 64-bit sizes keep m * N 64-bit unless a kernel narrows it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "course/buffer.h"
#include "course/device.h"
#include "course/random.h"
#include "course/reference/decoder_layer.h"  // silu_and_mul, for gemm_7_silu_mul
#include "course/reference/gemm.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::expect_guards_untouched;
using course::Guarded;
using d10::fp8_e4m3;
namespace ref = course::reference;

struct Shape {
  std::int64_t M, N, K;
};
void PrintTo(const Shape& s, std::ostream* os) {
  *os << "M=" << s.M << " N=" << s.N << " K=" << s.K;
}
std::string shape_name(const Shape& s) {
  return "M" + std::to_string(s.M) + "_N" + std::to_string(s.N) + "_K" + std::to_string(s.K);
}
std::string shape_string(const Shape& s) {
  return "M = " + std::to_string(s.M) + ", N = " + std::to_string(s.N) +
         ", K = " + std::to_string(s.K);
}

double f32_to_double(float v) { return v; }
double bf16_to_double(bfloat16 v) { return course::to_double(v); }
double fp8_to_double(fp8_e4m3 v) { return static_cast<double>(static_cast<float>(v)); }

// The float64 reference C = A B, computed once per process for each input set and shape: the
// five float32 steps test the same shapes on the same inputs (seeds 1 and 2), steps 6 and 7 with
// B [N, K] too (seeds 3 and 4), and a reference costs M N K multiply-adds on the CPU. `inputs`
// names the input set (the seeds) and must change whenever A or B would.
template <class T, class ToDouble>
const std::vector<double>& reference_once(const std::string& inputs, const std::vector<T>& A,
                                          const std::vector<T>& B, const Shape& s,
                                          ref::BLayout layout, ToDouble to_double) {
  static std::map<std::string, std::vector<double>> cache;
  const std::string key =
      inputs + (layout == ref::BLayout::kRowMajor ? " NN " : " TN ") + shape_name(s);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache
             .emplace(key,
                      ref::gemm(A, B, static_cast<std::size_t>(s.M), static_cast<std::size_t>(s.N),
                                static_cast<std::size_t>(s.K), layout, to_double))
             .first;
  return it->second;
}

// How close. Every product here is exact in float64, so the reference is the exact sum and the
// only errors are the kernel's:
//  - float32 (steps 1-5): each element is a float32 sum of K products. Its rounding error is at
//    most about K u sum_k |a b| (u = 2^-24), in practice ~sqrt(K) u times the partial sums, far
//    below the bound. K u relative to the norm and 4 K u per element (against |ref| + rms(ref),
//    compare.h) leave room for any summation order, while a dropped product (one term of
//    ~1/3 out of a sum of rms ~sqrt(K)/3) is off by ~1/sqrt(K), tens of times more.
constexpr double kUnitRoundoff32 = 0x1.0p-24;
course::Tolerance fp32_tolerance(std::int64_t K) {
  const double k = static_cast<double>(K);
  return {std::max(1e-5, k * kUnitRoundoff32), std::max(1e-4, 4.0 * k * kUnitRoundoff32)};
}
//  - bfloat16 out (steps 6-7): bfloat16 products are exact in float32; the float32 sums add the
//    error above and rounding the result to bfloat16 costs up to 2^-9 of it: the bfloat16
//    defaults (8e-3 in norm, 1.6e-2 per element, dtype.h) plus the float32 term.
course::Tolerance bf16_tolerance(std::int64_t K) {
  const auto base = course::DType<bfloat16>::tolerance;
  const auto f32 = fp32_tolerance(K);
  return {base.norm + f32.norm, base.elem + f32.elem};
}
//  - FP8 (step 8): e4m3 products are exact, but Hopper's FP8 wgmma adds each k32 block with a
//    reduced-precision alignment (about 14 bits kept, as DeepSeek-V3's report measured), then
//    the bfloat16 rounding: 1e-2 in norm and 3e-2 per element (a dropped 128-wide K-stage of a
//    K = 512 sum is off by ~50 %).
constexpr course::Tolerance kFp8Tolerance{1e-2, 3e-2};

// ---------------------------------------------------------------- Steps 1-5: float32

using Fp32Gemm = void (*)(const float*, const float*, float*, std::int64_t, std::int64_t,
                          std::int64_t);

// Runs `gemm` on random A [M, K] and B [K, N] (row-major) and compares C with the float64
// reference; `todo` names where to look.
void expect_fp32_gemm_matches(Fp32Gemm gemm, const Shape& s, const std::string& todo) {
  SCOPED_TRACE(shape_string(s));
  const auto A =
      course::random_uniform<float>(static_cast<std::size_t>(s.M * s.K), course::seed_for(1));
  const auto B =
      course::random_uniform<float>(static_cast<std::size_t>(s.K * s.N), course::seed_for(2));
  DeviceBuffer<float> dA(A), dB(B);
  Guarded<float> C(static_cast<std::size_t>(s.M * s.N), 0);
  gemm(dA.data(), dB.data(), C.data(), s.M, s.N, s.K);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto& want =
      reference_once("float32 seeds 1, 2", A, B, s, ref::BLayout::kRowMajor, f32_to_double);
  course::CompareOptions options;
  options.tolerance = fp32_tolerance(s.K);
  options.cols = s.N;
  options.what = "C [M, N] (" + todo + ")";
  COURSE_EXPECT_MATCH(C.read_back(), want, options);
  expect_guards_untouched(C, "C");
}

// Any shape: 1 x 1 x 1, primes, a single row or column, sizes that are multiples of no tile,
// skinny M, one shape of whole tiles, and one of several blocks along both M and N (520 x 390:
// 5 x 4 block tiles of steps 3-4 with a partial last row and column of blocks; K = 100 is 13
// K-tiles of 8, the last one half full).
const Shape kAnyShapes[] = {{1, 1, 1},       {127, 257, 61},  {1, 300, 129},   {16, 64, 513},
                            {128, 1, 77},    {200, 333, 150}, {129, 130, 131}, {64, 520, 40},
                            {256, 256, 256}, {520, 390, 100}};
// K and N multiples of 4 (the 16-byte loads of steps 4-5); M anything. 520 x 392 is 3 x 4 of
// step 5's 256 x 128 block tiles, the last row of blocks 8 rows high: the only shape whose
// blocks have blockIdx.y > 0 in step 5.
const Shape kVec4Shapes[] = {{1, 4, 4},       {127, 260, 64},  {1, 300, 128},   {16, 64, 516},
                             {128, 4, 76},    {200, 332, 148}, {129, 132, 136}, {64, 520, 40},
                             {256, 256, 256}, {520, 392, 100}};

class Fp32GemmTest : public course::GpuTest, public ::testing::WithParamInterface<Shape> {
 protected:
  virtual Fp32Gemm variant() const = 0;
  virtual std::string todo() const = 0;
  void check(const Shape& s) { expect_fp32_gemm_matches(variant(), s, todo()); }
};

#define D10_FP32_SUITE(Suite, fn, todo_text)                \
  class Suite : public Fp32GemmTest {                       \
    Fp32Gemm variant() const override { return fn; }        \
    std::string todo() const override { return todo_text; } \
  };                                                        \
  TEST_P(Suite, MatchesTheReference) { check(GetParam()); }

D10_FP32_SUITE(GemmNaive, d10::gemm_1_naive, "gemm_1_naive: TODO(d10.1)")
D10_FP32_SUITE(GemmSmem, d10::gemm_2_smem, "gemm_2_smem: TODO(d10.2)")
D10_FP32_SUITE(GemmRegisterTile, d10::gemm_3_register_tile, "gemm_3_register_tile: TODO(d10.3)")
D10_FP32_SUITE(GemmVectorized, d10::gemm_4_vectorized, "gemm_4_vectorized: TODO(d10.4)")
D10_FP32_SUITE(GemmWarpTile, d10::gemm_5_warp_tile, "gemm_5_warp_tile: TODO(d10.5)")
#undef D10_FP32_SUITE

std::string shape_param_name(const ::testing::TestParamInfo<Shape>& info) {
  return shape_name(info.param);
}
INSTANTIATE_TEST_SUITE_P(Shapes, GemmNaive, ::testing::ValuesIn(kAnyShapes), shape_param_name);
INSTANTIATE_TEST_SUITE_P(Shapes, GemmSmem, ::testing::ValuesIn(kAnyShapes), shape_param_name);
INSTANTIATE_TEST_SUITE_P(Shapes, GemmRegisterTile, ::testing::ValuesIn(kAnyShapes),
                         shape_param_name);
INSTANTIATE_TEST_SUITE_P(Shapes, GemmVectorized, ::testing::ValuesIn(kVec4Shapes),
                         shape_param_name);
INSTANTIATE_TEST_SUITE_P(Shapes, GemmWarpTile, ::testing::ValuesIn(kVec4Shapes), shape_param_name);

// ---------------------------------------------------------------- bfloat16 (steps 6-7)

using Bf16Gemm = std::function<void(const bfloat16*, const bfloat16*, bfloat16*, std::int64_t,
                                    std::int64_t, std::int64_t)>;

// Runs `gemm` on random bfloat16 A [M, K] and B (in `layout`), C `c_offset` elements past a
// 16-byte boundary, and compares with the float64 reference.
void expect_bf16_gemm_matches(const Bf16Gemm& gemm, const Shape& s, ref::BLayout layout,
                              const std::string& todo, std::size_t c_offset = 0) {
  SCOPED_TRACE(shape_string(s) +
               (layout == ref::BLayout::kRowMajor ? ", B row-major [K, N]" : ", B [N, K]") +
               (c_offset ? ", C not 16-byte aligned" : ""));
  const auto A =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(s.M * s.K), course::seed_for(3));
  const auto B =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(s.K * s.N), course::seed_for(4));
  DeviceBuffer<bfloat16> dA(A), dB(B);
  Guarded<bfloat16> C(static_cast<std::size_t>(s.M * s.N), c_offset);
  gemm(dA.data(), dB.data(), C.data(), s.M, s.N, s.K);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto& want = reference_once("bfloat16 seeds 3, 4", A, B, s, layout, bf16_to_double);
  course::CompareOptions options;
  options.tolerance = bf16_tolerance(s.K);
  options.cols = s.N;
  options.what = "C [M, N] (" + todo + ")";
  COURSE_EXPECT_MATCH(C.read_back(), want, options);
  expect_guards_untouched(C, "C");
}

// Step 6: K % 8 == 0; N % 8 == 0 too when B is row-major. K = 72, 200, 264 and 520 are not
// multiples of the 64-wide K-tile; 200 (4 K-tiles) and 520 (9) need more K-tiles than the ring
// has stages, so stages are refilled. 300 x 520 is 3 x 3 block tiles of 128 x 256, each partial
// at the end; 1153 x 264 is 10 x 2 tiles: two groups of tile rows, the second of only 2 rows.
const Shape kMmaTnShapes[] = {{1, 1, 8},     {127, 257, 72}, {1, 300, 128},   {16, 520, 264},
                              {128, 8, 64},  {136, 264, 72}, {300, 520, 200}, {257, 129, 520},
                              {64, 256, 32}, {1153, 264, 72}};
const Shape kMmaNnShapes[] = {{1, 8, 8},     {127, 264, 72}, {1, 304, 128},   {16, 520, 264},
                              {128, 8, 64},  {136, 264, 72}, {300, 520, 200}, {257, 136, 520},
                              {64, 256, 32}, {1153, 264, 72}};

struct MmaCase {
  Shape shape;
  d10::BLayout layout;
};
void PrintTo(const MmaCase& c, std::ostream* os) {
  PrintTo(c.shape, os);
  *os << (c.layout == d10::BLayout::kRowMajor ? " B row-major" : " B [N, K]");
}
std::vector<MmaCase> mma_cases() {
  std::vector<MmaCase> cases;
  for (const auto& s : kMmaTnShapes) cases.push_back({s, d10::BLayout::kColMajor});
  for (const auto& s : kMmaNnShapes) cases.push_back({s, d10::BLayout::kRowMajor});
  return cases;
}
ref::BLayout ref_layout(d10::BLayout layout) {
  return layout == d10::BLayout::kRowMajor ? ref::BLayout::kRowMajor : ref::BLayout::kColMajor;
}
Bf16Gemm mma_variant(d10::BLayout layout) {
  return [layout](const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M, std::int64_t N,
                  std::int64_t K) { d10::gemm_6_mma(A, B, C, M, N, K, layout); };
}
const char* kMmaTodo = "gemm_6_mma: TODO(d10.6)";

class GemmMma : public course::GpuTest, public ::testing::WithParamInterface<MmaCase> {};
TEST_P(GemmMma, MatchesTheReference) {
  const MmaCase c = GetParam();
  expect_bf16_gemm_matches(mma_variant(c.layout), c.shape, ref_layout(c.layout), kMmaTodo);
}
INSTANTIATE_TEST_SUITE_P(Shapes, GemmMma, ::testing::ValuesIn(mma_cases()),
                         [](const ::testing::TestParamInfo<MmaCase>& info) {
                           return shape_name(info.param.shape) +
                                  (info.param.layout == d10::BLayout::kRowMajor ? "_NN" : "_TN");
                         });
class GemmMmaEpilogue : public course::GpuTest {};
// C one element past a 16-byte boundary, and N not a multiple of 8: the 16-byte stores of the
// epilogue cannot be used, the element-by-element path must be.
TEST_F(GemmMmaEpilogue, WritesAnUnalignedCElementByElement) {
  expect_bf16_gemm_matches(mma_variant(d10::BLayout::kColMajor), {130, 264, 64},
                           ref::BLayout::kColMajor, kMmaTodo, 1);
  expect_bf16_gemm_matches(mma_variant(d10::BLayout::kColMajor), {130, 261, 64},
                           ref::BLayout::kColMajor, kMmaTodo);
}

// The bfloat16 output must be the float32 sum rounded to nearest even (lab.h). Rounding that
// truncates instead is off by up to 2^-8, half the bfloat16 tolerance of a random test, so it
// needs inputs whose float32 sums are exact: integers in [-16, 16] (exact in bfloat16, products
// up to 256, sums of K = 64 of them below 2^14). The float32 accumulators then hold the exact
// sum in any order of summation, and every element of C must be that sum rounded to nearest
// even, bit for bit. Most sums need 10 or more bits: bfloat16 keeps 8, so most elements round.
void expect_bf16_gemm_rounds_to_nearest(const Bf16Gemm& gemm, ref::BLayout layout,
                                        const std::string& todo) {
  const Shape s{130, 264, 64};
  SCOPED_TRACE(shape_string(s) +
               (layout == ref::BLayout::kRowMajor ? ", B row-major [K, N]" : ", B [N, K]") +
               ", integer inputs");
  const auto to_bf16 = [](const std::vector<int>& v) {
    std::vector<bfloat16> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = course::from_double<bfloat16>(v[i]);
    return out;
  };
  constexpr int kMaxInput = 16;
  const auto A = to_bf16(course::random_uniform<int>(static_cast<std::size_t>(s.M * s.K),
                                                     course::seed_for(7), -kMaxInput, kMaxInput));
  const auto B = to_bf16(course::random_uniform<int>(static_cast<std::size_t>(s.K * s.N),
                                                     course::seed_for(8), -kMaxInput, kMaxInput));
  DeviceBuffer<bfloat16> dA(A), dB(B);
  Guarded<bfloat16> C(static_cast<std::size_t>(s.M * s.N), 0);
  gemm(dA.data(), dB.data(), C.data(), s.M, s.N, s.K);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  auto want = reference_once("bfloat16 integers seeds 7, 8", A, B, s, layout, bf16_to_double);
  for (auto& v : want) v = course::to_double(course::from_double<bfloat16>(v));  // exact sums
  course::CompareOptions options;
  options.tolerance = {0.0, 0.0};
  options.cols = s.N;
  options.what = "C [M, N] of integer inputs (" + todo +
                 "): the float32 sums are exact, so every element must be the sum rounded to "
                 "nearest even (__floats2bfloat162_rn, __float2bfloat16_rn), bit for bit; an "
                 "element one bfloat16 step off was truncated or rounded another way";
  COURSE_EXPECT_MATCH(C.read_back(), want, options);
  expect_guards_untouched(C, "C");
}
class GemmMmaRounding : public course::GpuTest {};
TEST_F(GemmMmaRounding, RoundsTheOutputToNearestEven) {
  for (auto layout : {d10::BLayout::kColMajor, d10::BLayout::kRowMajor})
    expect_bf16_gemm_rounds_to_nearest(mma_variant(layout), ref_layout(layout), kMmaTodo);
}

// ---------------------------------------------------------------- Hopper (steps 7-8)
// Skipped, with the reason, on any GPU but compute capability 9.0 (the kernels are compiled for
// sm_90a); every call is followed by check_mbarrier_timeouts(), so a stage that never completed
// fails with its message instead of hanging.
class HopperTest : public course::GpuTest {
 protected:
  void SetUp() override {
    course::GpuTest::SetUp();
    if (IsSkipped()) return;
    const auto& facts = course::device_facts();
    if (facts.cc_major != 9 || facts.cc_minor != 0)
      GTEST_SKIP() << "needs compute capability 9.0 (Hopper, sm_90a): TMA, wgmma and setmaxnreg; "
                   << facts.name << " is " << facts.cc_major << "." << facts.cc_minor;
  }
};

Bf16Gemm wgmma_variant(int debug_extra_tx_bytes = 0) {
  return [debug_extra_tx_bytes](const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M,
                                std::int64_t N, std::int64_t K) {
    d10::gemm_7_wgmma(A, B, C, M, N, K, debug_extra_tx_bytes);
    d10::check_mbarrier_timeouts();
  };
}
const char* kWgmmaTodo = "gemm_7_wgmma: TODO(d10.7)";

// K % 8 == 0 (TMA's 16-byte rows). K = 72, 200, 264 and 520 end in a partial 64-wide stage
// (zeros from TMA); K = 520 and 640 go round the 4-stage ring more than twice (both parities of
// every barrier); N = 1, 129 and 257 are odd (C written element by element); 1153 x 264 is two
// groups of tile rows, the second of 2.
// 1025 x 16400 is 9 x 65 = 585 tiles: more than four times the SMs of an H100 (132), so the
// persistent blocks take four or five tiles each and the ring of stages runs on from one tile into
// the next. K = 8 is one stage a tile: a block's fifth tile reuses the stage of its first, which
// only the release after that tile's last wgmma frees (a release left out hangs the producer,
// and the bounded wait reports it). Its reference costs the CPU 134 M multiply-adds.
const Shape kWgmmaShapes[] = {{1, 1, 8},       {127, 257, 72}, {1, 300, 128},   {16, 520, 264},
                              {128, 8, 64},    {136, 264, 72}, {300, 520, 200}, {257, 129, 520},
                              {129, 512, 640}, {64, 256, 576}, {1153, 264, 72}, {1025, 16400, 8}};
class GemmWgmma : public HopperTest, public ::testing::WithParamInterface<Shape> {};
TEST_P(GemmWgmma, MatchesTheReference) {
  expect_bf16_gemm_matches(wgmma_variant(), GetParam(), ref::BLayout::kColMajor, kWgmmaTodo);
}
INSTANTIATE_TEST_SUITE_P(Shapes, GemmWgmma, ::testing::ValuesIn(kWgmmaShapes), shape_param_name);
class GemmWgmmaRounding : public HopperTest {};
TEST_F(GemmWgmmaRounding, RoundsTheOutputToNearestEven) {
  expect_bf16_gemm_rounds_to_nearest(wgmma_variant(), ref::BLayout::kColMajor, kWgmmaTodo);
}

// The gated MLP's epilogue (gemm_7_silu_mul, given with step 7): B = [G; U] is [2 N, K] and
// C = silu(A G^T) * (A U^T). The reference is the float64 product with all 2 N rows of B, then
// silu(gate) * up per element; the kernel computes both from float32 sums and rounds once, so
// the bfloat16 tolerance holds. N = 129 is odd (element stores), N = 200 is not a multiple of a
// tile's 128 columns (the last tile's gate box reaches into the up rows, whose columns are
// dropped), 1025 x 8200 is 9 x 65 tiles (a block's fifth tile reuses its first one's stage).
const Shape kSiluMulShapes[] = {
    {1, 1, 8}, {127, 200, 72}, {300, 129, 200}, {257, 384, 520}, {1025, 8200, 8}};
class GemmWgmmaSiluMul : public HopperTest, public ::testing::WithParamInterface<Shape> {};
TEST_P(GemmWgmmaSiluMul, MatchesTheReference) {
  const Shape s = GetParam();
  const Shape both{s.M, 2 * s.N, s.K};  // the GEMM with every row of B
  SCOPED_TRACE(shape_string(s) + ", B = [gate; up] [2N, K]");
  const auto A =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(s.M * s.K), course::seed_for(3));
  const auto B = course::random_uniform<bfloat16>(static_cast<std::size_t>(2 * s.N * s.K),
                                                  course::seed_for(4));
  DeviceBuffer<bfloat16> dA(A), dB(B);
  Guarded<bfloat16> C(static_cast<std::size_t>(s.M * s.N), 0);
  d10::gemm_7_silu_mul(dA.data(), dB.data(), C.data(), s.M, s.N, s.K);
  d10::check_mbarrier_timeouts();
  const auto& gate_up =
      reference_once("bfloat16 seeds 3, 4", A, B, both, ref::BLayout::kColMajor, bf16_to_double);
  const std::vector<double> want =
      ref::silu_and_mul(gate_up, static_cast<std::size_t>(s.M), static_cast<std::size_t>(s.N));
  course::CompareOptions options;
  options.tolerance = bf16_tolerance(s.K);
  options.cols = s.N;
  options.what =
      "C [M, N] = silu(A G^T) * (A U^T) (gemm_7_silu_mul: step 7's kernel with the given "
      "epilogue; if GemmWgmma passes, look at tma_load_b and store_c_tile)";
  COURSE_EXPECT_MATCH(C.read_back(), want, options);
  expect_guards_untouched(C, "C");
}
INSTANTIATE_TEST_SUITE_P(Shapes, GemmWgmmaSiluMul, ::testing::ValuesIn(kSiluMulShapes),
                         shape_param_name);

// The bounded mbarrier wait: a stage that expects more bytes than its boxes deliver never
// completes. The kernel must give up after d10::kMbarrierTimeoutNs and check_mbarrier_timeouts()
// must say so, instead of the test hanging until the runner kills it; the next, correct, call
// must work again.
class GemmWgmmaTimeout : public HopperTest {};
TEST_F(GemmWgmmaTimeout, ReportsAWrongTransactionCountInsteadOfHanging) {
  const Shape s{128, 256, 128};
  const auto A =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(s.M * s.K), course::seed_for(20));
  const auto B =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(s.N * s.K), course::seed_for(21));
  DeviceBuffer<bfloat16> dA(A), dB(B), dC(static_cast<std::size_t>(s.M * s.N));
  dC.poison();
  constexpr int kExtraBytes = 16;
  const course::Thrown t = course::observed_throw<std::runtime_error>(
      [&] { wgmma_variant(kExtraBytes)(dA.data(), dB.data(), dC.data(), s.M, s.N, s.K); },
      "gemm_7_wgmma with a wrong transaction count");
  EXPECT_TRUE(t.threw && t.what.find("never completed") != std::string::npos)
      << "gemm_7_wgmma was told to expect " << kExtraBytes
      << " bytes more than its boxes deliver, so its first stage can never complete; every wait "
         "must use the given mbarrier_wait_bounded and return when it gives up ("
      << kWgmmaTodo << "), so that check_mbarrier_timeouts() reports it; but it "
      << (t.what.empty() ? "reported nothing" : "said: " + t.what);
  expect_bf16_gemm_matches(wgmma_variant(), s, ref::BLayout::kColMajor, kWgmmaTodo);
}

// FP8: inputs drawn uniform in [-1, 1) and rounded to e4m3 on the host; the reference uses the
// rounded values, times the two scales.
void expect_fp8_gemm_matches(const Shape& s) {
  SCOPED_TRACE(shape_string(s));
  const auto to_fp8 = [](const std::vector<float>& v) {
    std::vector<fp8_e4m3> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = fp8_e4m3(v[i]);
    return out;
  };
  const auto A = to_fp8(
      course::random_uniform<float>(static_cast<std::size_t>(s.M * s.K), course::seed_for(5)));
  const auto B = to_fp8(
      course::random_uniform<float>(static_cast<std::size_t>(s.N * s.K), course::seed_for(6)));
  constexpr float kScaleA = 0.375f, kScaleB = 2.5f;  // exact in float32, as is their product
  DeviceBuffer<fp8_e4m3> dA(A), dB(B);
  DeviceBuffer<float> scale_a(std::vector<float>{kScaleA}), scale_b(std::vector<float>{kScaleB});
  Guarded<bfloat16> C(static_cast<std::size_t>(s.M * s.N), 0);
  d10::gemm_8_fp8(dA.data(), dB.data(), C.data(), s.M, s.N, s.K, scale_a.data(), scale_b.data());
  d10::check_mbarrier_timeouts();
  auto want = reference_once("fp8 seeds 5, 6", A, B, s, ref::BLayout::kColMajor, fp8_to_double);
  for (auto& v : want) v *= static_cast<double>(kScaleA) * kScaleB;
  course::CompareOptions options;
  options.tolerance = kFp8Tolerance;
  options.cols = s.N;
  options.what = "C [M, N] (gemm_8_fp8: TODO(d10.8); C = scale_a * scale_b * A B)";
  COURSE_EXPECT_MATCH(C.read_back(), want, options);
  expect_guards_untouched(C, "C");
}
// K % 16 == 0 (16-byte rows of e4m3); K = 80, 144, 208, 272, 528 and 1168 end in a partial
// 128-wide stage; 528 (5 stages) and 1168 (10) go round the 4-stage ring; 1153 x 264 is two
// groups of tile rows, the second of 2.
const Shape kFp8Shapes[] = {{1, 1, 16},       {127, 257, 80},  {1, 300, 128},   {16, 520, 272},
                            {128, 8, 64},     {136, 264, 144}, {300, 520, 208}, {257, 129, 528},
                            {129, 264, 1168}, {1153, 264, 144}};
class GemmFp8 : public HopperTest, public ::testing::WithParamInterface<Shape> {};
TEST_P(GemmFp8, MatchesTheReference) { expect_fp8_gemm_matches(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Shapes, GemmFp8, ::testing::ValuesIn(kFp8Shapes), shape_param_name);

// ---------------------------------------------------------------- host: layouts and descriptors
// No GPU needed: the index and bit arithmetic the kernels of steps 6-8 are built on. What the
// student's functions return reaches the assertions through course::observed (the grader
// replays it in the reference program): one observation per table or struct.

// mma_swizzle_chunk(row, chunk, row_chunks) for rows 0..rows-1 and every chunk, row by row.
std::vector<int> swizzle_table(int row_chunks, int rows) {
  std::vector<int> table;
  for (int row = 0; row < rows; ++row)
    for (int c = 0; c < row_chunks; ++c)
      table.push_back(d10::mma_swizzle_chunk(row, c, row_chunks));
  return course::observed(table, "mma_swizzle_chunk table");
}

// Step 6: the swizzle permutes the chunks of every row, and the 8 rows one ldmatrix phase reads
// (8 consecutive rows from a multiple of 8, the same logical chunk) land in 8 different 16-byte
// bank groups (a 128-byte line of banks holds 8 of them).
TEST(GemmMmaSwizzle, PermutesTheChunksOfEveryRow) {
  ASSERT_NE(course::observed(d10::mma_swizzle_chunk(0, 0, 4), "mma_swizzle_chunk(0, 0, 4)"), -1)
      << "mma_swizzle_chunk returned -1: not written yet (TODO(d10.6a))";
  constexpr int kRows = 64;
  for (int row_chunks : {4, 8, 32}) {
    const auto table = swizzle_table(row_chunks, kRows);
    ASSERT_EQ(table.size(), static_cast<std::size_t>(kRows * row_chunks));
    for (int row = 0; row < kRows; ++row) {
      std::set<int> seen;
      for (int c = 0; c < row_chunks; ++c) {
        const int p = table[row * row_chunks + c];
        ASSERT_TRUE(p >= 0 && p < row_chunks)
            << "row " << row << ", chunk " << c << " of " << row_chunks << " went to chunk " << p
            << ", outside the row";
        seen.insert(p);
      }
      EXPECT_EQ(seen.size(), static_cast<std::size_t>(row_chunks))
          << "row " << row << " of " << row_chunks
          << " chunks: two chunks share a place (the swizzle must be a permutation: XOR the "
             "chunk with bits of the row, lesson §7.3)";
    }
  }
}
TEST(GemmMmaSwizzle, SpreadsEightRowsOverEightBankGroups) {
  constexpr int kRows = 64;
  for (int row_chunks : {4, 32}) {
    const auto table = swizzle_table(row_chunks, kRows);
    ASSERT_EQ(table.size(), static_cast<std::size_t>(kRows * row_chunks));
    ASSERT_NE(table[0], -1) << "mma_swizzle_chunk returned -1: not written yet (TODO(d10.6a))";
    for (int row0 = 0; row0 < kRows; row0 += 8) {
      for (int c = 0; c < row_chunks; ++c) {
        std::set<int> groups;
        for (int r = row0; r < row0 + 8; ++r)
          groups.insert((r * row_chunks + table[r * row_chunks + c]) % 8);
        EXPECT_EQ(groups.size(), 8u)
            << "rows " << row0 << ".." << row0 + 7 << " of " << row_chunks * 16
            << "-byte rows, logical chunk " << c << ": ldmatrix reads these eight 16-byte rows "
            << "together and they fall in only " << groups.size() << " of the 8 bank groups: a "
            << 8 / groups.size() << "-way bank conflict";
      }
    }
  }
}
TEST(GemmMmaSwizzle, LeavesRowZeroInPlace) {
  for (int c = 0; c < 4; ++c)
    EXPECT_EQ(course::observed(d10::mma_swizzle_chunk(0, c, 4), "mma_swizzle_chunk(0, c, 4)"), c);
  EXPECT_EQ(course::observed(d10::mma_swizzle_chunk(1, 0, 32), "mma_swizzle_chunk(1, 0, 32)"), 1)
      << "32-chunk rows: chunk ^ (row & 7)";
  EXPECT_EQ(course::observed(d10::mma_swizzle_chunk(9, 13, 32), "mma_swizzle_chunk(9, 13, 32)"), 12)
      << "32-chunk rows: chunk ^ (row & 7)";
  EXPECT_EQ(course::observed(d10::mma_swizzle_chunk(2, 0, 4), "mma_swizzle_chunk(2, 0, 4)"), 1)
      << "4-chunk rows: chunk ^ ((row / 2) % 4)";
}

// grouped_tile, observed (TileCoord is two integers).
d10::TileCoord observed_tile(std::int64_t block, std::int64_t tiles_m, std::int64_t tiles_n,
                             int group) {
  return course::observed(d10::grouped_tile(block, tiles_m, tiles_n, group), "grouped_tile");
}

// Steps 6-8: the grouped order visits every tile once, and a group's first blocks go down the
// group's rows before moving to the next column.
TEST(GemmMmaTileOrder, VisitsEveryTileOnce) {
  const struct {
    std::int64_t tiles_m, tiles_n;
    int group;
  } grids[] = {{1, 1, 8}, {5, 7, 8}, {16, 8, 8}, {17, 3, 4}, {64, 32, 8}, {9, 1, 8}};
  for (const auto& g : grids) {
    std::set<std::pair<std::int64_t, std::int64_t>> seen;
    for (std::int64_t b = 0; b < g.tiles_m * g.tiles_n; ++b) {
      const auto t = observed_tile(b, g.tiles_m, g.tiles_n, g.group);
      ASSERT_TRUE(t.m >= 0 && t.m < g.tiles_m && t.n >= 0 && t.n < g.tiles_n)
          << "block " << b << " of a " << g.tiles_m << " x " << g.tiles_n << " grid (group "
          << g.group << ") got tile (" << t.m << ", " << t.n << ")"
          << (t.m == -1 ? ": not written yet (TODO(d10.6b))" : ", outside the grid");
      seen.insert({t.m, t.n});
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(g.tiles_m * g.tiles_n))
        << "a " << g.tiles_m << " x " << g.tiles_n << " grid (group " << g.group
        << "): some tiles are computed twice and others never";
  }
}
TEST(GemmMmaTileOrder, GoesDownAGroupBeforeAcross) {
  // 20 x 6 tiles in groups of 8 rows: blocks 0..7 are column 0 of rows 0..7, block 8 starts
  // column 1; the last group has only 4 rows (16..19).
  for (int b = 0; b < 8; ++b) {
    const auto t = observed_tile(b, 20, 6, 8);
    EXPECT_EQ(t.m, b) << "block " << b;
    EXPECT_EQ(t.n, 0) << "block " << b;
  }
  const auto t8 = observed_tile(8, 20, 6, 8);
  EXPECT_EQ(t8.m, 0);
  EXPECT_EQ(t8.n, 1);
  const auto last_group = observed_tile(2 * 8 * 6 + 5, 20, 6, 8);  // 6th block of group 3
  EXPECT_EQ(last_group.m, 17) << "the last group has 4 rows: block 5 of it is row 16 + 5 % 4";
  EXPECT_EQ(last_group.n, 1);
}

// Step 7: the wgmma descriptor of a 128-byte-swizzled K-major tile.
TEST(GemmWgmmaDescriptor, EncodesAddressOffsetsAndSwizzle) {
  const std::uint64_t d =
      course::observed(d10::wgmma_descriptor_sw128(0x12380), "wgmma_descriptor_sw128(0x12380)");
  ASSERT_NE(d, 0u) << "wgmma_descriptor_sw128 returned 0: not written yet (TODO(d10.7a))";
  EXPECT_EQ(d & 0x3FFF, 0x12380u >> 4) << "bits 0-13: the start address >> 4";
  EXPECT_EQ((d >> 16) & 0x3FFF, 1u)
      << "bits 16-29: the leading byte offset >> 4 (unused by a K-major swizzled tile whose "
         "wgmma K fits in one 128-byte row; 16 bytes, encoded 1, by convention)";
  EXPECT_EQ((d >> 32) & 0x3FFF, 1024u >> 4)
      << "bits 32-45: the stride byte offset >> 4: 8 rows of 128 bytes = 1024 bytes between "
         "one group of 8 rows (M or N) and the next";
  EXPECT_EQ((d >> 49) & 0x7, 0u) << "bits 49-51: base offset 0 (tiles start 1024-aligned)";
  EXPECT_EQ(d >> 62, 1u) << "bits 62-63: swizzle mode 1 = 128-byte swizzle";
  const std::uint64_t d32 = course::observed(d10::wgmma_descriptor_sw128(0x12380 + 32),
                                             "wgmma_descriptor_sw128(0x12380 + 32)");
  EXPECT_EQ(d32 - d, 2u)
      << "advancing 32 bytes along K (one k16 step of bfloat16) adds 2 to the start field";
}
TEST(GemmWgmmaDescriptor, StageOfBfloat16IsOneSwizzleRowOfK) {
  const auto s = course::observed(d10::wgmma_stage(2), "wgmma_stage(2)");
  ASSERT_NE(s.k, 0) << "wgmma_stage returned zeros: not written yet (TODO(d10.7b))";
  EXPECT_EQ(s.k, 64) << "64 bfloat16 = 128 bytes: one row of the 128-byte swizzle";
  EXPECT_EQ(s.a_rows, 128) << "the A box is the block tile's 128 rows";
  EXPECT_EQ(s.b_rows, 256) << "the B box is the block tile's 256 columns (rows of B [N, K])";
  EXPECT_EQ(s.stage_bytes, (128 + 256) * 128)
      << "both boxes, whole (TMA counts the zeros it writes past the matrix): 48 KiB";
}
// Step 8: FP8's stage has the same bytes and twice the K.
TEST(GemmFp8Stage, StageOfFp8IsOneSwizzleRowOfK) {
  const auto s = course::observed(d10::wgmma_stage(1), "wgmma_stage(1)");
  ASSERT_NE(s.k, 0) << "wgmma_stage returned zeros: not written yet (TODO(d10.7b))";
  EXPECT_EQ(s.k, 128) << "128 e4m3 values = 128 bytes: one row of the 128-byte swizzle";
  EXPECT_EQ(s.a_rows, 128);
  EXPECT_EQ(s.b_rows, 256);
  EXPECT_EQ(s.stage_bytes, (128 + 256) * 128) << "the same 48 KiB as bfloat16";
}

}  // namespace
