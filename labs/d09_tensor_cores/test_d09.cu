// Day 9 tests. Each suite is one exercise of README.md (a suite named ExerciseSomething counts
// toward Exercise). The layouts (fragment maps, swizzle, wgmma descriptor and shared-memory
// layout) are checked on the host, without a GPU, against the PTX ISA's tables written out here
// independently; a wrong map is named ("transposed", "the two 8-row halves swapped", ...), not
// only reported. The GPU tests run the instructions on inputs whose every value says where it
// came from, so a wrong output is decoded the same way. Outputs are poisoned before every run;
// guard elements after every GEMM output must keep their poison. The Hopper suite (WgmmaTile)
// skips, saying why, on every GPU but compute capability 9.0.
// The grader replays what the tests read of the code under test (course/observe.h): the host
// maps are read once into tables that are observed, the GPU outputs through read_back.
//
// What the code of this day can get wrong, and the test that sees it:
//   WMMA tiles indexed with the wrong leading dimension, f16 vs bf16, partial tiles accepted
//                                      WmmaGemm.*, WmmaGemmSizes.*
//   a fragment map transposed, its 8-row or 8-column halves swapped, registers or halves of a
//   register swapped, group and thread confused      MmaLayout.* (named in words)
//   the mma.sync operands loaded or C stored at the wrong places   MmaSync.Sees*
//   ldmatrix: .trans missing or extra, a matrix's row addresses from the wrong lanes
//                                      Ldmatrix.HandsOutEveryElementAsThePtxIsaSays
//   a swizzle that is not a permutation, or leaves bank conflicts (64- and 128-byte rows)
//                                      SwizzleBanks.*; store and load swizzled differently:
//                                      SwizzleLdmatrix.*
//   the GEMM's partial tiles (M, N, K not multiples of 64; K < 16; K % 8 != 0), padding that is
//   not zero, misaligned rows, K == 0      MmaGemm.MatchesTheReference, MmaGemmEdges.*
//   a tile overwritten while another warp reads it (a missing barrier)   racecheck (the tests
//                                      rarely see it on the H100)
//   r * K (a row offset) in 32 bits        WmmaGemmLargeIndex.*, MmaGemmLargeIndex.*
//   the wgmma descriptor's fields (>> 4, LBO/SBO swapped, swizzle bits), the core-matrix layout
//                                      WgmmaDescriptor.*, WgmmaSmemLayout.*
//   wgmma's accumulators read before wait_group, chained steps reset (scale-d)   WgmmaTile.*
//   no fence.proxy.async between the shared-memory stores and wgmma (a race between proxies
//   that today's GPUs rarely show)      the SASS check wgmma_kernel_fences_the_async_proxy
//   the launchers' promises (WMMA multiples of 16, wgmma N and K)   WmmaGemmSizes.*,
//                                      WgmmaTileLimits.*
//   the instructions themselves (HMMA, LDSM, HGMMA), bank conflicts   the SASS checks; the
//                                      graded benchmark rows of the two GEMMs
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/check.h"
#include "course/device.h"
#include "course/large.h"
#include "course/random.h"
#include "course/reference/gemm.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::ElementType;
using course::expect_guards_untouched;
using course::Guarded;
using course::half;
using d09::FragCoord;
namespace ref = course::reference;

template <class T>
double to_double(T v) {
  return course::to_double(v);
}

std::string coord_text(FragCoord c) {
  return "(" + std::to_string(c.row) + ", " + std::to_string(c.col) + ")";
}

// =============================================================================================
// The float64 check of a float32 GEMM output, with a tolerance derived for 16-bit inputs.
//
// Products of two bfloat16 (8 significant bits each) or two float16 (11 bits) values are exact
// in float32 (at most 22 of its 24 bits), so the only error is the float32 accumulation: each of
// at most K additions rounds by at most one unit in the last place of the running sum, which is
// itself at most S = sum_k |A[m, k] B(k, n)|. Tensor Cores may truncate instead of rounding to
// nearest inside an instruction, so an addition is allowed a full ulp (2^-23), not half:
//   |got - ref| <= K * 2^-23 * S          (kAccumulationUlp = 2^-23)
// a worst case, far above what the hardware does, yet far below a dropped or doubled product
// for the K of the tests (one product is about S / K, above the bound for K below ~2900).
constexpr double kAccumulationUlp = 0x1p-23;

struct GemmShape {
  std::int64_t M, N, K;
};
void PrintTo(const GemmShape& s, std::ostream* os) {
  *os << "M=" << s.M << " N=" << s.N << " K=" << s.K;
}
std::string gemm_shape_name(const ::testing::TestParamInfo<GemmShape>& info) {
  return "M" + std::to_string(info.param.M) + "_N" + std::to_string(info.param.N) + "_K" +
         std::to_string(info.param.K);
}

// got [M, N] against the float64 product of A [M, K] and B stored [N, K]. `tile` is the
// kernel's tile of C (for the message: which partial tile is wrong); `todo` names where to look.
template <class T>
void expect_gemm_close(const std::vector<float>& got, const std::vector<T>& A,
                       const std::vector<T>& B, const GemmShape& s, std::int64_t tile,
                       const std::string& todo) {
  const auto N = static_cast<std::size_t>(s.N), K = static_cast<std::size_t>(s.K);
  std::int64_t unwritten = 0, nonfinite = 0, wrong = 0, first = -1;
  std::int64_t wrong_in_last_rows = 0, wrong_in_last_cols = 0;
  double first_got = 0, first_ref = 0, first_bound = 0;
  const std::int64_t full_rows = s.M / tile * tile, full_cols = s.N / tile * tile;
  for (std::int64_t i = 0; i < s.M * s.N; ++i) {
    const std::size_t m = static_cast<std::size_t>(i) / N, n = static_cast<std::size_t>(i) % N;
    double abs_sum = 0.0;
    const double want =
        ref::gemm_at(A, B, N, K, ref::BLayout::kColMajor, m, n, to_double<T>, &abs_sum);
    const double bound = static_cast<double>(K) * kAccumulationUlp * abs_sum;
    const float v = got[static_cast<std::size_t>(i)];
    bool bad = false;
    if (course::DType<float>::is_poison(v)) {
      ++unwritten;
      bad = true;
    } else if (!std::isfinite(v)) {
      ++nonfinite;
      bad = true;
    } else if (std::fabs(static_cast<double>(v) - want) > bound) {
      ++wrong;
      bad = true;
      if (static_cast<std::int64_t>(m) >= full_rows) ++wrong_in_last_rows;
      if (static_cast<std::int64_t>(n) >= full_cols) ++wrong_in_last_cols;
    }
    if (bad && first < 0) {
      first = i;
      first_got = v;
      first_ref = want;
      first_bound = bound;
    }
  }
  if (first < 0) return;
  std::ostringstream msg;
  msg << "C [M, N] (" << todo << ") is wrong for M = " << s.M << ", N = " << s.N << ", K = " << s.K
      << ": ";
  if (unwritten == s.M * s.N) {
    msg << "never written (every element still holds the poison): the kernel did not store C";
  } else {
    if (unwritten > 0)
      msg << unwritten << " elements never written (a partial tile's stores are skipped?); ";
    if (nonfinite > 0) msg << nonfinite << " elements NaN or infinite; ";
    if (wrong > 0) {
      msg << wrong << " elements outside K * 2^-23 * sum|a b|";
      if (wrong == wrong_in_last_rows)
        msg << ", all in the last, partial tile of rows (M % " << tile << " = " << s.M % tile
            << "): check the rows past M (zeros in shared memory, no stores)";
      else if (wrong == wrong_in_last_cols)
        msg << ", all in the last, partial tile of columns (N % " << tile << " = " << s.N % tile
            << "): check the columns past N";
      else if (s.K % tile != 0)
        msg << " (K % " << tile << " = " << s.K % tile
            << ": check the K tail, whose missing elements must be zeros)";
      msg << "; ";
    }
    const std::int64_t r = first / s.N, c = first % s.N;
    msg << "first bad element [" << r << ", " << c << "] = " << first_got << ", expected "
        << first_ref << " (within " << first_bound << ")";
  }
  ADD_FAILURE() << msg.str() << course::seed_hint();
}

// Runs one GEMM launcher on random inputs of shape s; A and B start `offset` elements past a
// 256-byte boundary (1: not 16-byte aligned), C is guarded.
template <class T>
using GemmFn =
    std::function<void(const T*, const T*, float*, std::int64_t, std::int64_t, std::int64_t)>;
template <class T>
void check_gemm(const GemmFn<T>& gemm, const GemmShape& s, std::int64_t tile,
                const std::string& todo, std::size_t offset = 0) {
  const auto A =
      course::random_uniform<T>(static_cast<std::size_t>(s.M * s.K), course::seed_for(10));
  const auto B =
      course::random_uniform<T>(static_cast<std::size_t>(s.N * s.K), course::seed_for(11));
  Guarded<T> dA(A, offset), dB(B, offset);
  Guarded<float> C(static_cast<std::size_t>(s.M * s.N), offset);
  gemm(dA.data(), dB.data(), C.data(), s.M, s.N, s.K);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  expect_gemm_close(C.read_back(), A, B, s, tile, todo);
  expect_guards_untouched(C, "C");
}

// =============================================================================================
// Exercise 1: WmmaGemm

class WmmaGemm : public course::GpuTest,
                 public ::testing::WithParamInterface<std::tuple<ElementType, GemmShape>> {};

template <class T>
void check_wmma(const GemmShape& s) {
  const GemmFn<T> fn = [](const T* A, const T* B, float* C, std::int64_t M, std::int64_t N,
                          std::int64_t K) {
    if constexpr (std::is_same_v<T, half>)
      d09::wmma_gemm_f16(A, B, C, M, N, K);
    else
      d09::wmma_gemm_bf16(A, B, C, M, N, K);
  };
  check_gemm<T>(fn, s, d09::kWmmaTile, "wmma_gemm_kernel: TODO(d09.1)");
}

// One tile, a row and a column of tiles, a long K, and several tiles each way (every warp of a
// block busy, and a last block with idle warps).
const GemmShape kWmmaShapes[] = {{16, 16, 16},   {16, 80, 32},   {48, 16, 272},
                                 {112, 208, 96}, {80, 48, 1024}, {256, 144, 160}};

TEST_P(WmmaGemm, MatchesTheReference) {
  const auto [type, shape] = GetParam();
  if (type == ElementType::kFloat16)
    check_wmma<half>(shape);
  else
    check_wmma<bfloat16>(shape);
}
INSTANTIATE_TEST_SUITE_P(
    Shapes, WmmaGemm,
    ::testing::Combine(::testing::Values(ElementType::kFloat16, ElementType::kBFloat16),
                       ::testing::ValuesIn(kWmmaShapes)),
    [](const ::testing::TestParamInfo<std::tuple<ElementType, GemmShape>>& info) {
      const GemmShape s = std::get<1>(info.param);
      return course::dtype_name(std::get<0>(info.param)) + "_M" + std::to_string(s.M) + "_N" +
             std::to_string(s.N) + "_K" + std::to_string(s.K);
    });

class WmmaGemmSizes : public course::GpuTest {};
// The launcher refuses partial tiles with a message; a whole tile after that must be computed.
TEST_F(WmmaGemmSizes, RejectsPartialTilesAndComputesWholeOnes) {
  DeviceBuffer<bfloat16> A(32 * 32), B(32 * 32);
  DeviceBuffer<float> C(32 * 32);
  const course::Thrown t = course::observed_throw<course::InvalidArgument>(
      [&] { d09::wmma_gemm_bf16(A.data(), B.data(), C.data(), 17, 16, 16); }, "M = 17");
  const std::string message = t.threw || t.threw_other ? t.what : "";
  EXPECT_TRUE(t.threw && message.find("multiples of 16") != std::string::npos)
      << "M = 17 is not a multiple of 16: the launcher must refuse it with a message that says "
         "so; it said: '"
      << message << "'";
  check_wmma<bfloat16>({32, 16, 48});
}

// =============================================================================================
// Exercise 2: MmaLayout (host). The PTX ISA's layouts for mma.m16n8k16 with .f16/.bf16 inputs
// and .f32 accumulators, written as the ISA's tables read: group g = lane >> 2, thread in the
// group t = lane % 4.

FragCoord ptx_a(int lane, int i) {  // a0..a7
  const int g = lane >> 2, t = lane % 4;
  const bool upper_rows = (i == 2 || i == 3 || i == 6 || i == 7);
  return {upper_rows ? g + 8 : g, 2 * t + (i & 1) + (i >= 4 ? 8 : 0)};
}
FragCoord ptx_b(int lane, int i) {  // b0..b3: (row = k, col = n)
  const int g = lane >> 2, t = lane % 4;
  return {2 * t + (i & 1) + (i >= 2 ? 8 : 0), g};
}
FragCoord ptx_c(int lane, int i) {  // c0..c3
  const int g = lane >> 2, t = lane % 4;
  return {i < 2 ? g : g + 8, 2 * t + (i & 1)};
}

using CoordFn = std::function<FragCoord(int, int)>;

// What is wrong with `map` compared with `want`, in words; empty when they agree everywhere.
// The map is read once into a table, which the grader observes (course/observe.h): the
// diagnosis then works on what the code under test said, in the grader's replay too.
std::string diagnose_fragment(const CoordFn& map, const CoordFn& want, int elements, int rows,
                              int cols, const std::string& name, const std::string& todo) {
  std::vector<FragCoord> table(static_cast<std::size_t>(32 * elements));
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < elements; ++i) table[lane * elements + i] = map(lane, i);
  table = course::observed(std::move(table), "fragment map");
  const auto got = [&](int lane, int i) { return table[lane * elements + i]; };
  const auto all = [&](const std::function<bool(int, int)>& same) {
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < elements; ++i)
        if (!same(lane, i)) return false;
    return true;
  };
  const auto eq = [](FragCoord a, FragCoord b) { return a.row == b.row && a.col == b.col; };
  if (all([&](int l, int i) { return eq(got(l, i), want(l, i)); })) return "";
  const std::string head = name + " (" + todo + "): ";
  if (all([&](int l, int i) { return got(l, i).row == -1 && got(l, i).col == -1; }))
    return head + "returns {-1, -1}: not written yet";
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < elements; ++i) {
      const FragCoord c = got(lane, i);
      if (c.row < 0 || c.row >= rows || c.col < 0 || c.col >= cols)
        return head + "lane " + std::to_string(lane) + " element " + std::to_string(i) +
               " maps to " + coord_text(c) + ", outside the " + std::to_string(rows) + "x" +
               std::to_string(cols) + " tile";
    }
  if (all([&](int l, int i) {
        const FragCoord w = want(l, i);
        return eq(got(l, i), {w.col, w.row});
      }))
    return head +
           "rows and columns swapped (transposed): the row comes from the group (lane / 4)"
           " and the column from the thread in the group (lane % 4), not the other way";
  if (all([&](int l, int i) {
        const FragCoord w = want(l, i);
        return eq(got(l, i), {w.row ^ 8, w.col});
      }))
    return head + "off by 8 rows (the two 8-row halves swapped): the first elements of a lane " +
           "are in rows 0-7, the next ones 8 rows further down";
  if (all([&](int l, int i) {
        const FragCoord w = want(l, i);
        return eq(got(l, i), {w.row, w.col ^ 8});
      }))
    return head + "off by 8 columns (the two 8-column halves swapped)";
  if (elements == 8 && all([&](int l, int i) {
        const int swapped = (i >= 2 && i < 6) ? (i ^ 6) : i;  // a2 a3 <-> a4 a5
        return eq(got(l, i), want(l, swapped));
      }))
    return head + "registers a1/a2 swapped (elements a2 a3 <-> a4 a5): the second register holds" +
           " rows g + 8, the third columns 8 further on";
  if (all([&](int l, int i) { return eq(got(l, i), want(l, i ^ 1)); }))
    return head + "the two 16-bit halves of each register swapped: the element with the lower " +
           "column (or row of B) is the even one, in the low half";
  if (all([&](int l, int i) { return eq(got(l, i), want((l % 8) * 4 + l / 8, i)); }))
    return head + "group and thread in the group confused: the group is lane / 4 (lane >> 2), " +
           "the thread in the group lane % 4";
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < elements; ++i)
      if (!eq(got(lane, i), want(lane, i)))
        return head + "lane " + std::to_string(lane) + " element " + std::to_string(i) +
               " maps to " + coord_text(got(lane, i)) + ", expected " + coord_text(want(lane, i)) +
               " (lesson §4.2 draws the whole table)";
  return "";
}

TEST(MmaLayout, AFragmentMatchesThePtxLayout) {
  const std::string why = diagnose_fragment(d09::mma_a_coord, ptx_a, 8, 16, 16,
                                            "mma_a_coord (A 16x16)", "a_fragment: TODO(d09.2)");
  EXPECT_TRUE(why.empty()) << why;
}
TEST(MmaLayout, BFragmentMatchesThePtxLayout) {
  const std::string why = diagnose_fragment(d09::mma_b_coord, ptx_b, 4, 16, 8,
                                            "mma_b_coord (B 16x8)", "b_fragment: TODO(d09.2)");
  EXPECT_TRUE(why.empty()) << why;
}
TEST(MmaLayout, CFragmentMatchesThePtxLayout) {
  const std::string why = diagnose_fragment(d09::mma_c_coord, ptx_c, 4, 16, 8,
                                            "mma_c_coord (C 16x8)", "c_fragment: TODO(d09.2)");
  EXPECT_TRUE(why.empty()) << why;
}
// The diagnosis itself, on maps that are wrong on purpose: each mistake must be named.
TEST(MmaLayout, NamesEachKindOfMistake) {
  ASSERT_TRUE(diagnose_fragment(d09::mma_a_coord, ptx_a, 8, 16, 16, "A", "").empty())
      << "fix AFragmentMatchesThePtxLayout first";
  const auto says = [](const CoordFn& f, const std::string& words) {
    const std::string why = diagnose_fragment(f, ptx_a, 8, 16, 16, "A", "");
    EXPECT_NE(why.find(words), std::string::npos) << "expected '" << words << "', got: " << why;
  };
  says([](int l, int i) { return FragCoord{ptx_a(l, i).col, ptx_a(l, i).row}; }, "transposed");
  says(
      [](int l, int i) {
        return FragCoord{ptx_a(l, i).row ^ 8, ptx_a(l, i).col};
      },
      "off by 8 rows");
  says([](int l, int i) { return ptx_a(l, (i >= 2 && i < 6) ? (i ^ 6) : i); }, "a1/a2 swapped");
  says([](int l, int i) { return ptx_a(l, i ^ 1); }, "halves of each register swapped");
  says([](int l, int i) { return ptx_a((l % 8) * 4 + l / 8, i); }, "group and thread");
}

// =============================================================================================
// Exercise 3: MmaSync (one mma.sync.m16n8k16 on the GPU)

// Runs the one-tile launcher on A [16, 16] and B stored [8, 16] (n, k), given as float64 values
// exact in T; returns C [16, 8] as float64 (NaN where never written).
template <class T>
std::vector<double> run_mma(const std::vector<double>& A, const std::vector<double>& B) {
  std::vector<T> a(A.size()), b(B.size());
  for (std::size_t i = 0; i < A.size(); ++i) a[i] = course::from_double<T>(A[i]);
  for (std::size_t i = 0; i < B.size(); ++i) b[i] = course::from_double<T>(B[i]);
  DeviceBuffer<T> dA(a), dB(b);
  DeviceBuffer<float> dC(d09::kMmaM * d09::kMmaN);
  dC.poison();
  if constexpr (std::is_same_v<T, half>)
    d09::mma_16x8x16_f16(dA.data(), dB.data(), dC.data());
  else
    d09::mma_16x8x16_bf16(dA.data(), dB.data(), dC.data());
  const auto c = dC.read_back();
  std::vector<double> out(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) out[i] = c[i];
  return out;
}

// What the warp computed (`seen`, rows x cols) against `want`, in words; empty when equal.
std::string diagnose_matrix(const std::vector<double>& seen, const std::vector<double>& want,
                            int rows, int cols, const std::string& what) {
  const auto all = [&](const std::function<int(int, int)>& src) {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        if (seen[r * cols + c] != want[src(r, c)]) return false;
    return true;
  };
  if (all([&](int r, int c) { return r * cols + c; })) return "";
  int never = 0;
  for (double v : seen) never += std::isnan(v) ? 1 : 0;
  if (never == rows * cols) return what + ": C was never written";
  if (rows == cols && all([&](int r, int c) { return c * cols + r; }))
    return what + ": transposed (rows and columns swapped)";
  if (rows == 16 && all([&](int r, int c) { return (r ^ 8) * cols + c; }))
    return what + ": off by 8 rows (the two 8-row halves swapped)";
  if (cols == 16 && all([&](int r, int c) { return r * cols + (c ^ 8); }))
    return what + ": off by 8 columns (the two 8-column halves swapped)";
  if (all([&](int r, int c) { return r * cols + (c ^ 1); }))
    return what + ": neighbouring columns swapped (the two halves of a register, or c0/c1)";
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      if (seen[r * cols + c] != want[r * cols + c])
        return what + ": element [" + std::to_string(r) + ", " + std::to_string(c) + "] is " +
               std::to_string(seen[r * cols + c]) + ", expected " +
               std::to_string(want[r * cols + c]) + (never ? " (some of C never written)" : "");
  return "";
}

class MmaSync : public course::GpuTest, public ::testing::WithParamInterface<ElementType> {};

template <class T>
void mma_sees_a() {
  // A[r, k] = 16 r + k (exact in both 16-bit types); B selects 8 columns of A at a time:
  // B(k, n) = 1 where k = n + 8 h, so C[r, n] = A[r, n + 8 h]. The two runs show A as the
  // Tensor Core received it.
  std::vector<double> A(256), seen(256, 0.0);
  for (int i = 0; i < 256; ++i) A[i] = i;
  for (int h = 0; h < 2; ++h) {
    std::vector<double> B(8 * 16, 0.0);  // [n, k]
    for (int n = 0; n < 8; ++n) B[n * 16 + n + 8 * h] = 1.0;
    const auto C = run_mma<T>(A, B);
    for (int r = 0; r < 16; ++r)
      for (int n = 0; n < 8; ++n) seen[r * 16 + n + 8 * h] = C[r * 8 + n];
  }
  const std::string why = diagnose_matrix(
      seen, A, 16, 16,
      "the A the mma saw (mma_16x8x16 and its kernel: TODO(d09.3), with the maps of TODO(d09.2))");
  EXPECT_TRUE(why.empty()) << why;
}

template <class T>
void mma_sees_b() {
  // A = the 16x16 identity, B(k, n) = 8 k + n: C = B, so C shows B as the Tensor Core received
  // it (and where the lanes stored their c0..c3).
  std::vector<double> A(256, 0.0), B(8 * 16), want(16 * 8);
  for (int r = 0; r < 16; ++r) A[r * 16 + r] = 1.0;
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n) {
      B[n * 16 + k] = 8 * k + n;
      want[k * 8 + n] = 8 * k + n;
    }
  const std::string why = diagnose_matrix(
      run_mma<T>(A, B), want, 16, 8,
      "C = I * B, i.e. B as the mma saw it and C as the lanes stored it (TODO(d09.3))");
  EXPECT_TRUE(why.empty()) << why;
}

template <class T>
void mma_random() {
  const auto a = course::random_uniform<T>(256, course::seed_for(30));
  const auto b = course::random_uniform<T>(128, course::seed_for(31));
  std::vector<double> A(256), B(128);
  for (int i = 0; i < 256; ++i) A[i] = to_double(a[i]);
  for (int i = 0; i < 128; ++i) B[i] = to_double(b[i]);
  const auto C = run_mma<T>(A, B);
  std::vector<float> got(C.begin(), C.end());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::isnan(C[i])) got[i] = course::DType<float>::poison();
  expect_gemm_close(got, a, b, {16, 8, 16}, 16, "mma_16x8x16_kernel: TODO(d09.3)");
}

TEST_P(MmaSync, SeesEveryElementOfAWhereItIs) {
  if (GetParam() == ElementType::kFloat16)
    mma_sees_a<half>();
  else
    mma_sees_a<bfloat16>();
}
TEST_P(MmaSync, SeesEveryElementOfBAndStoresCWhereItBelongs) {
  if (GetParam() == ElementType::kFloat16)
    mma_sees_b<half>();
  else
    mma_sees_b<bfloat16>();
}
TEST_P(MmaSync, MatchesTheReferenceOnRandomTiles) {
  if (GetParam() == ElementType::kFloat16)
    mma_random<half>();
  else
    mma_random<bfloat16>();
}
INSTANTIATE_TEST_SUITE_P(DTypes, MmaSync,
                         ::testing::Values(ElementType::kFloat16, ElementType::kBFloat16),
                         course::dtype_param_name);

// =============================================================================================
// Exercise 4: Ldmatrix. Element (matrix j, row r, column c) holds the value 64 j + 8 r + c, so
// every 16-bit half of every register says where it came from.

std::string element_name(std::uint32_t v) {
  return "(matrix " + std::to_string(v / 64) + ", row " + std::to_string(v / 8 % 8) + ", column " +
         std::to_string(v % 8) + ")";
}

// The PTX ISA's distribution: lane l, register j holds matrix j's row l / 4, columns 2 (l % 4)
// and 2 (l % 4) + 1 (low half first); with .trans, column l / 4, rows 2 (l % 4) and + 1.
std::uint32_t ldmatrix_expected(int lane, int j, bool trans) {
  const int fixed = lane / 4, pair = 2 * (lane % 4);
  const auto value = [&](int r, int c) { return static_cast<std::uint32_t>(64 * j + 8 * r + c); };
  const std::uint32_t lo = trans ? value(pair, fixed) : value(fixed, pair);
  const std::uint32_t hi = trans ? value(pair + 1, fixed) : value(fixed, pair + 1);
  return lo | (hi << 16);
}

struct LdmatrixCase {
  int count;
  bool trans;
};
class Ldmatrix : public course::GpuTest, public ::testing::WithParamInterface<LdmatrixCase> {};

TEST_P(Ldmatrix, HandsOutEveryElementAsThePtxIsaSays) {
  const auto [count, trans] = GetParam();
  std::vector<std::uint16_t> src(64 * count);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(i);
  DeviceBuffer<std::uint16_t> dsrc(src);
  DeviceBuffer<std::uint32_t> out(32 * count);
  out.poison();
  d09::ldmatrix_dump(dsrc.data(), out.data(), count, trans);
  const auto got = out.read_back();
  const std::string name = std::string("ldmatrix .x") + std::to_string(count) +
                           (trans ? ".trans" : "") + " (TODO(d09.4))";
  const auto matches = [&](const std::function<std::uint32_t(int, int)>& want) {
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < count; ++j)
        if (got[l * count + j] != want(l, j)) return false;
    return true;
  };
  if (matches([&](int l, int j) { return ldmatrix_expected(l, j, trans); })) return;
  int never = 0;
  for (auto v : got) never += course::DType<std::uint32_t>::is_poison(v) ? 1 : 0;
  if (never == 32 * count) FAIL() << name << ": out was never written";
  if (never > 0)
    FAIL() << name << ": " << never << " registers never written (out[lane * count + j])";
  if (matches([&](int l, int j) { return ldmatrix_expected(l, j, !trans); }))
    FAIL() << name << ": every matrix arrived transposed: "
           << (trans ? ".trans is missing" : ".trans is there but must not be");
  if (matches([&](int l, int j) {
        const std::uint32_t w = ldmatrix_expected(l, j, trans);
        return (w >> 16) | (w << 16);
      }))
    FAIL() << name << ": the two halves of every register swapped";
  for (int j = 0; j < count; ++j)
    for (int k = 0; k < count; ++k)
      if (k != j && matches([&](int l, int jj) {
            return jj == j ? ldmatrix_expected(l, k, trans) : got[l * count + jj];
          }))
        FAIL() << name << ": register " << j << " holds matrix " << k
               << ": lanes 8j .. 8j + 7 must give the row addresses of matrix j";
  for (int l = 0; l < 32; ++l)
    for (int j = 0; j < count; ++j) {
      const std::uint32_t g = got[l * count + j], w = ldmatrix_expected(l, j, trans);
      if (g != w)
        FAIL() << name << ": lane " << l << " register " << j << " holds "
               << element_name(g & 0xffff) << " | " << element_name(g >> 16) << ", expected "
               << element_name(w & 0xffff) << " | " << element_name(w >> 16)
               << " (low half | high half; lesson §5 draws the distribution)";
    }
}
INSTANTIATE_TEST_SUITE_P(Shapes, Ldmatrix,
                         ::testing::Values(LdmatrixCase{1, false}, LdmatrixCase{2, false},
                                           LdmatrixCase{4, false}, LdmatrixCase{1, true},
                                           LdmatrixCase{2, true}, LdmatrixCase{4, true}),
                         [](const ::testing::TestParamInfo<LdmatrixCase>& info) {
                           return "x" + std::to_string(info.param.count) +
                                  (info.param.trans ? "_trans" : "");
                         });

// =============================================================================================
// Exercise 5: Swizzle. The host model of shared-memory banks: 32 banks of 4 bytes, 128 bytes
// per cycle; a 16-byte access covers 4 banks, i.e. one of 8 "bank groups", (address / 16) % 8.
// One phase of ldmatrix is 8 rows of 16 bytes: it takes as many cycles (wavefronts) as the most
// distinct 16-byte chunks that fall in one group. 1 is conflict-free.

int phase_wavefronts(const std::array<std::uint32_t, 8>& byte_addresses) {
  std::array<std::set<std::uint32_t>, 8> chunks_in_group;
  for (std::uint32_t a : byte_addresses) chunks_in_group[(a / 16) % 8].insert(a / 16);
  std::size_t most = 0;
  for (const auto& g : chunks_in_group) most = std::max(most, g.size());
  return static_cast<int>(most);
}

// The worst phase over every 8-row phase (rows 8p .. 8p + 7, as ldmatrix reads a tile) of a
// 64-row tile and every logical chunk, with chunk -> physical chunk `place`.
int worst_phase(int row_bytes, const std::function<int(int, int)>& place) {
  int worst = 0;
  for (int row0 = 0; row0 < 64; row0 += 8)
    for (int chunk = 0; chunk < row_bytes / 16; ++chunk) {
      std::array<std::uint32_t, 8> addresses{};
      for (int r = 0; r < 8; ++r)
        addresses[r] =
            static_cast<std::uint32_t>((row0 + r) * row_bytes + 16 * place(row0 + r, chunk));
      worst = std::max(worst, phase_wavefronts(addresses));
    }
  return worst;
}

TEST(SwizzleBanks, PermutesTheChunksOfEveryRow) {
  for (int row_bytes : {64, 128}) {
    const int chunks = row_bytes / 16;
    ASSERT_NE(course::observed(d09::swizzle_chunk(0, 0, row_bytes), "swizzle_chunk"), -1)
        << "swizzle_chunk returned -1: not written yet (chunk_xor: TODO(d09.5a))";
    for (int row = 0; row < 64; ++row) {
      std::set<int> seen;
      for (int c = 0; c < chunks; ++c) {
        const int p = course::observed(d09::swizzle_chunk(row, c, row_bytes), "swizzle_chunk");
        ASSERT_TRUE(p >= 0 && p < chunks)
            << "row_bytes = " << row_bytes << ": chunk " << c << " of row " << row << " goes to "
            << p << ", outside the row's " << chunks << " chunks (TODO(d09.5a))";
        seen.insert(p);
      }
      ASSERT_EQ(seen.size(), static_cast<std::size_t>(chunks))
          << "row_bytes = " << row_bytes << ", row " << row
          << ": two chunks go to the same place; a swizzle must permute the chunks of a row "
             "(an XOR with a value below the chunk count does)";
    }
  }
}

TEST(SwizzleBanks, MakesEveryLdmatrixPhaseConflictFree) {
  // The model first: without a swizzle, rows of 128 bytes put the same chunk of 8 rows in one
  // bank group (8 wavefronts), rows of 64 bytes pair rows r, r + 2, r + 4, r + 6 (4).
  ASSERT_EQ(worst_phase(128, [](int, int c) { return c; }), 8);
  ASSERT_EQ(worst_phase(64, [](int, int c) { return c; }), 4);
  for (int row_bytes : {64, 128}) {
    ASSERT_NE(course::observed(d09::swizzle_chunk(0, 0, row_bytes), "swizzle_chunk"), -1)
        << "swizzle_chunk returned -1: not written yet (chunk_xor: TODO(d09.5a))";
    const int worst = worst_phase(row_bytes, [&](int r, int c) {
      return course::observed(d09::swizzle_chunk(r, c, row_bytes), "swizzle_chunk");
    });
    EXPECT_EQ(worst, 1) << "rows of " << row_bytes << " bytes: some ldmatrix phase (8 rows at "
                        << "one logical chunk) still takes " << worst
                        << " wavefronts: the 8 rows must land in 8 different 16-byte bank groups"
                        << (row_bytes == 64 ? " (two 64-byte rows share one 128-byte line: XOR "
                                              "with row / 2, not row)"
                                            : " (XOR the chunk with row % 8)");
  }
}

class SwizzleLdmatrix : public course::GpuTest, public ::testing::WithParamInterface<int> {};

// The tile [16, row_bytes / 2] holds value 64 r + c at (r, c): after the swizzled store and the
// swizzled ldmatrix.x4, block b's lane l must hold the A fragment of columns 16 b ..: register
// j = (row g + 8 (j % 2), columns 16 b + 2 t + 8 (j / 2) and + 1).
TEST_P(SwizzleLdmatrix, ReadsBackTheTileAsAFragments) {
  const int row_bytes = GetParam();
  const int cols = row_bytes / 2, blocks = cols / 16;
  std::vector<std::uint16_t> src(16 * cols);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < cols; ++c) src[r * cols + c] = static_cast<std::uint16_t>(64 * r + c);
  DeviceBuffer<std::uint16_t> dsrc(src);
  DeviceBuffer<std::uint32_t> out(32 * 4 * blocks);
  out.poison();
  d09::ldmatrix_swizzled_tile(dsrc.data(), out.data(), row_bytes);
  const auto got = out.read_back();
  const auto where = [](std::uint32_t v) {
    return "(" + std::to_string(v / 64) + ", " + std::to_string(v % 64) + ")";
  };
  for (int b = 0; b < blocks; ++b)
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < 4; ++j) {
        const int g = l / 4, t = l % 4;
        const int r = g + 8 * (j % 2), c = 16 * b + 2 * t + 8 * (j / 2);
        const std::uint32_t want = static_cast<std::uint32_t>(64 * r + c) |
                                   (static_cast<std::uint32_t>(64 * r + c + 1) << 16);
        const std::uint32_t v = got[(32 * b + l) * 4 + j];
        if (course::DType<std::uint32_t>::is_poison(v))
          FAIL() << "rows of " << row_bytes << " bytes: out was never written for block " << b
                 << ", lane " << l << ", register " << j << " (TODO(d09.5b))";
        if (v != want)
          FAIL() << "rows of " << row_bytes << " bytes, block " << b << ", lane " << l
                 << ", register " << j << ": holds (row, column) " << where(v & 0xffff) << " | "
                 << where(v >> 16) << ", expected " << where(want & 0xffff) << " | "
                 << where(want >> 16)
                 << ": the store and the ldmatrix addresses must use the same chunk_xor, and "
                    "lane l gives row l % 16 at logical chunk 2 b + l / 16 (TODO(d09.5b))";
      }
}
INSTANTIATE_TEST_SUITE_P(RowBytes, SwizzleLdmatrix, ::testing::Values(64, 128),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "rows" + std::to_string(info.param) + "B";
                         });

// =============================================================================================
// Exercise 6: MmaGemm

constexpr std::int64_t kGemmTile = 64;  // the kernel's block tile (for the messages)
const GemmFn<bfloat16> kGemmMma = d09::gemm_mma_bf16;
const std::string kGemmTodo = "gemm_mma_kernel: TODO(d09.6)";

class MmaGemm : public course::GpuTest, public ::testing::WithParamInterface<GemmShape> {};

// 1 and primes; K = 1, below one k16 step, not a multiple of 8 (the element-wise path), a
// multiple of 8 but not of the 64 tile (the vector path with a zero-padded tail), whole tiles;
// M and N below, at and past the 64 tile.
const GemmShape kGemmShapes[] = {{1, 1, 1},      {1, 1, 70},      {3, 5, 7},      {17, 9, 33},
                                 {64, 64, 64},   {65, 63, 129},   {31, 257, 16},  {130, 70, 8},
                                 {127, 200, 64}, {200, 136, 256}, {37, 101, 1000}};

TEST_P(MmaGemm, MatchesTheReference) {
  check_gemm<bfloat16>(kGemmMma, GetParam(), kGemmTile, kGemmTodo);
}
INSTANTIATE_TEST_SUITE_P(Shapes, MmaGemm, ::testing::ValuesIn(kGemmShapes), gemm_shape_name);

class MmaGemmEdges : public course::GpuTest {};
// A, B and C one element past a 16-byte boundary: rows no longer start on 16-byte boundaries,
// so the kernel must take its element-by-element path even when K % 8 == 0.
TEST_F(MmaGemmEdges, HandlesPointersNotAlignedTo16Bytes) {
  check_gemm<bfloat16>(kGemmMma, {67, 45, 136}, kGemmTile, kGemmTodo, 1);
}
// K = 0: C = 0 (an empty sum); paired with a case that has work.
TEST_F(MmaGemmEdges, WritesZerosForKZeroAndComputesK1) {
  DeviceBuffer<bfloat16> A(8), B(8);
  Guarded<float> C(5 * 7, 0);
  d09::gemm_mma_bf16(A.data(), B.data(), C.data(), 5, 7, 0);
  for (float v : C.read_back()) ASSERT_EQ(v, 0.0f) << "K = 0: every element of C must be 0";
  check_gemm<bfloat16>(kGemmMma, {5, 7, 1}, kGemmTile, kGemmTodo);
}

// =============================================================================================
// 64-bit indices: A [M, K] of 2^31 + 2^24 + 2^18 bfloat16 (4 GiB; M = 132112, a multiple of 16,
// K = 16384), so that the rows from 131072 on start past 2^31, where a row offset r * K computed
// in 32 bits wraps. A is filled on the GPU with a pattern the host recomputes (course/large.h);
// the rows of C holding A's elements near 0, 2^31 and the end (and a few at random) are checked.
// Alone on the GPU (lab.json's serial_suites).
constexpr std::int64_t kLargeM = 132112, kLargeK = 16384, kLargeN = 16;
constexpr std::size_t kLargeGemmBytes =
    static_cast<std::size_t>(kLargeM * kLargeK) * sizeof(bfloat16) + (64u << 20);

void expect_gemm_large(const GemmFn<bfloat16>& gemm, const std::string& todo) {
  const std::int64_t n = kLargeM * kLargeK;
  const course::Pattern p{course::seed_for(40), -1.0, 1.0};
  const auto B = course::random_uniform<bfloat16>(kLargeN * kLargeK, course::seed_for(41));
  DeviceBuffer<bfloat16> A(static_cast<std::size_t>(n)), dB(B);
  DeviceBuffer<float> C(static_cast<std::size_t>(kLargeM * kLargeN));
  course::fill_pattern(A.data(), n, p);
  course::poison_on_device(C.data(), kLargeM * kLargeN);
  gemm(A.data(), dB.data(), C.data(), kLargeM, kLargeN, kLargeK);
  const auto rows = course::large_sample_rows(kLargeM, kLargeK, course::seed_for(42));
  std::vector<std::int64_t> at;
  std::vector<double> want, bound;
  std::vector<double> a_row(static_cast<std::size_t>(kLargeK));
  for (const std::int64_t m : rows) {
    for (std::int64_t k = 0; k < kLargeK; ++k)
      a_row[static_cast<std::size_t>(k)] =
          course::pattern_double_value<bfloat16>(p, m * kLargeK + k);
    for (std::int64_t c = 0; c < kLargeN; ++c) {
      double dot = 0.0, abs_sum = 0.0;
      for (std::int64_t k = 0; k < kLargeK; ++k) {
        const double prod = a_row[static_cast<std::size_t>(k)] *
                            course::to_double(B[static_cast<std::size_t>(c * kLargeK + k)]);
        dot += prod;
        abs_sum += std::fabs(prod);
      }
      at.push_back(m * kLargeN + c);
      want.push_back(dot);
      bound.push_back(static_cast<double>(kLargeK) * kAccumulationUlp * abs_sum);
    }
  }
  const auto got = course::gather(C.data(), kLargeM * kLargeN, at);
  for (std::size_t i = 0; i < at.size(); ++i) {
    const float v = got[i];
    if (course::DType<float>::is_poison(v) || !(std::fabs(v - want[i]) <= bound[i])) {
      const std::int64_t m = at[i] / kLargeN;
      ADD_FAILURE() << "C [" << kLargeM << ", " << kLargeN << "] (" << todo << "): element [" << m
                    << ", " << at[i] % kLargeN << "] is "
                    << (course::DType<float>::is_poison(v) ? std::string("never written")
                                                           : std::to_string(v))
                    << ", expected " << want[i] << " (within " << bound[i] << "). Row " << m
                    << " of A starts at element " << course::describe_index(m * kLargeK)
                    << (m * kLargeK >= course::kTwoTo31
                            ? ", past 2^31: compute the row offset r * K in 64 bits"
                            : "")
                    << course::seed_hint();
      return;
    }
  }
}

class WmmaGemmLargeIndex : public course::GpuTest {};
TEST_F(WmmaGemmLargeIndex, ReadsRowsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeGemmBytes);
  expect_gemm_large(d09::wmma_gemm_bf16, "wmma_gemm_kernel: TODO(d09.1)");
}
class MmaGemmLargeIndex : public course::GpuTest {};
TEST_F(MmaGemmLargeIndex, ReadsRowsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeGemmBytes);
  expect_gemm_large(kGemmMma, kGemmTodo);
}

// =============================================================================================
// Exercise 7: Wgmma. Host: the descriptor's bit fields and the no-swizzle K-major layout.

TEST(WgmmaDescriptor, PacksEveryFieldWhereThePtxIsaSays) {
  const std::uint32_t address = 0x2a40, lbo = 128, sbo = 4096;
  const std::uint64_t d =
      course::observed(d09::wgmma_descriptor(address, lbo, sbo, 0), "descriptor");
  ASSERT_NE(d, 0u) << "wgmma_descriptor returned 0: not written yet (matrix_descriptor: "
                      "TODO(d09.7a))";
  const auto field = [](std::uint64_t v, int lo, int bits) {
    return (v >> lo) & ((std::uint64_t{1} << bits) - 1);
  };
  EXPECT_EQ(field(d, 0, 14), address >> 4)
      << "bits 0-13: the start address >> 4"
      << (field(d, 0, 14) == (address & 0x3fff) ? " (it is there without the shift by 4)" : "");
  EXPECT_EQ(field(d, 16, 14), lbo >> 4)
      << "bits 16-29: the leading-dimension byte offset >> 4"
      << (field(d, 16, 14) == sbo >> 4 ? " (LBO and SBO are swapped)" : "");
  EXPECT_EQ(field(d, 32, 14), sbo >> 4)
      << "bits 32-45: the stride-dimension byte offset >> 4"
      << (field(d, 32, 14) == lbo >> 4 ? " (LBO and SBO are swapped)" : "");
  EXPECT_EQ(field(d, 62, 2), 0u) << "bits 62-63: swizzle mode 0 (none)";
  EXPECT_EQ(d & ~((std::uint64_t{0x3fff}) | (std::uint64_t{0x3fff} << 16) |
                  (std::uint64_t{0x3fff} << 32) | (std::uint64_t{3} << 62)),
            0u)
      << "bits outside the four fields (14-15, 30-31, 46-61: base offset 0) must be 0";
  for (int mode = 1; mode < 4; ++mode)
    EXPECT_EQ(field(course::observed(d09::wgmma_descriptor(address, lbo, sbo, mode), "descriptor"),
                    62, 2),
              static_cast<std::uint64_t>(mode))
        << "swizzle mode " << mode << " goes in bits 62-63";
  // The largest values that fit: a 14-bit field of 16-byte units reaches 256 KiB - 16.
  const std::uint64_t big =
      course::observed(d09::wgmma_descriptor(0x3fff0, 0x3fff0, 0x3fff0, 3), "descriptor");
  EXPECT_EQ(big, std::uint64_t{0x3fff} | (std::uint64_t{0x3fff} << 16) |
                     (std::uint64_t{0x3fff} << 32) | (std::uint64_t{3} << 62))
      << "with every field at its largest, no bit may spill into a neighbour";
}

TEST(WgmmaSmemLayout, IsTheNoSwizzleKMajorCoreMatrixLayout) {
  ASSERT_NE(course::observed(d09::wgmma_smem_offset(0, 0, 64), "offset"), -1)
      << "wgmma_smem_offset returned -1: not written yet (core_matrix_offset: TODO(d09.7a))";
  for (int K : {16, 64, 256})
    for (int rows : {64, 128}) {
      SCOPED_TRACE("K = " + std::to_string(K) + ", rows = " + std::to_string(rows));
      // Every offset of this shape, read once and observed as one table (course/observe.h).
      std::vector<std::int64_t> table(static_cast<std::size_t>(rows * K));
      for (int row = 0; row < rows; ++row)
        for (int k = 0; k < K; ++k) table[row * K + k] = d09::wgmma_smem_offset(row, k, K);
      table = course::observed(std::move(table), "wgmma_smem_offset");
      const auto offset_of = [&](int row, int k) { return table[row * K + k]; };
      std::set<std::int64_t> offsets;
      for (int row = 0; row < rows; ++row)
        for (int k = 0; k < K; ++k) {
          const std::int64_t got = offset_of(row, k);
          const std::int64_t core = (row / 8) * (K / 8) + k / 8;  // core matrix, K-fastest
          const std::int64_t want = core * 128 + (row % 8) * 16 + (k % 8) * 2;
          if (got != want) {
            std::string why = "element (" + std::to_string(row) + ", " + std::to_string(k) +
                              ") at byte " + std::to_string(got) + ", expected " +
                              std::to_string(want) + ": ";
            if (offset_of(0, 1) != 2)
              why += "the 8 elements of a core-matrix row are 16 contiguous bytes";
            else if (offset_of(1, 0) != 16)
              why += "the 8 rows of a core matrix are 16 bytes apart (128 contiguous bytes)";
            else if (offset_of(0, 8) != 128)
              why += "the next core matrix along K follows at +128 bytes (the LBO of the kernel)";
            else
              why += "the next 8-row group starts K * 16 bytes further on (the SBO)";
            FAIL() << why;
          }
          offsets.insert(got);
        }
      EXPECT_EQ(offsets.size(), static_cast<std::size_t>(rows * K));
    }
}

// GPU: one 64xN tile.
class WgmmaGpuTest : public course::GpuTest {
 protected:
  void SetUp() override {
    course::GpuTest::SetUp();
    if (IsSkipped()) return;
    const auto& facts = course::device_facts();
    if (facts.cc_major != 9 || facts.cc_minor != 0)
      GTEST_SKIP() << "needs compute capability 9.0 (Hopper, sm_90a): wgmma does not exist on "
                   << facts.name << " (" << facts.cc_major << "." << facts.cc_minor << ")";
  }
};
class WgmmaTile : public WgmmaGpuTest, public ::testing::WithParamInterface<std::pair<int, int>> {};

const GemmFn<bfloat16> kWgmma = [](const bfloat16* A, const bfloat16* B, float* C, std::int64_t,
                                   std::int64_t n, std::int64_t k) {
  d09::wgmma_64xn(A, B, C, static_cast<int>(n), static_cast<int>(k));
};
const std::string kWgmmaTodo =
    "wgmma_64xn_kernel: TODO(d09.7b); if every element is wrong, check the descriptors' LBO/SBO "
    "and the shared-memory layout, and the fence.proxy.async before the barrier";

TEST_P(WgmmaTile, MatchesTheReference) {
  const auto [N, K] = GetParam();
  check_gemm<bfloat16>(kWgmma, {d09::kWgmmaM, N, K}, 64, kWgmmaTodo);
}

// lab.h's promises at their edges: N = 64 with the shortest K (16) is computed first (so that
// the test fails until the kernel is written); then every other N, and K not a multiple of 16
// or outside [16, 256], is refused with course::InvalidArgument before anything is launched.
class WgmmaTileLimits : public WgmmaGpuTest {};
TEST_F(WgmmaTileLimits, RefusesShapesOutsideLabH) {
  check_gemm<bfloat16>(kWgmma, {d09::kWgmmaM, 64, 16}, 64, kWgmmaTodo);
  if (HasFailure()) return;
  DeviceBuffer<bfloat16> A(d09::kWgmmaM * 272), B(256 * 272);
  DeviceBuffer<float> C(d09::kWgmmaM * 256);
  const std::pair<int, int> refused[] = {{32, 64}, {96, 64}, {256, 64}, {64, 0},
                                         {64, 8},  {64, 24}, {64, 272}};  // (N, K)
  for (const auto& [N, K] : refused)
    COURSE_EXPECT_THROW(d09::wgmma_64xn(A.data(), B.data(), C.data(), N, K),
                        course::InvalidArgument)
        << "N = " << N << ", K = " << K
        << ": lab.h allows N = 64 or 128 and K a multiple of 16 in [16, 256]. The launcher in "
           "kernel.cu checks this with course::require before launching: keep its checks as "
           "they are given.";
}
INSTANTIATE_TEST_SUITE_P(Shapes, WgmmaTile,
                         ::testing::Values(std::pair{64, 16}, std::pair{64, 64}, std::pair{128, 48},
                                           std::pair{128, 256}),
                         [](const ::testing::TestParamInfo<std::pair<int, int>>& info) {
                           return "N" + std::to_string(info.param.first) + "_K" +
                                  std::to_string(info.param.second);
                         });

}  // namespace
