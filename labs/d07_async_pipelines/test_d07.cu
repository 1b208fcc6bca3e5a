// Day 7 tests. Each suite is one exercise of README.md (a suite named ExerciseSomething counts
// toward Exercise). Outputs are poisoned before every run, so an element the kernel never wrote
// is reported as such, and guard elements after every output must keep their poison. The
// Hopper suites (GemvBulk, GemvTma) skip, saying why, on GPUs before compute capability 9.0.
//
// What a kernel of this day can get wrong, and the test that sees it:
//   a copy read from shared memory before it landed (no wait, or wait_group / wait_prior too
//   large), or a stage overwritten while another warp still reads it (a missing barrier)
//                                      racecheck; AsyncCopy.*, Gemv*.MatchesTheReference,
//                                      Gemv*.HandlesALargeMatrix (many tiles per row)
//   the last n % 4 floats of a copy (the tail), or a grid that does not cover the array
//                                      AsyncCopy.* (n = 1, 7, 4096 + 5; 1 and 3 blocks)
//   the last, partial K tile of a row dropped or read whole (K not a multiple of 512)
//                                      Gemv*.MatchesTheReference (K = 8, 24, 520, 1000, ...);
//                                      memcheck for a read past the end
//   rows past N in the last block read or written; batch rows past `batch`
//                                      Gemv*.MatchesTheReference (N = 1, 7, 13, ...), guards
//                                      after y; Gemv*.HandlesEveryBatchFrom1To16
//   the ring's stage index wrapping late or early, fewer tiles than stages
//                                      GemvMultistage.WorksForEveryRingSize
//   the mbarrier phase (parity) of a stage's k-th use, a wrong expect_tx byte count
//                                      GemvBulk.*, GemvTma.* (32 tiles per row),
//                                      GemvBulkStageBytes.*
//   a wait on an mbarrier that never completes hanging the GPU
//                                      Gemv*Timeout.ReportsAWrongTransactionCountInsteadOfHanging
//   TMA boxes at the wrong coordinates, or the parts outside the matrix not zero
//                                      GemvTma.MatchesTheReference (N, K not multiples of the box)
//   row * K or an element offset in 32 bits   *LargeIndex.* (W or x of 2^31 + elements)
//   the launchers' promises (K % 8, 1 <= batch <= 16, ring sizes, 16-byte alignment, K == 0 writes
//   y = 0, N == 0 and n == 0 launch nothing)   AsyncCopyLimits.*, Gemv*.KeepsThePromisesOfLabH
//   a slow copy or pipeline (no overlap)       the graded benchmark rows of every kernel
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/device.h"
#include "course/large.h"
#include "course/random.h"
#include "course/reference/gemv.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
namespace ref = course::reference;

double bf16_to_double(bfloat16 v) { return course::to_double(v); }

using course::expect_guards_untouched;
using course::Guarded;

// ---------------------------------------------------------------- Exercise 1: AsyncCopy
using CopyFn = void (*)(const float*, float*, std::int64_t, int);
struct CopyVariant {
  const char* name;
  CopyFn fn;
  const char* todo;
};
const CopyVariant kCopyVariants[] = {
    {"cuda_pipeline", d07::async_copy_1_cuda_pipeline, "TODO(d07.1a)"},
    {"primitives", d07::async_copy_2_primitives, "TODO(d07.1b)"},
    {"ptx", d07::async_copy_3_ptx, "TODO(d07.1c)"},
};

struct CopyCase {
  CopyVariant variant;
  int blocks;  // 0: the launcher's grid
};
void PrintTo(const CopyCase& c, std::ostream* os) {
  *os << c.variant.name << " blocks=" << c.blocks;
}
std::vector<CopyCase> copy_cases() {
  std::vector<CopyCase> cases;
  for (const auto& v : kCopyVariants)
    for (int blocks : {0, 1, 3}) cases.push_back({v, blocks});
  return cases;
}

class AsyncCopy : public course::GpuTest, public ::testing::WithParamInterface<CopyCase> {};

// Sizes: a lone float (only the tail), whole chunks, a chunk and a tail, one tile and a bit,
// several tiles that do not divide among 1 or 3 blocks, and a large odd size.
TEST_P(AsyncCopy, CopiesEveryFloatOfEverySize) {
  const CopyCase c = GetParam();
  for (std::int64_t n :
       {std::int64_t{1}, std::int64_t{4}, std::int64_t{7}, std::int64_t{1024},
        std::int64_t{4096 + 5}, std::int64_t{65537}, (std::int64_t{1} << 20) + 3}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(1));
    DeviceBuffer<float> dx(x);
    Guarded<float> y(static_cast<std::size_t>(n), 0);
    c.variant.fn(dx.data(), y.data(), n, c.blocks);
    course::CompareOptions options;
    options.tolerance = {0.0, 0.0};  // a copy is exact
    options.what = std::string("y (") + c.variant.todo + ")";
    COURSE_EXPECT_MATCH(y.read_back(), course::as_doubles(x), options);
    expect_guards_untouched(y, "y");
  }
}
INSTANTIATE_TEST_SUITE_P(Variants, AsyncCopy, ::testing::ValuesIn(copy_cases()),
                         [](const ::testing::TestParamInfo<CopyCase>& info) {
                           return std::string(info.param.variant.name) + "_blocks" +
                                  std::to_string(info.param.blocks);
                         });

// lab.h's promises at their edges: x and y 16-byte aligned (anything else is refused with
// course::InvalidArgument before a copy is issued), blocks >= 0, and n == 0 copies nothing, even
// with null pointers. The copy of a few floats comes first, so that the test fails (with the
// copy's message) until the kernel is written.
const char* const kLimitHint =
    "The launchers in kernel.cu check their arguments with course::require before launching: "
    "keep those checks as they are given.";

class AsyncCopyLimits : public course::GpuTest {};

TEST_F(AsyncCopyLimits, RefusesMisalignedPointersAndCopiesNothingForNZero) {
  const auto x = course::random_uniform<float>(64, course::seed_for(2));
  DeviceBuffer<float> dx(x), dy(64);
  for (const auto& v : kCopyVariants) {
    SCOPED_TRACE(std::string(v.name) + " (" + v.todo + ")");
    Guarded<float> y(5, 0);
    v.fn(dx.data(), y.data(), 5, 1);
    course::CompareOptions options;
    options.tolerance = {0.0, 0.0};
    options.what = "y, 5 floats (one chunk and one float of tail)";
    COURSE_EXPECT_MATCH(y.read_back(),
                        course::as_doubles(std::vector<float>(x.begin(), x.begin() + 5)), options);
    if (HasFailure()) return;
    SCOPED_TRACE(std::string("x or y off the 16-byte grid, or blocks < 0. ") + kLimitHint);
    COURSE_EXPECT_THROW(v.fn(dx.data() + 1, dy.data(), 8, 0), course::InvalidArgument);
    COURSE_EXPECT_THROW(v.fn(dx.data(), dy.data() + 2, 8, 0), course::InvalidArgument);
    COURSE_EXPECT_THROW(v.fn(dx.data(), dy.data(), 8, -1), course::InvalidArgument);
    COURSE_EXPECT_NO_THROW(v.fn(nullptr, nullptr, 0, 0));
  }
}

// 2^31 + 2^24 + 17 floats (8 GiB, x and y): the element index of a chunk (4 (first + c)) passes
// 2^31, and the tail's one float lies beyond it. Filled on the GPU with a pattern the host can
// recompute (course/large.h); checked near 0, 2^31, 2^32 and the end. Alone on the GPU
// (lab.json's serial_suites).
class AsyncCopyLargeIndex : public course::GpuTest {};

TEST_F(AsyncCopyLargeIndex, CopiesFloatsPastTwoToThe31) {
  const std::int64_t n = course::kLargeCount;
  COURSE_SKIP_UNLESS_GPU_MEMORY(2 * static_cast<std::size_t>(n) * sizeof(float));  // 16 GiB
  DeviceBuffer<float> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  const course::Pattern p{course::seed_for(3), -1.0, 1.0};
  course::fill_pattern(x.data(), n, p);
  const auto at = course::large_sample_indices(n, course::seed_for(4));
  std::vector<double> want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    want[k] = course::pattern_double_value<float>(p, at[k]);
  for (const auto& v : kCopyVariants) {
    course::poison_on_device(y.data(), n);
    v.fn(x.data(), y.data(), n, 0);
    course::CompareOptions options;
    options.tolerance = {0.0, 0.0};
    options.what =
        std::string("y of ") + v.name + " (" + v.todo + ": chunk and element indices in 64 bits)";
    COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data(), n, at), want, at, options);
    if (HasFailure()) return;
  }
}

// ---------------------------------------------------------------- Exercises 2-6: the GEMV
// How close: every product of two bfloat16 values is exact in float32 (8 + 8 significant bits),
// so the only error is float32 accumulation: each lane adds up to K / 32 products in order, then
// a tree over 32 lanes. That error grows like u * sqrt(terms) * |terms| in practice (u = 2^-24)
// and is below 1e-5 of rms(y) for K = 16384; 1e-4 in norm and 1e-3 per element leaves room for
// any summation order, while a dropped or repeated 16-byte chunk (8 of K terms) is off by ~2 %.
constexpr course::Tolerance kGemvTolerance{1e-4, 1e-3};

// Points: the synchronous GEMV, the double buffer, the ring, and the two Hopper variants.

struct Shape {
  std::int64_t N, K;
  int batch;
};
void PrintTo(const Shape& s, std::ostream* os) {
  *os << "N=" << s.N << " K=" << s.K << " batch=" << s.batch;
}
std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  return "N" + std::to_string(info.param.N) + "_K" + std::to_string(info.param.K) + "_batch" +
         std::to_string(info.param.batch);
}

// N = 1 and primes; K = one chunk, a tile plus a chunk, not a multiple of the 512 tile (1000),
// 8 x a prime, a long row; every batch bound (1, 4, 16) and values in between.
const Shape kShapes[] = {{1, 8, 1},      {1, 16384, 1},   {7, 24, 1},      {13, 520, 2},
                         {31, 1000, 3},  {127, 1016, 4},  {8, 1536, 5},    {33, 512, 8},
                         {257, 4104, 9}, {61, 16424, 16}, {1021, 2048, 1}, {3, 72, 16},
                         {4099, 256, 13}};

using GemvFn =
    std::function<void(const bfloat16*, const bfloat16*, float*, std::int64_t, std::int64_t, int)>;

// Runs `gemv` on random W, x of this shape (y one float past a 16-byte boundary when
// y_offset = 1) and compares with the float64 reference; `todo` names where to look.
void expect_gemv_matches(const GemvFn& gemv, const Shape& s, const std::string& todo,
                         std::size_t y_offset = 0) {
  const auto W =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(s.N * s.K), course::seed_for(10));
  const auto x = course::random_uniform<bfloat16>(static_cast<std::size_t>(s.batch * s.K),
                                                  course::seed_for(11));
  DeviceBuffer<bfloat16> dW(W), dx(x);
  Guarded<float> y(static_cast<std::size_t>(s.batch * s.N), y_offset);
  gemv(dW.data(), dx.data(), y.data(), s.N, s.K, s.batch);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto want = ref::gemv(W, x, static_cast<std::size_t>(s.N), static_cast<std::size_t>(s.K),
                              static_cast<std::size_t>(s.batch), bf16_to_double);
  course::CompareOptions options;
  options.tolerance = kGemvTolerance;
  options.cols = s.N;  // [batch, N]: a bad element is reported as [b, n]
  options.what = "y [batch, N] (" + todo + ")";
  COURSE_EXPECT_MATCH(y.read_back(), want, options);
  expect_guards_untouched(y, "y");
}

// One fixture per exercise, each running the same checks on its own variant.
class GemvTest : public course::GpuTest, public ::testing::WithParamInterface<Shape> {
 protected:
  virtual GemvFn variant() const = 0;
  virtual std::string todo() const = 0;
  void check(const Shape& s, std::size_t y_offset = 0) {
    expect_gemv_matches(variant(), s, todo(), y_offset);
  }
  void check_every_batch() {
    for (int batch = 1; batch <= d07::kMaxBatch; ++batch) {
      SCOPED_TRACE("batch = " + std::to_string(batch));
      check({37, 1032, batch}, 1);
    }
  }
  void check_large() { check({4099, 16384, 1}); }
  // lab.h's promises at their edges. Allowed: K = 8 (one chunk) with batch 16, N = 1; K == 0
  // writes y = 0; N == 0 does nothing, even with null pointers. Refused (course::InvalidArgument,
  // before anything is launched): K not a multiple of 8, batch 0 or 17, N < 0, W or x off the
  // 16-byte grid.
  void check_limits() {
    check({1, 8, d07::kMaxBatch});
    check({5, 8, 1});
    if (HasFailure()) return;
    const GemvFn gemv = variant();
    DeviceBuffer<bfloat16> W(4096), x(4096);
    {
      const int batch = 3;
      const std::int64_t N = 37;
      Guarded<float> y(static_cast<std::size_t>(batch * N), 0);
      gemv(W.data(), x.data(), y.data(), N, 0, batch);
      course::CompareOptions options;
      options.tolerance = {0.0, 0.0};
      options.what =
          "y [3, 37] of a GEMV with K = 0 (lab.h: K == 0 writes y = 0; the launcher "
          "does it, as given)";
      COURSE_EXPECT_MATCH(y.read_back(), std::vector<double>(y.size, 0.0), options);
    }
    DeviceBuffer<float> y(4096);
    struct Refused {
      const char* what;
      const bfloat16 *W, *x;
      std::int64_t N, K;
      int batch;
    };
    const Refused refused[] = {
        {"K = 12, not a multiple of 8", W.data(), x.data(), 4, 12, 1},
        {"batch = 0", W.data(), x.data(), 4, 64, 0},
        {"batch = 17 (kMaxBatch is 16)", W.data(), x.data(), 4, 64, d07::kMaxBatch + 1},
        {"N = -1", W.data(), x.data(), -1, 64, 1},
        {"W one element past a 16-byte boundary", W.data() + 1, x.data(), 4, 64, 1},
        {"x one element past a 16-byte boundary", W.data(), x.data() + 1, 4, 64, 1},
    };
    for (const Refused& r : refused) {
      SCOPED_TRACE(std::string(r.what) + " (" + todo() + "). " + kLimitHint);
      COURSE_EXPECT_THROW(gemv(r.W, r.x, y.data(), r.N, r.K, r.batch), course::InvalidArgument);
    }
    SCOPED_TRACE("N = 0: nothing to do, and the pointers must not be looked at");
    COURSE_EXPECT_NO_THROW(gemv(nullptr, nullptr, nullptr, 0, 64, 1));
  }
};

// The Hopper variants: skipped, with the reason, before compute capability 9.0; every call is
// followed by check_mbarrier_timeouts(), so a stage that never completed fails with its message.
// Empty on a Hopper GPU (compute capability 9.0 or later); otherwise why a test must skip.
std::string why_not_hopper() {
  const auto& facts = course::device_facts();
  if (facts.cc_major >= 9) return "";
  return "needs compute capability 9.0 (Hopper): cp.async.bulk, mbarrier transaction counts and "
         "TMA do not exist on " +
         facts.name + " (" + std::to_string(facts.cc_major) + "." + std::to_string(facts.cc_minor) +
         ")";
}

class HopperGemvTest : public GemvTest {
 protected:
  void SetUp() override {
    GemvTest::SetUp();
    if (IsSkipped()) return;
    const std::string why = why_not_hopper();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

class GemvSync : public GemvTest {
  GemvFn variant() const override { return d07::gemv_1_sync; }
  std::string todo() const override { return "gemv_1_sync: TODO(d07.2)"; }
};
class GemvDoubleBuffer : public GemvTest {
  GemvFn variant() const override { return d07::gemv_2_double_buffer; }
  std::string todo() const override { return "gemv_2_double_buffer: TODO(d07.3)"; }
};
class GemvMultistage : public GemvTest {
 protected:
  int stages = d07::kDefaultStages;
  GemvFn variant() const override {
    const int s = stages;
    return [s](const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
               int batch) { d07::gemv_3_multistage(W, x, y, N, K, batch, s); };
  }
  std::string todo() const override {
    return "gemv_3_multistage with " + std::to_string(stages) + " stages: TODO(d07.4)";
  }
};
class GemvBulk : public HopperGemvTest {
  GemvFn variant() const override {
    return [](const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
              int batch) {
      d07::gemv_4_bulk(W, x, y, N, K, batch);
      d07::check_mbarrier_timeouts();
    };
  }
  std::string todo() const override { return "gemv_4_bulk: TODO(d07.5)"; }
};
class GemvTma : public HopperGemvTest {
  GemvFn variant() const override {
    return [](const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
              int batch) {
      d07::gemv_5_tma(W, x, y, N, K, batch);
      d07::check_mbarrier_timeouts();
    };
  }
  std::string todo() const override { return "gemv_5_tma: TODO(d07.6)"; }
};

TEST_P(GemvSync, MatchesTheReference) { check(GetParam()); }
TEST_F(GemvSync, HandlesEveryBatchFrom1To16) { check_every_batch(); }
TEST_F(GemvSync, HandlesALargeMatrix) { check_large(); }
TEST_F(GemvSync, KeepsThePromisesOfLabH) { check_limits(); }

TEST_P(GemvDoubleBuffer, MatchesTheReference) { check(GetParam()); }
TEST_F(GemvDoubleBuffer, HandlesEveryBatchFrom1To16) { check_every_batch(); }
TEST_F(GemvDoubleBuffer, HandlesALargeMatrix) { check_large(); }
TEST_F(GemvDoubleBuffer, KeepsThePromisesOfLabH) { check_limits(); }

TEST_P(GemvMultistage, MatchesTheReference) { check(GetParam()); }
TEST_F(GemvMultistage, HandlesEveryBatchFrom1To16) { check_every_batch(); }
TEST_F(GemvMultistage, HandlesALargeMatrix) { check_large(); }
TEST_F(GemvMultistage, KeepsThePromisesOfLabH) {
  check_limits();
  if (HasFailure()) return;
  DeviceBuffer<bfloat16> W(4096), x(4096);
  DeviceBuffer<float> y(4096);
  for (const int s : {2, 5, 8}) {
    SCOPED_TRACE("stages = " + std::to_string(s) +
                 ": lab.h compiles the rings of kMultistageStages (3, 4, 6) only. " + kLimitHint);
    COURSE_EXPECT_THROW(d07::gemv_3_multistage(W.data(), x.data(), y.data(), 4, 64, 1, s),
                        course::InvalidArgument);
  }
}
// Every compiled ring size, on rows of fewer tiles than stages (K = 1000: 2 tiles) and more.
TEST_F(GemvMultistage, WorksForEveryRingSize) {
  for (int s : d07::kMultistageStages) {
    stages = s;
    SCOPED_TRACE("stages = " + std::to_string(s));
    check({29, 1000, 3});
    check({67, 8 * 1031, 16});
  }
}

TEST_P(GemvBulk, MatchesTheReference) { check(GetParam()); }
TEST_F(GemvBulk, HandlesEveryBatchFrom1To16) { check_every_batch(); }
TEST_F(GemvBulk, HandlesALargeMatrix) { check_large(); }
TEST_F(GemvBulk, KeepsThePromisesOfLabH) { check_limits(); }

TEST_P(GemvTma, MatchesTheReference) { check(GetParam()); }
TEST_F(GemvTma, HandlesEveryBatchFrom1To16) { check_every_batch(); }
TEST_F(GemvTma, HandlesALargeMatrix) { check_large(); }
TEST_F(GemvTma, KeepsThePromisesOfLabH) { check_limits(); }

INSTANTIATE_TEST_SUITE_P(Shapes, GemvSync, ::testing::ValuesIn(kShapes), shape_name);
INSTANTIATE_TEST_SUITE_P(Shapes, GemvDoubleBuffer, ::testing::ValuesIn(kShapes), shape_name);
INSTANTIATE_TEST_SUITE_P(Shapes, GemvMultistage, ::testing::ValuesIn(kShapes), shape_name);
INSTANTIATE_TEST_SUITE_P(Shapes, GemvBulk, ::testing::ValuesIn(kShapes), shape_name);
INSTANTIATE_TEST_SUITE_P(Shapes, GemvTma, ::testing::ValuesIn(kShapes), shape_name);

// ---------------------------------------------------------------- 64-bit indices
// W [N, K] = [132097, 16384] bfloat16, 2^31 + 2^24 + 16384 elements (4 GiB): the rows from
// 131072 on start past 2^31, where a row offset (row0 + warp) * K computed in 32 bits wraps. W is
// filled on the GPU with a pattern the host recomputes (course/large.h); y is checked for both
// batch rows at the rows holding W's elements near 0, 2^31 and the end, and a few at random.
// Alone on the GPU (lab.json's serial_suites).
constexpr std::int64_t kLargeK = 16384;
constexpr std::int64_t kLargeN = course::large_rows(kLargeK);
constexpr std::size_t kLargeGemvBytes =
    static_cast<std::size_t>(kLargeN * kLargeK) * sizeof(bfloat16) + (64u << 20);

void expect_gemv_large(const GemvFn& gemv, const std::string& todo) {
  constexpr int batch = 2;
  const std::int64_t n = kLargeN * kLargeK;
  const course::Pattern p{course::seed_for(30), -1.0, 1.0};
  const auto x = course::random_uniform<bfloat16>(batch * kLargeK, course::seed_for(31));
  DeviceBuffer<bfloat16> W(static_cast<std::size_t>(n)), dx(x);
  DeviceBuffer<float> y(static_cast<std::size_t>(batch * kLargeN));
  course::fill_pattern(W.data(), n, p);
  course::poison_on_device(y.data(), batch * kLargeN);
  gemv(W.data(), dx.data(), y.data(), kLargeN, kLargeK, batch);
  const auto rows = course::large_sample_rows(kLargeN, kLargeK, course::seed_for(32));
  std::vector<std::int64_t> at;  // y[b, row], flat
  std::vector<double> want;
  for (int b = 0; b < batch; ++b)
    for (const std::int64_t row : rows) {
      double dot = 0.0;
      for (std::int64_t k = 0; k < kLargeK; ++k)
        dot += course::pattern_double_value<bfloat16>(p, row * kLargeK + k) *
               course::to_double(x[static_cast<std::size_t>(b * kLargeK + k)]);
      at.push_back(b * kLargeN + row);
      want.push_back(dot);
    }
  course::CompareOptions options;
  options.tolerance = kGemvTolerance;
  options.cols = kLargeN;  // [batch, N]
  options.what = "y [2, " + std::to_string(kLargeN) + "] (" + todo + ")";
  SCOPED_TRACE("W [" + std::to_string(kLargeN) + ", " + std::to_string(kLargeK) +
               "] has 2^31 + 2^24 + 16384 elements: the rows from 131072 on start past 2^31, where "
               "a row offset (row0 + warp) * K computed in 32 bits wraps");
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data(), batch * kLargeN, at), want, at, options);
}

class GemvSyncLargeIndex : public course::GpuTest {};
TEST_F(GemvSyncLargeIndex, ReadsRowsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeGemvBytes);
  expect_gemv_large(d07::gemv_1_sync, "gemv_1_sync: TODO(d07.2)");
}
class GemvDoubleBufferLargeIndex : public course::GpuTest {};
TEST_F(GemvDoubleBufferLargeIndex, ReadsRowsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeGemvBytes);
  expect_gemv_large(d07::gemv_2_double_buffer, "gemv_2_double_buffer: TODO(d07.3)");
}
class GemvMultistageLargeIndex : public course::GpuTest {};
TEST_F(GemvMultistageLargeIndex, ReadsRowsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeGemvBytes);
  expect_gemv_large([](const bfloat16* W, const bfloat16* x, float* y, std::int64_t N,
                       std::int64_t K, int batch) { d07::gemv_3_multistage(W, x, y, N, K, batch); },
                    "gemv_3_multistage: TODO(d07.4)");
}
class HopperLargeIndex : public course::GpuTest {
 protected:
  void SetUp() override {
    course::GpuTest::SetUp();
    if (IsSkipped()) return;
    const std::string why = why_not_hopper();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};
class GemvBulkLargeIndex : public HopperLargeIndex {};
TEST_F(GemvBulkLargeIndex, ReadsRowsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeGemvBytes);
  expect_gemv_large(
      [](const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
         int batch) {
        d07::gemv_4_bulk(W, x, y, N, K, batch);
        d07::check_mbarrier_timeouts();
      },
      "gemv_4_bulk: TODO(d07.5)");
}
class GemvTmaLargeIndex : public HopperLargeIndex {};
TEST_F(GemvTmaLargeIndex, ReadsRowsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeGemvBytes);
  expect_gemv_large(
      [](const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
         int batch) {
        d07::gemv_5_tma(W, x, y, N, K, batch);
        d07::check_mbarrier_timeouts();
      },
      "gemv_5_tma: TODO(d07.6)");
}

// ---------------------------------------------------------------- the bounded mbarrier wait
// A stage that expects more bytes than its copies deliver never completes. The kernel must give
// up after d07::kMbarrierTimeoutNs and check_mbarrier_timeouts() must say so, instead of the test
// hanging until the runner kills it; and the next, correct, call must work again.
void expect_timeout_reported(const char* name,
                             void (*gemv)(const bfloat16*, const bfloat16*, float*, std::int64_t,
                                          std::int64_t, int, int),
                             const std::string& todo) {
  const Shape s{16, 1024, 2};
  const auto W =
      course::random_uniform<bfloat16>(static_cast<std::size_t>(s.N * s.K), course::seed_for(20));
  const auto x = course::random_uniform<bfloat16>(static_cast<std::size_t>(s.batch * s.K),
                                                  course::seed_for(21));
  DeviceBuffer<bfloat16> dW(W), dx(x);
  DeviceBuffer<float> y(static_cast<std::size_t>(s.batch * s.N));
  y.poison();
  constexpr int kExtraBytes = 16;  // one chunk more than the copies deliver
  const course::Thrown t = course::observed_throw<std::runtime_error>(
      [&] {
        gemv(dW.data(), dx.data(), y.data(), s.N, s.K, s.batch, kExtraBytes);
        d07::check_mbarrier_timeouts();
      },
      "the call with a wrong transaction count");
  const std::string message = t.threw         ? t.what
                              : t.threw_other ? "(an exception of another type) " + t.what
                                              : "";
  EXPECT_TRUE(t.threw && message.find("never completed") != std::string::npos)
      << name << " was told to expect " << kExtraBytes
      << " bytes more than its copies deliver, so its first stage can never complete; the "
         "kernel must wait on it with the given mbarrier_wait_bounded and return when that gives "
         "up ("
      << todo << "), so that check_mbarrier_timeouts() reports it; but it "
      << (message.empty() ? "reported nothing" : "said: " + message);
  // The error is cleared and the kernel works again with the right count.
  expect_gemv_matches(
      [gemv](const bfloat16* w, const bfloat16* xx, float* yy, std::int64_t N, std::int64_t K,
             int batch) {
        gemv(w, xx, yy, N, K, batch, 0);
        d07::check_mbarrier_timeouts();
      },
      s, todo);
}

class GemvBulkTimeout : public HopperGemvTest {
  GemvFn variant() const override { return {}; }
  std::string todo() const override { return {}; }
};
TEST_F(GemvBulkTimeout, ReportsAWrongTransactionCountInsteadOfHanging) {
  expect_timeout_reported("gemv_4_bulk", d07::gemv_4_bulk, "gemv_4_bulk: TODO(d07.5)");
}
class GemvTmaTimeout : public GemvBulkTimeout {};
TEST_F(GemvTmaTimeout, ReportsAWrongTransactionCountInsteadOfHanging) {
  expect_timeout_reported("gemv_5_tma", d07::gemv_5_tma, "gemv_5_tma: TODO(d07.6)");
}

// ---------------------------------------------------------------- host: the transaction count
// No GPU needed: the bytes one stage of gemv_4_bulk announces with arrive.expect_tx.
TEST(GemvBulkStageBytes, CountsEveryRowSegmentAndEveryXRow) {
  const std::int64_t got_full = course::observed(d07::bulk_stage_bytes(8, 1, 64));
  ASSERT_NE(got_full, -1) << "bulk_stage_bytes returned -1: not written yet (TODO(d07.5a))";
  EXPECT_EQ(got_full, (8 + 1) * 64 * 16)
      << "a full tile of 8 rows and 1 x row, 64 chunks of 16 bytes each: (8 + 1) * 64 * 16 "
         "bytes (lesson §6.2)";
  EXPECT_EQ(course::observed(d07::bulk_stage_bytes(8, 16, 64)), (8 + 16) * 64 * 16)
      << "16 x rows: each is copied into the stage too";
  EXPECT_EQ(course::observed(d07::bulk_stage_bytes(8, 3, 5)), (8 + 3) * 5 * 16)
      << "the last tile of a row is partial: 5 chunks, not a whole tile";
  EXPECT_EQ(course::observed(d07::bulk_stage_bytes(3, 2, 64)), (3 + 2) * 64 * 16)
      << "the last block has only N % 8 rows: rows past N are not copied, so not expected";
  EXPECT_EQ(course::observed(d07::bulk_stage_bytes(1, 1, 1)), 32)
      << "one chunk of W and one of x: 32 bytes";
  // A whole 16384-element row of 8 rows and 16 x rows: (8 + 16) * 2048 * 16 = 786432 bytes,
  // past what 16 bits hold; int64 chunks of a long row must not be truncated on the way.
  EXPECT_EQ(course::observed(d07::bulk_stage_bytes(8, 16, std::int64_t{1} << 28)),
            std::int64_t{24} << 32)
      << "24 rows of 2^28 chunks: 24 * 2^32 bytes: compute in 64 bits";
}

}  // namespace
