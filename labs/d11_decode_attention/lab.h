// Day 11 — decode attention over a paged KV cache, with split-KV (flash-decoding).
//
// The interface the tests and the benchmark call. Pointers are device pointers unless a comment
// says "host"; every function checks its arguments and throws course::InvalidArgument (a
// message, never an illegal address) or course::CudaError. Work is queued on the default
// stream. Exercises are numbered as in README.md.
//
// Decoding: each of `batch` sequences has ONE new query token, which attends to every token of
// its own KV cache (the new token's K/V already appended). For sequence b, query head h:
//   o[b, h, :] = sum_j softmax_j(scale * q[b, h, :] . K_b[j, g(h), :]) * V_b[j, g(h), :]
//   lse[b, h]  = log(sum_j exp(scale * q[b, h, :] . K_b[j, g(h), :]))        (natural log)
// with grouped-query attention: num_qo_heads = ratio * num_kv_heads, query head h reads KV head
// g(h) = h / ratio (the `ratio` query heads of a group share one KV head).
//
// Tensors:
//   q        [batch, num_qo_heads, head_dim]              half or bfloat16
//   k_cache  [num_pages, page_size, num_kv_heads, head_dim] (FlashInfer's "NHD" layout), and
//   v_cache  the same, separately: token `slot` of page `p`, head `g` starts at element
//            ((p * page_size + slot) * num_kv_heads + g) * head_dim
//   o        [batch, num_qo_heads, head_dim]              the dtype of q
//   lse      [batch, num_qo_heads]                        float32
// head_dim is 64 or 128; q, k_cache, v_cache and o 16-byte aligned (rows move in 16-byte chunks).
//
// The page table (lesson §3) is CSR, as FlashInfer keeps it, and lives on the HOST in a
// PageTable: sequence b owns pages page_indices[indptr[b] .. indptr[b + 1]), in token order,
// every page full but the last, which holds last_page_len[b] tokens (1 .. page_size), so
//   len(b) = (indptr[b + 1] - indptr[b] - 1) * page_size + last_page_len[b].
// Pages may be in any order in the cache and may be shared by several sequences (a common
// prefix).
//
// Plan once, run many times (FlashInfer's plan()/run() split). All the O(pages) host work
// happens once per table, outside the decode loop: upload_paged_kv() validates the table
// (Exercise 1, before it allocates anything) and copies it to the device; plan_decode() checks
// the head ratio, picks the number of splits and allocates the split-KV workspace. A launch,
// decode_attention(args, kv, plan), then does O(1) host work: it checks that kv came from a
// successful upload and plan from plan_decode() for that kv, that the shapes agree and the
// workspace is big enough, and launches: no loop over pages, no allocation, no copy, no
// synchronisation. The guarantee stays: an index out of range is a message at upload, never an
// illegal address, because a PagedKv's table can't change behind its back: its members are
// private, set only by upload_paged_kv(), and its device copy is never written after the upload
// (the kernels only read it; no function hands out a writable pointer). To change the table,
// upload a new PagedKv (and plan again).
#pragma once

#include <cstdint>
#include <vector>

#include "course/buffer.h"
#include "course/dtype.h"

namespace d11 {

using course::bfloat16;
using course::half;

// The shape of one layer's paged cache (K and V each).
struct CacheShape {
  std::int64_t num_pages = 0;
  int page_size = 16;  // tokens per page: any value >= 1 (the tests use 16 and 1)
  int num_kv_heads = 0;
  int head_dim = 0;  // 64 or 128
};

// The page table of a batch, on the host (see the top of this file).
struct PageTable {
  std::vector<std::int32_t> indptr;         // [batch + 1]
  std::vector<std::int32_t> page_indices;   // [indptr[batch]]
  std::vector<std::int32_t> last_page_len;  // [batch]
  int batch() const { return static_cast<int>(last_page_len.size()); }
};

// Tokens in sequence b of a (valid) table.
std::int64_t sequence_length(const PageTable& table, int page_size, int b);

// ------------------------------------------------------------------------------------------
// Exercise 1 — validate everything the kernels will trust (lesson §3.3), on the host, before
// anything reaches the GPU. Throws course::InvalidArgument with a message naming the problem:
// a shape the kernels do not support (page_size < 1, num_pages < 1, num_kv_heads < 1, head_dim
// not 64 or 128), num_qo_heads not a positive multiple of num_kv_heads, a batch < 1, an indptr
// of the wrong size, not starting at 0, decreasing, or not ending at page_indices.size(), a
// sequence with no page, a page index < 0 or >= num_pages, a last_page_len outside
// 1 .. page_size, a sequence of 2^31 tokens or more.
void validate_decode(const CacheShape& shape, const PageTable& table, int num_qo_heads);

// The page table, validated and on the device: made only by upload_paged_kv(), read-only after
// (see the top of this file). A default-constructed PagedKv is "not uploaded" and every launch
// refuses it. Move-only (it owns device memory).
class PagedKv {
 public:
  PagedKv() = default;
  bool uploaded() const { return id_ != 0; }
  std::uint64_t id() const { return id_; }  // unique per successful upload; 0: not uploaded
  const CacheShape& shape() const { return shape_; }
  int batch() const { return batch_; }
  std::int64_t max_len() const { return max_len_; }  // the longest sequence, in tokens
  std::int64_t num_page_entries() const { return num_page_entries_; }
  const std::int32_t* indptr() const { return indptr_.data(); }  // device, [batch + 1]
  const std::int32_t* page_indices() const { return page_indices_.data(); }
  const std::int32_t* last_page_len() const { return last_page_len_.data(); }

 private:
  friend PagedKv upload_paged_kv(const CacheShape& shape, const PageTable& table);
  std::uint64_t id_ = 0;
  CacheShape shape_;
  int batch_ = 0;
  std::int64_t max_len_ = 0;
  std::int64_t num_page_entries_ = 0;
  course::DeviceBuffer<std::int32_t> indptr_, page_indices_, last_page_len_;
};
// Validates the table with validate_decode(shape, table, shape.num_kv_heads) (the head ratio is
// checked by plan_decode) BEFORE touching the GPU, then copies it to the device: a bad table
// throws course::InvalidArgument and nothing is allocated.
PagedKv upload_paged_kv(const CacheShape& shape, const PageTable& table);

// ------------------------------------------------------------------------------------------
// Exercise 3 — split-KV (lesson §6). With num_splits = S > 1, sequence b's tokens are cut into
// S contiguous ranges of at most ceil(len / S) tokens; split s covers [begin, end). A short
// sequence may leave the last splits empty (begin == end == len). A pure function (the kernel
// calls the same code): tested without a GPU.
struct SplitRange {
  std::int64_t begin = 0, end = 0;
};
SplitRange split_range(std::int64_t len, int num_splits, int split);

// How many splits plan_decode() picks when asked for kAutoSplits (given, lesson §6.3): as many
// as fit the blocks (batch * num_kv_heads * splits) in one wave of kWaveBlocksPerSm blocks per
// SM (the residency of the ratio 1 and 4 kernels), but no split shorter than kMinSplitTokens
// tokens of the longest sequence, at most kMaxSplits, and 1 when the batch alone fills the wave.
constexpr int kAutoSplits = 0;
constexpr int kWaveBlocksPerSm = 4;
constexpr int kMaxSplits = 128;
constexpr std::int64_t kMinSplitTokens = 256;
int choose_num_splits(int batch, int num_kv_heads, std::int64_t max_len, int sm_count);

// The float32 scratch of split-KV: partial o [batch, num_qo_heads, S, head_dim] and partial lse
// [batch, num_qo_heads, S]. Allocated by plan_decode() (empty when S = 1).
struct DecodeWorkspace {
  course::DeviceBuffer<float> partial_o, partial_lse;
};

// The plan of the launches for one PagedKv and one head count (plan()/run(): see the top of this
// file). plan_decode() checks num_qo_heads against the cache's KV heads (a positive multiple,
// ratio 1, 4 or 8: the compiled group sizes) and num_splits (kAutoSplits, or 1 .. kMaxSplits),
// resolves kAutoSplits with choose_num_splits() on this GPU, and allocates the workspace. Reuse
// one plan for every decode step of the same table; one plan per stream (the workspace is
// scratch).
struct DecodePlan {
  std::uint64_t kv_id = 0;  // the PagedKv::id() it was made for; 0: not a plan
  int batch = 0;
  int num_qo_heads = 0;
  int head_dim = 0;
  int num_splits = 1;  // resolved: 1 .. kMaxSplits
  DecodeWorkspace workspace;
};
DecodePlan plan_decode(const PagedKv& kv, int num_qo_heads, int num_splits = kAutoSplits);

// ------------------------------------------------------------------------------------------
// Exercises 2 and 3 — decode attention (lesson §4-§6). One block per (sequence, KV head,
// split) computes every query head of the KV head's group, so each K/V byte is read once.
// The plan says how many splits (1: no split, the block writes o and lse itself; > 1: partial
// results to plan.workspace, merged by a second kernel). scale is the softmax scale (usually
// 1 / sqrt(head_dim)). O(1) host work per call (see the top of this file).
template <class T>
struct DecodeArgs {
  const T* q = nullptr;        // [batch, num_qo_heads, head_dim]
  const T* k_cache = nullptr;  // [num_pages, page_size, num_kv_heads, head_dim]
  const T* v_cache = nullptr;  // the same shape
  T* o = nullptr;              // [batch, num_qo_heads, head_dim]
  float* lse = nullptr;        // [batch, num_qo_heads]
  int num_qo_heads = 0;
  float scale = 0.0f;
};
void decode_attention(const DecodeArgs<half>& args, const PagedKv& kv, DecodePlan& plan);
void decode_attention(const DecodeArgs<bfloat16>& args, const PagedKv& kv, DecodePlan& plan);

}  // namespace d11
