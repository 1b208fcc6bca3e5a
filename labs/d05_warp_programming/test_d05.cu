// Day 5 tests. Each suite is one exercise of README.md; each test runs in its own process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "course/buffer.h"
#include "course/random.h"
#include "course/reference/compaction.h"
#include "course/reference/softmax.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::DeviceBuffer;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

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
// with the float64 reference computed from the very values the GPU saw.
template <class T>
void expect_softmax_matches(Variant variant, const std::vector<T>& x, Shape s,
                            std::size_t misalign = 0, int block_threads = 0) {
  DeviceBuffer<T> dx(x.size() + misalign), dy(x.size() + misalign);
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
      dy.download(misalign, x.size()),
      course::reference::softmax_rows(course::as_doubles(x), static_cast<std::size_t>(s.rows),
                                      static_cast<std::size_t>(s.cols)),
      options);
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
  const std::int64_t count =
      compact(dx.data(), static_cast<std::int64_t>(n), threshold, dout.data());
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto expected = course::reference::compact_greater(course::as_doubles(x), threshold);
  ASSERT_NE(count, -1) << "the compaction returned -1, the launcher's 'not computed' value: the "
                       << "scan kernel never wrote the total. Write the kernels of " << todo << ".";
  ASSERT_EQ(count, static_cast<std::int64_t>(expected.size()))
      << "wrong count of elements > " << threshold << " among n = " << n << ". Check the per-block "
      << "counts (one __popc of each ballot), the tail (elements past n must not vote 'keep'), "
      << "and the scan of the block counts." << course::seed_hint();
  const auto got = dout.download(0, static_cast<std::size_t>(count));
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
  const auto rest = dout.download(static_cast<std::size_t>(count));
  const auto written = std::find_if_not(rest.begin(), rest.end(), course::DType<float>::is_poison);
  EXPECT_TRUE(written == rest.end())
      << "out[" << count + (written - rest.begin()) << "] was written, but only out[0, " << count
      << ") holds kept elements: a lane that does not keep its element must not store.";
}

const std::int64_t kCompactSizes[] = {0, 1, 31, 33, 4097, 1000003};

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
  COURSE_EXPECT_MATCH(counts.download(),
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
  COURSE_EXPECT_MATCH(counts.download(), course::reference::count_keys(keys, bins), options);
}

}  // namespace
