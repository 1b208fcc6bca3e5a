// Day 5 tests. Each suite is one exercise of README.md.
//
// What a kernel of this day can get wrong, and the test that sees it:
//   - row lengths that are not a multiple of the warp, the block or the vector width (1, 31, 33,
//     257, 1000, 4099, 32771, 100003), the register buckets' edges (2048, 2049) and the
//     streaming path past them: *Softmax.MatchesTheReferenceOnRandomRows, BlockSoftmaxBlockSizes
//   - padding lanes that are not -inf (a max of 0 for negative rows), a missing max subtraction
//     (overflow), -inf masks, NaN and +inf rows: *SoftmaxValues.* (huge, masked, non-finite)
//   - a store past a row's end or past the last row: the guard after y that every softmax test
//     checks (expect_softmax_matches), and memcheck (graded on Day 5) for loads past the end
//   - the block reductions: a barrier missing between the partials' write and read, or the max
//     and the sum sharing one partials array (a race): racecheck (graded on Day 5) and the
//     BlockSoftmax tests when it shows; block sizes of 32, 96, 256 and 1024 threads:
//     BlockSoftmaxBlockSizes
//   - pointers not 16-byte aligned on the 16-byte path: *SoftmaxValues.WorksWhenPointersAreNot
//     AlignedTo16Bytes
//   - rounding toward zero (float16, bfloat16): *SoftmaxRounding
//   - the compaction: the count (elements past n voting keep, n = 0), the order (stable),
//     stores past the count, the block-offset scan across more than 1024 blocks without its
//     barrier (a race): *Compaction, *CompactionOrder, *CompactionManyBlocks (and racecheck)
//   - key counting: the leader of a match group, keys out of range, counts not cleared first,
//     the contended all-equal case: MatchKeyCounting, MatchKeyCountingTwice
//   - an index or offset in 32 bits (row * cols, input index, output position, key index):
//     *LargeIndex (just over 2^31 elements)
//   - the launchers' limits (rows, cols >= 0, cols <= 2^30, rows < 2^31, block_threads 0 or a
//     multiple of 32 in [32, 1024], n >= 0, n < 2^32 and bins > 0 for the counts): just outside
//     throws, just inside works: *Limits
//
// What the tests read back from the code under test (device results, the count a compaction
// returns, exceptions) goes through an observation (course/observe.h), so that the grader can
// judge the student's values in the reference program.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "course/buffer.h"
#include "course/large.h"
#include "course/random.h"
#include "course/reference/compaction.h"
#include "course/reference/softmax.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::DeviceBuffer;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Poisoned elements after the end of every softmax output, which must keep their poison.
constexpr std::size_t kGuard = 64;

void sync() { COURSE_CUDA_CHECK(cudaDeviceSynchronize()); }

using course::expect_rejected;

// =============================================================================================
// Softmax (exercises 1-3)

struct Shape {
  std::int64_t rows, cols;
};
std::string shape_name(const Shape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols);
}

enum class Variant { kWarpPerRow, kBlockPerRow };
enum class Dtype { kFloat32, kFloat16, kBFloat16 };
std::string dtype_name(Dtype d) {
  return d == Dtype::kFloat32 ? "float32" : d == Dtype::kFloat16 ? "float16" : "bfloat16";
}

template <class T>
void call_softmax(Variant variant, const T* x, T* y, Shape s, int block_threads) {
  if (variant == Variant::kWarpPerRow) {
    d05::softmax_1_warp_per_row(x, y, s.rows, s.cols);
  } else {
    d05::softmax_2_block_per_row(x, y, s.rows, s.cols, block_threads);
  }
}

// Runs the softmax on x (uploaded `misalign` elements past the start of an allocation, so that
// misalign = 1 gives pointers that are not 16-byte aligned) into a poisoned y, and compares y
// with the float64 reference computed from the very values the GPU saw; the kGuard elements
// after y must keep their poison.
template <class T>
void expect_softmax_matches(Variant variant, const std::vector<T>& x, Shape s,
                            std::size_t misalign = 0, int block_threads = 0) {
  DeviceBuffer<T> dx(x.size() + misalign), dy(x.size() + misalign + kGuard);
  dx.upload(x, misalign);
  dy.poison();
  call_softmax(variant, dx.data() + misalign, dy.data() + misalign, s, block_threads);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  course::CompareOptions options;
  options.cols = s.cols;
  options.what = "softmax of a " + shape_name(s) + " " + course::DType<T>::name + " matrix";
  if (misalign) options.what += " (pointers not 16-byte aligned)";
  if (block_threads)
    options.what += " with blocks of " + std::to_string(block_threads) + " threads";
  COURSE_EXPECT_MATCH(
      dy.read_back(misalign, x.size()),
      course::reference::softmax_rows(course::as_doubles(x), static_cast<std::size_t>(s.rows),
                                      static_cast<std::size_t>(s.cols)),
      options);
  const std::vector<T> guard = dy.read_back(misalign + x.size(), kGuard);
  for (std::size_t k = 0; k < kGuard; ++k)
    if (!course::DType<T>::is_poison(guard[k])) {
      ADD_FAILURE() << "y[" << x.size() + k << "] was written, past the end of the "
                    << shape_name(s) << " output (" << options.what
                    << "): a thread stored a vector or element past its row's end. Store only "
                    << "what lies inside the row (the vectors load_row loaded).";
      break;
    }
}

// Logits spread over [-8, 8): the largest entry of a row dominates but does not swamp the rest.
template <class T>
std::vector<T> random_logits(Shape s, std::uint64_t salt) {
  return course::random_uniform<T>(static_cast<std::size_t>(s.rows * s.cols),
                                   course::seed_for(salt), -8.0, 8.0);
}

template <class T>
void expect_random_rows_match(Variant variant, Shape s) {
  expect_softmax_matches(variant, random_logits<T>(s, 1), s);
}

void expect_random_rows_match(Variant variant, Shape s, Dtype d) {
  switch (d) {
    case Dtype::kFloat32:
      return expect_random_rows_match<float>(variant, s);
    case Dtype::kFloat16:
      return expect_random_rows_match<course::half>(variant, s);
    case Dtype::kBFloat16:
      return expect_random_rows_match<course::bfloat16>(variant, s);
  }
}

// Huge logits, one kind per row: near +1e4 (exp overflows unless the max is subtracted), near
// -1e4 (exp underflows to 0, and 0 / 0 is NaN, unless the max is subtracted), spread over
// +-3e38 (x - max itself overflows to -inf, whose exp is a correct 0).
std::vector<float> huge_logits(std::int64_t cols) {
  const auto n = static_cast<std::size_t>(cols);
  std::vector<float> x;
  for (double offset : {1e4, -1e4}) {
    const auto row = course::random_uniform<float>(n, course::seed_for(2), offset - 8, offset + 8);
    x.insert(x.end(), row.begin(), row.end());
  }
  auto extreme = course::random_uniform<float>(n, course::seed_for(3), -3e38, 3e38);
  extreme[n - 1] = 3e38f;  // the maximum at the tail
  x.insert(x.end(), extreme.begin(), extreme.end());
  return x;
}

// Attention-style masks (-inf entries), one kind per row: a random third of the entries masked;
// only the first column left; only the last column (the tail) left; the first and last masked.
std::vector<float> masked_logits(std::int64_t cols) {
  const auto n = static_cast<std::size_t>(cols);
  std::vector<float> x = course::random_uniform<float>(4 * n, course::seed_for(4), -8.0, 8.0);
  const auto coin = course::random_uniform<int>(n, course::seed_for(5), 0, 2);
  for (std::size_t c = 0; c < n; ++c) {
    if (coin[c] == 0 && c != n / 2) x[c] = -kInf;  // row 0; column n/2 stays finite
    if (c != 0) x[n + c] = -kInf;                  // row 1
    if (c != n - 1) x[2 * n + c] = -kInf;          // row 2
  }
  x[3 * n] = -kInf;  // row 3 (for cols = 1 this row is all -inf: NaN, as the reference says)
  x[4 * n - 1] = -kInf;
  return x;
}

// Rows PyTorch turns into NaN, and one ordinary row among them that must come out unaffected:
// all -inf; a NaN in the middle; +inf at the end; an ordinary row; a NaN at column 0.
std::vector<float> nonfinite_logits(std::int64_t cols) {
  const auto n = static_cast<std::size_t>(cols);
  std::vector<float> x = course::random_uniform<float>(5 * n, course::seed_for(6), -8.0, 8.0);
  std::fill(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n), -kInf);
  x[n + n / 2] = kNaN;
  x[3 * n - 1] = kInf;
  x[4 * n] = kNaN;
  return x;
}

// ---- the shapes each exercise is graded on
// Exercise 1 (rows in registers, cols <= 2048): one element, below and above one warp's worth,
// not a multiple of the vector width, the largest register bucket, many short rows (rows not a
// multiple of the warps per block).
const Shape kRegisterShapes[] = {{1, 1},   {3, 31},   {7, 33},  {5, 1000},
                                 {9, 257}, {3, 2048}, {257, 64}};
// Exercise 2 (rows longer than a warp's registers): just past the bucket, not a multiple of the
// vector width, a power of two, long.
const Shape kLongShapes[] = {{2, 2049}, {4, 4099}, {2, 8192}, {1, 20000}};
// Exercise 3: all of them, and rows past a block's registers (the streaming path).
const Shape kBlockShapes[] = {{1, 1},    {3, 31},    {7, 33},    {5, 1000},  {4, 4099},
                              {2, 8192}, {1, 20000}, {3, 32768}, {2, 32771}, {1, 100003}};

using ShapeAndDtype = std::tuple<Shape, Dtype>;
std::string shape_dtype_name(const ::testing::TestParamInfo<ShapeAndDtype>& info) {
  return "shape" + shape_name(std::get<0>(info.param)) + "_" + dtype_name(std::get<1>(info.param));
}
// The value tests below use the shape's column count with their own rows (one row per kind
// of input); the alignment test uses the whole shape.
std::string shape_param_name(const ::testing::TestParamInfo<Shape>& info) {
  return "shape" + shape_name(info.param);
}
const auto kDtypes = ::testing::Values(Dtype::kFloat32, Dtype::kFloat16, Dtype::kBFloat16);

// ---------------------------------------------------------------- Exercise 1

class WarpSoftmax : public course::GpuTest, public ::testing::WithParamInterface<ShapeAndDtype> {};

TEST_P(WarpSoftmax, MatchesTheReferenceOnRandomRows) {
  expect_random_rows_match(Variant::kWarpPerRow, std::get<0>(GetParam()), std::get<1>(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Shapes, WarpSoftmax,
                         ::testing::Combine(::testing::ValuesIn(kRegisterShapes), kDtypes),
                         shape_dtype_name);

class WarpSoftmaxValues : public course::GpuTest, public ::testing::WithParamInterface<Shape> {};

TEST_P(WarpSoftmaxValues, SubtractsTheRowMaxSoHugeLogitsDoNotOverflow) {
  expect_softmax_matches(Variant::kWarpPerRow, huge_logits(GetParam().cols), {3, GetParam().cols});
}
TEST_P(WarpSoftmaxValues, TreatsMinusInfinityAsAMaskedEntry) {
  expect_softmax_matches(Variant::kWarpPerRow, masked_logits(GetParam().cols),
                         {4, GetParam().cols});
}
TEST_P(WarpSoftmaxValues, GivesNaNRowsExactlyWherePyTorchDoes) {
  expect_softmax_matches(Variant::kWarpPerRow, nonfinite_logits(GetParam().cols),
                         {5, GetParam().cols});
}
TEST_P(WarpSoftmaxValues, WorksWhenPointersAreNotAlignedTo16Bytes) {
  const Shape s = GetParam();
  expect_softmax_matches(Variant::kWarpPerRow, random_logits<float>(s, 7), s, /*misalign=*/1);
}
INSTANTIATE_TEST_SUITE_P(Shapes, WarpSoftmaxValues, ::testing::ValuesIn(kRegisterShapes),
                         shape_param_name);

class WarpSoftmaxLimits : public course::GpuTest {};

TEST_F(WarpSoftmaxLimits, RejectsShapesOutsideTheLimits) {
  // The launcher's limits: rows, cols >= 0; cols <= 2^30 (column indices are int inside a row);
  // rows < 2^31 (one warp per row). An empty matrix needs no pointer; 1 x 1 is the first shape
  // inside that does work (y = 1).
  DeviceBuffer<float> x(4), y(4);
  const auto call = [&](std::int64_t rows, std::int64_t cols) {
    return [&x, &y, rows, cols] { d05::softmax_1_warp_per_row(x.data(), y.data(), rows, cols); };
  };
  expect_rejected(call(-1, 4), "softmax_1_warp_per_row(rows = -1)", "rows must be >= 0");
  expect_rejected(call(1, -1), "softmax_1_warp_per_row(cols = -1)", "cols must be >= 0");
  expect_rejected(call(1, (std::int64_t{1} << 30) + 1), "softmax_1_warp_per_row(cols = 2^30 + 1)",
                  "cols must be <= 2^30");
  expect_rejected(call(std::int64_t{1} << 31, 1), "softmax_1_warp_per_row(rows = 2^31)",
                  "rows must be < 2^31");
  COURSE_EXPECT_NO_THROW(
      d05::softmax_1_warp_per_row(static_cast<const float*>(nullptr), nullptr, 0, 4));
  COURSE_EXPECT_NO_THROW(
      d05::softmax_1_warp_per_row(static_cast<const float*>(nullptr), nullptr, 4, 0));
  sync();
  if (HasFailure()) return;
  const Shape one{1, 1};
  expect_softmax_matches(Variant::kWarpPerRow, random_logits<float>(one, 9), one);
}

// ---------------------------------------------------------------- Exercise 2

class LongRowWarpSoftmax : public course::GpuTest,
                           public ::testing::WithParamInterface<ShapeAndDtype> {};

TEST_P(LongRowWarpSoftmax, MatchesTheReferenceOnRandomRows) {
  expect_random_rows_match(Variant::kWarpPerRow, std::get<0>(GetParam()), std::get<1>(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Shapes, LongRowWarpSoftmax,
                         ::testing::Combine(::testing::ValuesIn(kLongShapes), kDtypes),
                         shape_dtype_name);

class LongRowWarpSoftmaxValues : public course::GpuTest,
                                 public ::testing::WithParamInterface<Shape> {};

TEST_P(LongRowWarpSoftmaxValues, SubtractsTheRowMaxSoHugeLogitsDoNotOverflow) {
  expect_softmax_matches(Variant::kWarpPerRow, huge_logits(GetParam().cols), {3, GetParam().cols});
}
TEST_P(LongRowWarpSoftmaxValues, TreatsMinusInfinityAsAMaskedEntry) {
  expect_softmax_matches(Variant::kWarpPerRow, masked_logits(GetParam().cols),
                         {4, GetParam().cols});
}
TEST_P(LongRowWarpSoftmaxValues, GivesNaNRowsExactlyWherePyTorchDoes) {
  expect_softmax_matches(Variant::kWarpPerRow, nonfinite_logits(GetParam().cols),
                         {5, GetParam().cols});
}
TEST_P(LongRowWarpSoftmaxValues, WorksWhenPointersAreNotAlignedTo16Bytes) {
  const Shape s = GetParam();
  expect_softmax_matches(Variant::kWarpPerRow, random_logits<float>(s, 7), s, /*misalign=*/1);
}
INSTANTIATE_TEST_SUITE_P(Shapes, LongRowWarpSoftmaxValues, ::testing::ValuesIn(kLongShapes),
                         shape_param_name);

// ---------------------------------------------------------------- Exercise 3

class BlockSoftmax : public course::GpuTest, public ::testing::WithParamInterface<ShapeAndDtype> {};

TEST_P(BlockSoftmax, MatchesTheReferenceOnRandomRows) {
  expect_random_rows_match(Variant::kBlockPerRow, std::get<0>(GetParam()), std::get<1>(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Shapes, BlockSoftmax,
                         ::testing::Combine(::testing::ValuesIn(kBlockShapes), kDtypes),
                         shape_dtype_name);

class BlockSoftmaxValues : public course::GpuTest, public ::testing::WithParamInterface<Shape> {};

TEST_P(BlockSoftmaxValues, SubtractsTheRowMaxSoHugeLogitsDoNotOverflow) {
  expect_softmax_matches(Variant::kBlockPerRow, huge_logits(GetParam().cols), {3, GetParam().cols});
}
TEST_P(BlockSoftmaxValues, TreatsMinusInfinityAsAMaskedEntry) {
  expect_softmax_matches(Variant::kBlockPerRow, masked_logits(GetParam().cols),
                         {4, GetParam().cols});
}
TEST_P(BlockSoftmaxValues, GivesNaNRowsExactlyWherePyTorchDoes) {
  expect_softmax_matches(Variant::kBlockPerRow, nonfinite_logits(GetParam().cols),
                         {5, GetParam().cols});
}
TEST_P(BlockSoftmaxValues, WorksWhenPointersAreNotAlignedTo16Bytes) {
  const Shape s = GetParam();
  expect_softmax_matches(Variant::kBlockPerRow, random_logits<float>(s, 7), s, /*misalign=*/1);
}
INSTANTIATE_TEST_SUITE_P(Shapes, BlockSoftmaxValues, ::testing::ValuesIn(kBlockShapes),
                         shape_param_name);

// Any block size the launcher accepts must work: one warp, a size that is not a power of two,
// the largest; on rows that fit the block's registers and rows that do not.
class BlockSoftmaxBlockSizes : public course::GpuTest,
                               public ::testing::WithParamInterface<std::tuple<int, std::int64_t>> {
};

TEST_P(BlockSoftmaxBlockSizes, IsCorrectForEveryBlockSize) {
  const auto [threads, cols] = GetParam();
  const Shape s{3, cols};
  expect_softmax_matches(Variant::kBlockPerRow, random_logits<float>(s, 8), s, 0, threads);
}
INSTANTIATE_TEST_SUITE_P(Sizes, BlockSoftmaxBlockSizes,
                         ::testing::Combine(::testing::Values(32, 96, 256, 1024),
                                            ::testing::Values<std::int64_t>(1, 33, 4099, 8192,
                                                                            40000)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "threads_" +
                                  std::to_string(std::get<1>(info.param)) + "cols";
                         });

class BlockSoftmaxLimits : public course::GpuTest {};

TEST_F(BlockSoftmaxLimits, RejectsBlockSizesOutsideTheLimits) {
  // lab.h: block_threads = 0 (the launcher chooses) or a multiple of 32 in [32, 1024]. 16, 48,
  // 1056 and -32 are just outside; 32 and 1024 the first values inside.
  DeviceBuffer<float> x(4), y(4);
  for (const int threads : {16, 48, 1056, -32})
    expect_rejected([&] { d05::softmax_2_block_per_row(x.data(), y.data(), 1, 4, threads); },
                    "softmax_2_block_per_row(block_threads = " + std::to_string(threads) + ")",
                    "block_threads must be 0 or a multiple of 32 in [32, 1024]");
  expect_rejected([&] { d05::softmax_2_block_per_row(x.data(), y.data(), -1, 4); },
                  "softmax_2_block_per_row(rows = -1)", "rows must be >= 0");
  COURSE_EXPECT_NO_THROW(
      d05::softmax_2_block_per_row(static_cast<const float*>(nullptr), nullptr, 0, 4));
  sync();
  if (HasFailure()) return;
  const Shape s{2, 33};
  for (const int threads : {32, 1024}) {
    expect_softmax_matches(Variant::kBlockPerRow, random_logits<float>(s, 10), s, 0, threads);
    if (HasFailure()) return;
  }
}

// =============================================================================================
// Stream compaction (exercises 4-5)

enum class Keep { kNone, kAll, kHalf };
std::string keep_name(Keep k) {
  return k == Keep::kNone ? "KeepNone" : k == Keep::kAll ? "KeepAll" : "KeepHalf";
}
// Inputs are uniform in [-1, 1): these thresholds keep none, all, about half of them.
float threshold_for(Keep k) { return k == Keep::kNone ? 2.0f : k == Keep::kAll ? -2.0f : 0.0f; }

using CompactFn = std::int64_t (*)(const float*, std::int64_t, float, float*);

// Compacts x with `compact`, then checks, in this order: that the count was returned (the
// starter returns -1), that it is right, that the kept elements are the right ones in input
// order (the wrong order gets its own message), and that nothing past the count was written.
void expect_compaction_matches(CompactFn compact, const char* todo, const std::vector<float>& x,
                               float threshold) {
  const std::size_t n = x.size();
  DeviceBuffer<float> dx(x), dout(n);
  dout.poison();
  const std::int64_t count = course::observed(
      compact(dx.data(), static_cast<std::int64_t>(n), threshold, dout.data()), "count");
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto expected = course::reference::compact_greater(course::as_doubles(x), threshold);
  ASSERT_NE(count, -1) << "the compaction returned -1, the launcher's 'not computed' value: the "
                       << "scan kernel never wrote the total. Write the kernels of " << todo << ".";
  ASSERT_EQ(count, static_cast<std::int64_t>(expected.size()))
      << "wrong count of elements > " << threshold << " among n = " << n << ". Check the per-block "
      << "counts (one __popc of each ballot), the tail (elements past n must not vote 'keep'), "
      << "and the scan of the block counts." << course::seed_hint();
  const auto got = dout.read_back(0, static_cast<std::size_t>(count));
  std::vector<double> got_sorted = course::as_doubles(got), expected_sorted = expected;
  std::sort(got_sorted.begin(), got_sorted.end());
  std::sort(expected_sorted.begin(), expected_sorted.end());
  const bool poisoned = std::any_of(got.begin(), got.end(), course::DType<float>::is_poison);
  if (!poisoned && got_sorted == expected_sorted && course::as_doubles(got) != expected) {
    ADD_FAILURE() << "the right elements, in the wrong order: the compaction is not stable. "
                  << "Element k of the output must be the k-th kept element of the input: "
                  << "position = block offset + kept in earlier warps + kept in earlier rounds "
                  << "+ __popc(ballot & lanes below)." << course::seed_hint();
    return;
  }
  course::CompareOptions options;
  options.what = "the kept elements (in input order)";
  COURSE_EXPECT_MATCH(got, expected, options);
  const auto rest = dout.read_back(static_cast<std::size_t>(count));
  const auto written = std::find_if_not(rest.begin(), rest.end(), course::DType<float>::is_poison);
  EXPECT_TRUE(written == rest.end())
      << "out[" << count + (written - rest.begin()) << "] was written, but only out[0, " << count
      << ") holds kept elements: a lane that does not keep its element must not store.";
}

const std::int64_t kCompactSizes[] = {0, 1, 31, 33, 4097, 1000003};
// More than 1024 blocks' tiles of 4096 elements, so that the block-offset scan of the
// three-launch compaction walks the counts in two chunks: a barrier missing between two chunks
// is a race that only such a size, under racecheck, can show. One case per variant (keeping
// about half): each costs about a second of `course check` on the H100.
constexpr std::int64_t kCompactManyBlocks = 1025 * 4096 + 1;

// Uniform inputs in [-1, 1) with a threshold that keeps none, all or about half of them.
void expect_random_compaction_matches(CompactFn compact, const char* todo, std::int64_t n,
                                      Keep keep) {
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(10));
  expect_compaction_matches(compact, todo, x, threshold_for(keep));
}

// Kept and dropped elements alternate, and every kept value is distinct and increasing, so any
// reordering of the output is visible.
void expect_alternating_compaction_matches(CompactFn compact, const char* todo, std::int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    x[static_cast<std::size_t>(i)] = (i % 2 ? 1.0f : -1.0f) * static_cast<float>(i + 1);
  expect_compaction_matches(compact, todo, x, 0.0f);
}

using CompactCase = std::tuple<std::int64_t, Keep>;
std::string compact_case_name(const ::testing::TestParamInfo<CompactCase>& info) {
  return "n" + std::to_string(std::get<0>(info.param)) + "_" + keep_name(std::get<1>(info.param));
}
std::string size_name(const ::testing::TestParamInfo<std::int64_t>& info) {
  return "n" + std::to_string(info.param);
}
const auto kCompactCases = ::testing::Combine(
    ::testing::ValuesIn(kCompactSizes), ::testing::Values(Keep::kNone, Keep::kAll, Keep::kHalf));

// ---------------------------------------------------------------- Exercise 4

class BallotCompaction : public course::GpuTest,
                         public ::testing::WithParamInterface<CompactCase> {};

TEST_P(BallotCompaction, KeepsTheElementsAboveTheThresholdInInputOrder) {
  expect_random_compaction_matches(d05::compact_1_ballot, "TODO(d05.4)", std::get<0>(GetParam()),
                                   std::get<1>(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Sizes, BallotCompaction, kCompactCases, compact_case_name);

class BallotCompactionOrder : public course::GpuTest,
                              public ::testing::WithParamInterface<std::int64_t> {};

TEST_P(BallotCompactionOrder, KeepsInputOrderWhenKeptAndDroppedAlternate) {
  expect_alternating_compaction_matches(d05::compact_1_ballot, "TODO(d05.4)", GetParam());
}
INSTANTIATE_TEST_SUITE_P(Sizes, BallotCompactionOrder, ::testing::ValuesIn(kCompactSizes),
                         size_name);

class BallotCompactionManyBlocks : public course::GpuTest {};

TEST_F(BallotCompactionManyBlocks, KeepsTheElementsAboveTheThresholdPastOneScanChunk) {
  expect_random_compaction_matches(d05::compact_1_ballot, "TODO(d05.4)", kCompactManyBlocks,
                                   Keep::kHalf);
}

// The launcher's limit (n >= 0), then the empty input: nothing to keep, count 0, no pointer.
void expect_compaction_limits(CompactFn compact, const char* name, const char* todo) {
  DeviceBuffer<float> x(4), out(4);
  expect_rejected([&] { compact(x.data(), -1, 0.0f, out.data()); }, std::string(name) + "(n = -1)",
                  "n must be >= 0");
  const std::int64_t count = course::observed(compact(nullptr, 0, 0.0f, nullptr), "count");
  sync();
  EXPECT_EQ(count, 0) << name << " of n = 0 elements returned " << count
                      << ": nothing is kept, so the count is 0"
                      << (count == -1 ? std::string(" (-1: the scan kernel never wrote the total; "
                                                    "it must run, and write 0, even with no "
                                                    "blocks to scan: ") +
                                            todo + ")"
                                      : std::string());
}

class BallotCompactionLimits : public course::GpuTest {};

TEST_F(BallotCompactionLimits, RejectsANegativeSizeAndCountsAnEmptyInputAsZero) {
  expect_compaction_limits(d05::compact_1_ballot, "compact_1_ballot", "TODO(d05.4)");
}

// ---------------------------------------------------------------- Exercise 5

class CooperativeGroupsCompaction : public course::GpuTest,
                                    public ::testing::WithParamInterface<CompactCase> {};

TEST_P(CooperativeGroupsCompaction, KeepsTheElementsAboveTheThresholdInInputOrder) {
  expect_random_compaction_matches(d05::compact_2_cooperative_groups, "TODO(d05.5)",
                                   std::get<0>(GetParam()), std::get<1>(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Sizes, CooperativeGroupsCompaction, kCompactCases, compact_case_name);

class CooperativeGroupsCompactionOrder : public course::GpuTest,
                                         public ::testing::WithParamInterface<std::int64_t> {};

TEST_P(CooperativeGroupsCompactionOrder, KeepsInputOrderWhenKeptAndDroppedAlternate) {
  expect_alternating_compaction_matches(d05::compact_2_cooperative_groups, "TODO(d05.5)",
                                        GetParam());
}
INSTANTIATE_TEST_SUITE_P(Sizes, CooperativeGroupsCompactionOrder,
                         ::testing::ValuesIn(kCompactSizes), size_name);

class CooperativeGroupsCompactionManyBlocks : public course::GpuTest {};

TEST_F(CooperativeGroupsCompactionManyBlocks, KeepsTheElementsAboveTheThresholdPastOneScanChunk) {
  expect_random_compaction_matches(d05::compact_2_cooperative_groups, "TODO(d05.5)",
                                   kCompactManyBlocks, Keep::kHalf);
}

class CooperativeGroupsCompactionLimits : public course::GpuTest {};

TEST_F(CooperativeGroupsCompactionLimits, RejectsANegativeSizeAndCountsAnEmptyInputAsZero) {
  expect_compaction_limits(d05::compact_2_cooperative_groups, "compact_2_cooperative_groups",
                           "TODO(d05.5)");
}

// =============================================================================================
// Counting keys per bucket with __match_any_sync (exercise 6)

enum class Keys { kUniform, kAllEqual, kSortedRuns, kSomeOutOfRange };
std::string keys_name(Keys k) {
  switch (k) {
    case Keys::kUniform:
      return "UniformKeys";
    case Keys::kAllEqual:
      return "AllKeysEqual";
    case Keys::kSortedRuns:
      return "SortedRuns";
    case Keys::kSomeOutOfRange:
      return "SomeKeysOutOfRange";
  }
  return "";
}

std::vector<std::int32_t> make_keys(std::int64_t n, int bins, Keys kind) {
  const auto count = static_cast<std::size_t>(n);
  switch (kind) {
    case Keys::kUniform:
      return course::random_uniform<std::int32_t>(count, course::seed_for(11), 0, bins - 1);
    case Keys::kAllEqual:
      return std::vector<std::int32_t>(count, bins - 1);
    case Keys::kSortedRuns: {  // long runs of one key: whole warps agree
      std::vector<std::int32_t> k(count);
      for (std::size_t i = 0; i < count; ++i) k[i] = static_cast<std::int32_t>(i * bins / count);
      return k;
    }
    case Keys::kSomeOutOfRange:  // -3 ... bins + 2: the out-of-range ones must not be counted
      return course::random_uniform<std::int32_t>(count, course::seed_for(12), -3, bins + 2);
  }
  return {};
}

using CountCase = std::tuple<std::int64_t, int, Keys>;

class MatchKeyCounting : public course::GpuTest, public ::testing::WithParamInterface<CountCase> {};

TEST_P(MatchKeyCounting, CountsEveryKey) {
  const auto [n, bins, kind] = GetParam();
  const auto keys = make_keys(n, bins, kind);
  DeviceBuffer<std::int32_t> dkeys(keys);
  DeviceBuffer<std::uint32_t> counts(static_cast<std::size_t>(bins));
  counts.poison();
  d05::count_keys_1_match(dkeys.data(), n, counts.data(), bins);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  course::CompareOptions options;
  options.what = "counts per key (" + std::to_string(n) + " keys, " + std::to_string(bins) +
                 " bins, " + keys_name(kind) + ")";
  COURSE_EXPECT_MATCH(counts.read_back(),
                      course::reference::count_keys(keys, static_cast<std::size_t>(bins)), options);
}
INSTANTIATE_TEST_SUITE_P(Keys, MatchKeyCounting,
                         ::testing::Values(CountCase{0, 5, Keys::kUniform},
                                           CountCase{1, 1, Keys::kUniform},
                                           CountCase{33, 2, Keys::kUniform},
                                           CountCase{33, 37, Keys::kAllEqual},
                                           CountCase{1000003, 1, Keys::kAllEqual},
                                           CountCase{1000003, 37, Keys::kUniform},
                                           CountCase{1000003, 1024, Keys::kUniform},
                                           CountCase{1000003, 37, Keys::kSortedRuns},
                                           CountCase{1000003, 1024, Keys::kSomeOutOfRange}),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_bins" +
                                  std::to_string(std::get<1>(info.param)) + "_" +
                                  keys_name(std::get<2>(info.param));
                         });

class MatchKeyCountingTwice : public course::GpuTest {};

TEST_F(MatchKeyCountingTwice, OverwritesTheCountsInsteadOfAddingToThem) {
  const int bins = 37;
  const auto keys = make_keys(100003, bins, Keys::kUniform);
  DeviceBuffer<std::int32_t> dkeys(keys);
  DeviceBuffer<std::uint32_t> counts(bins);
  counts.poison();
  d05::count_keys_1_match(dkeys.data(), 100003, counts.data(), bins);
  d05::count_keys_1_match(dkeys.data(), 100003, counts.data(), bins);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  course::CompareOptions options;
  options.what = "counts after two calls (each call must start from zero: clear counts first)";
  COURSE_EXPECT_MATCH(counts.read_back(), course::reference::count_keys(keys, bins), options);
}

class MatchKeyCountingLimits : public course::GpuTest {};

TEST_F(MatchKeyCountingLimits, RejectsNoBinsAndTooManyKeysAndClearsForNoKeys) {
  // lab.h's limits: bins > 0 and n in [0, 2^32) (the counts are uint32), counts never null.
  // bins = 0, n = -1 and n = 2^32 are just outside (nothing is read: the check comes first).
  // n = 0 is inside: no key, so every count is 0, and counts must be cleared all the same.
  DeviceBuffer<std::int32_t> keys(4);
  DeviceBuffer<std::uint32_t> counts(3);
  expect_rejected([&] { d05::count_keys_1_match(keys.data(), 4, counts.data(), 0); },
                  "count_keys_1_match(bins = 0)", "bins must be > 0");
  expect_rejected([&] { d05::count_keys_1_match(keys.data(), -1, counts.data(), 3); },
                  "count_keys_1_match(n = -1)", "n must be >= 0");
  expect_rejected(
      [&] { d05::count_keys_1_match(keys.data(), std::int64_t{1} << 32, counts.data(), 3); },
      "count_keys_1_match(n = 2^32)", "n must be < 2^32: the counts are uint32");
  expect_rejected([&] { d05::count_keys_1_match(keys.data(), 4, nullptr, 3); },
                  "count_keys_1_match(counts = nullptr)", "counts must not be null");
  counts.poison();
  d05::count_keys_1_match(nullptr, 0, counts.data(), 3);
  sync();
  course::CompareOptions options;
  options.what =
      "counts of n = 0 keys (every bin 0: clear counts before anything else, even "
      "with no key to count; TODO d05.6b)";
  COURSE_EXPECT_MATCH(counts.read_back(), std::vector<double>(3, 0.0), options);
}

// =============================================================================================
// 64-bit indices (the *LargeIndex suites): inputs of just over 2^31 elements, where a flat index
// (row * cols + c, a compaction's input index or output position) wraps if any part of it is
// computed in 32 bits. They are filled on the GPU with a pattern the host recomputes at any index
// (course/large.h), and checked where it matters: whole rows at the start, around 2^31 and at the
// end; output positions on both sides of 2^31. They run alone on the GPU (lab.json's
// serial_suites).
constexpr std::int64_t kLargeN = course::kLargeCount;  // 2^31 + 2^24 + 17

// Softmax of [rows, cols] bfloat16 logits in [-8, 8), rows * cols just over 2^31, checked on
// whole sampled rows against the float64 reference of those rows.
void expect_large_softmax(Variant variant, std::int64_t cols) {
  using T = course::bfloat16;
  const std::int64_t rows = course::large_rows(cols), n = rows * cols;
  DeviceBuffer<T> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  const course::Pattern p{course::seed_for(501), -8.0, 8.0};
  course::fill_pattern(x.data(), n, p);
  course::poison_on_device(y.data(), n);
  call_softmax(variant, x.data(), y.data(), {rows, cols}, 0);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto sampled_rows = course::large_sample_rows(rows, cols, course::seed_for(502));
  const auto at = course::indices_of_rows(sampled_rows, cols);
  std::vector<double> xs(at.size()), want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k) xs[k] = course::pattern_double_value<T>(p, at[k]);
  for (std::size_t r = 0; r < sampled_rows.size(); ++r)
    course::reference::softmax_row(xs.data() + r * cols, static_cast<std::size_t>(cols),
                                   want.data() + r * cols);
  course::CompareOptions options;
  options.cols = cols;
  options.what = "softmax of a " + shape_name({rows, cols}) + " bfloat16 matrix (2^31 + " +
                 std::to_string(n - course::kTwoTo31) + " elements; row * cols in 64 bits)";
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data(), n, at), want, at, options);
}

constexpr std::size_t kLargeSoftmaxBytes =
    2 * (course::kLargeCount + 8192) * sizeof(course::bfloat16);  // 8 GiB

class WarpSoftmaxLargeIndex : public course::GpuTest {};

TEST_F(WarpSoftmaxLargeIndex, NormalisesRowsPastTwoToThe31) {
  // 1000 columns: 16-byte vectors; 1001: one element at a time.
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeSoftmaxBytes);
  expect_large_softmax(Variant::kWarpPerRow, 1000);
  if (HasFailure()) return;
  expect_large_softmax(Variant::kWarpPerRow, 1001);
}

class LongRowWarpSoftmaxLargeIndex : public course::GpuTest {};

TEST_F(LongRowWarpSoftmaxLargeIndex, NormalisesRowsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeSoftmaxBytes);
  expect_large_softmax(Variant::kWarpPerRow, 4096);
  if (HasFailure()) return;
  expect_large_softmax(Variant::kWarpPerRow, 4099);
}

class BlockSoftmaxLargeIndex : public course::GpuTest {};

TEST_F(BlockSoftmaxLargeIndex, NormalisesRowsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeSoftmaxBytes);
  expect_large_softmax(Variant::kBlockPerRow, 8192);
  if (HasFailure()) return;
  expect_large_softmax(Variant::kBlockPerRow, 8191);
}

// Compaction of n = 2^31 + 2^24 + 17 floats from the pattern in [-1, 1) with three of them set to
// -3 (around the start and on both sides of 2^31) and the threshold -2: every other element is
// kept, so out[k] is x[k], x[k + 1], x[k + 2] or x[k + 3] depending on how many dropped elements
// come before it, and more than 2^31 elements are written: the output positions pass 2^31 too.
void expect_large_compaction(CompactFn compact, const char* todo) {
  const std::int64_t n = kLargeN;
  const std::vector<std::int64_t> dropped = {5, course::kTwoTo31 - 2, course::kTwoTo31 + 3};
  DeviceBuffer<float> x(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
  const course::Pattern p{course::seed_for(511), -1.0, 1.0};
  course::fill_pattern(x.data(), n, p);
  const float minus_three = -3.0f;
  for (const std::int64_t i : dropped)
    COURSE_CUDA_CHECK(
        cudaMemcpy(x.data() + i, &minus_three, sizeof(float), cudaMemcpyHostToDevice));
  course::poison_on_device(out.data(), n);
  const std::int64_t count = course::observed(compact(x.data(), n, -2.0f, out.data()), "count");
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto expected = n - static_cast<std::int64_t>(dropped.size());
  ASSERT_NE(count, -1) << "the compaction returned -1, the launcher's 'not computed' value: the "
                       << "scan kernel never wrote the total. Write the kernels of " << todo << ".";
  ASSERT_EQ(count, expected)
      << "wrong count for n = 2^31 + 2^24 + 17 elements of which all but 3 are kept: the per-block "
      << "counts, their scan or the total lost elements past 2^31 (block offsets and the total "
      << "must be int64_t)";
  const auto at = course::large_sample_indices(count, course::seed_for(512));
  std::vector<double> want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k) {
    std::int64_t i = at[k];  // the at[k]-th kept element is x[i]
    for (const std::int64_t d : dropped)
      if (d <= i) ++i;
    want[k] = course::pattern_double_value<float>(p, i);
  }
  course::CompareOptions options;
  options.tolerance = {0.0, 0.0};
  options.what = std::string("the kept elements of n = 2^31 + 2^24 + 17 (") + todo +
                 ": input indices and output positions in 64 bits)";
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(out.data(), n, at), want, at, options);
  // Nothing at or past the count: the three last positions keep their poison.
  const auto rest = course::gather(out.data(), n, {count, count + 1, count + 2});
  for (const float v : rest)
    EXPECT_TRUE(course::DType<float>::is_poison(v))
        << "out[" << count << " ...] was written, but only out[0, count) holds kept elements";
}

constexpr std::size_t kLargeCompactionBytes = 2 * kLargeN * sizeof(float) + (64u << 20);  // 16 GiB

class BallotCompactionLargeIndex : public course::GpuTest {};

TEST_F(BallotCompactionLargeIndex, KeepsElementsPastTwoToThe31InInputOrder) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeCompactionBytes);
  expect_large_compaction(d05::compact_1_ballot, "TODO(d05.4)");
}

class CooperativeGroupsCompactionLargeIndex : public course::GpuTest {};

TEST_F(CooperativeGroupsCompactionLargeIndex, KeepsElementsPastTwoToThe31InInputOrder) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeCompactionBytes);
  expect_large_compaction(d05::compact_2_cooperative_groups, "TODO(d05.5)");
}

class MatchKeyCountingLargeIndex : public course::GpuTest {};

TEST_F(MatchKeyCountingLargeIndex, CountsKeysPastTwoToThe31) {
  // keys[i] = (i / 37) % 1000: runs of 37 equal keys (one or two keys per warp), every bin
  // counted about 2^31 / 1000 times, and the counts follow from the formula.
  const std::int64_t n = kLargeN, period = 1000, run = 37;
  const int bins = 1000;
  COURSE_SKIP_UNLESS_GPU_MEMORY(static_cast<std::size_t>(n) * sizeof(std::int32_t));  // 8 GiB
  DeviceBuffer<std::int32_t> keys(static_cast<std::size_t>(n));
  DeviceBuffer<std::uint32_t> counts(static_cast<std::size_t>(bins));
  course::fill_cyclic(keys.data(), n, 0, period, run);
  counts.poison();
  d05::count_keys_1_match(keys.data(), n, counts.data(), bins);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> want(static_cast<std::size_t>(bins));
  for (int b = 0; b < bins; ++b)
    want[static_cast<std::size_t>(b)] =
        static_cast<double>(course::cyclic_count(n, b, period, run));
  course::CompareOptions options;
  options.what =
      "counts per key of n = 2^31 + 2^24 + 17 keys (TODO d05.6: the key index in 64 bits; "
      "keys past 2^31 land in bins " +
      std::to_string((course::kTwoTo31 / run) % period) + " and up)";
  COURSE_EXPECT_MATCH(counts.read_back(), want, options);
}

// =============================================================================================
// Rounding (the *Rounding suites): softmax is computed in float32 and each probability rounded
// once to the NEAREST 16-bit value (course::from_float). Truncating is off by at most one step,
// which the tolerances allow; course::check_rounding asks for the exact value wherever the
// float32 result cannot have crossed a rounding midpoint. The float32 error bound, relative to
// each probability: x - max and expf (about 20 ulps for exponents down to -16), the sum of the
// row's exponentials (one ulp per value a lane adds in turn: at most cols / 32, plus the
// shuffle and block trees), the reciprocal and the product; doubled, and 256 ulps to spare.
double softmax_float_error(std::int64_t cols) {
  return (2.0 * static_cast<double>(cols) / 32.0 + 256.0) * 0x1p-24;
}

template <class T>
void expect_softmax_rounded_to_nearest(Variant variant, Shape s) {
  const auto x = random_logits<T>(s, 21);
  DeviceBuffer<T> dx(x), dy(x.size());
  dy.poison();
  call_softmax(variant, dx.data(), dy.data(), s, 0);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = dy.read_back();
  const auto want = course::reference::softmax_rows(
      course::as_doubles(x), static_cast<std::size_t>(s.rows), static_cast<std::size_t>(s.cols));
  course::CompareOptions options;
  options.cols = s.cols;
  options.what = "softmax of a " + shape_name(s) + " " + course::DType<T>::name + " matrix";
  COURSE_EXPECT_MATCH(got, want, options);
  if (::testing::Test::HasFailure()) return;
  const course::RoundingCheck c =
      course::check_rounding(got, want, softmax_float_error(s.cols), options);
  EXPECT_TRUE(c.ok) << c.message << course::seed_hint();
  EXPECT_GT(c.checked, got.size() / 2) << "only " << c.checked << " of " << got.size()
                                       << " elements could be checked: the test's bound is too "
                                          "wide for this dtype";
}

void expect_softmax_rounded_to_nearest(Variant variant, Shape s, Dtype d) {
  if (d == Dtype::kFloat16) return expect_softmax_rounded_to_nearest<course::half>(variant, s);
  expect_softmax_rounded_to_nearest<course::bfloat16>(variant, s);
}

const auto k16BitDtypes = ::testing::Values(Dtype::kFloat16, Dtype::kBFloat16);
std::string dtype_only_name(const ::testing::TestParamInfo<Dtype>& info) {
  return dtype_name(info.param);
}

class WarpSoftmaxRounding : public course::GpuTest, public ::testing::WithParamInterface<Dtype> {};

TEST_P(WarpSoftmaxRounding, RoundsEachProbabilityToTheNearest16BitValue) {
  expect_softmax_rounded_to_nearest(Variant::kWarpPerRow, {37, 1000}, GetParam());
  if (HasFailure()) return;
  expect_softmax_rounded_to_nearest(Variant::kWarpPerRow, {37, 1001}, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Dtypes, WarpSoftmaxRounding, k16BitDtypes, dtype_only_name);

class LongRowWarpSoftmaxRounding : public course::GpuTest,
                                   public ::testing::WithParamInterface<Dtype> {};

TEST_P(LongRowWarpSoftmaxRounding, RoundsEachProbabilityToTheNearest16BitValue) {
  expect_softmax_rounded_to_nearest(Variant::kWarpPerRow, {8, 4096}, GetParam());
  if (HasFailure()) return;
  expect_softmax_rounded_to_nearest(Variant::kWarpPerRow, {8, 4099}, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Dtypes, LongRowWarpSoftmaxRounding, k16BitDtypes, dtype_only_name);

class BlockSoftmaxRounding : public course::GpuTest, public ::testing::WithParamInterface<Dtype> {};

TEST_P(BlockSoftmaxRounding, RoundsEachProbabilityToTheNearest16BitValue) {
  expect_softmax_rounded_to_nearest(Variant::kBlockPerRow, {8, 8192}, GetParam());
  if (HasFailure()) return;
  expect_softmax_rounded_to_nearest(Variant::kBlockPerRow, {8, 8191}, GetParam());
  if (HasFailure()) return;
  expect_softmax_rounded_to_nearest(Variant::kBlockPerRow, {8, 40000}, GetParam());  // streamed
}
INSTANTIATE_TEST_SUITE_P(Dtypes, BlockSoftmaxRounding, k16BitDtypes, dtype_only_name);

}  // namespace
