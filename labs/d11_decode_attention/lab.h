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
// prefix). upload_paged_kv() validates the table (Exercise 1) and copies it to the device once;
// the launcher validates the host copy it holds again at every call (a few microseconds of host
// work for thousands of pages), so a table the kernel reads has always been checked: an index
// out of range is a message, never an illegal address. The host and device copies are made
// together and never change: to change the table, upload a new PagedKv.
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
// 1 .. page_size.
void validate_decode(const CacheShape& shape, const PageTable& table, int num_qo_heads);

// The page table, validated (for num_qo_heads = num_kv_heads: the head ratio is checked again
// at each launch) and on the device. Given: made by upload_paged_kv().
struct PagedKv {
  CacheShape shape;
  PageTable table;  // the host copy the launcher validates
  course::DeviceBuffer<std::int32_t> indptr, page_indices, last_page_len;  // device copies
  std::int64_t max_len = 0;                                                // longest sequence
};
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

// How many splits the launcher uses when asked for kAutoSplits (given, lesson §6.3): enough
// blocks (batch * num_kv_heads * splits) to fill every SM twice over, but no split shorter than
// kMinSplitTokens tokens of the longest sequence, and at most kMaxSplits.
constexpr int kAutoSplits = 0;
constexpr int kMaxSplits = 128;
constexpr std::int64_t kMinSplitTokens = 256;
int choose_num_splits(int batch, int num_kv_heads, std::int64_t max_len, int sm_count);

// The float32 scratch of split-KV: partial o [batch, num_qo_heads, S, head_dim] and partial lse
// [batch, num_qo_heads, S]. The launcher grows it when a call needs more; keep one per stream
// and reuse it (a benchmark allocates once).
struct DecodeWorkspace {
  course::DeviceBuffer<float> partial_o, partial_lse;
};

// ------------------------------------------------------------------------------------------
// Exercises 2 and 3 — decode attention (lesson §4-§6). One block per (sequence, KV head,
// split) computes every query head of the KV head's group, so each K/V byte is read once.
// num_splits: kAutoSplits (choose_num_splits), or a number 1 .. kMaxSplits (1: no split, the
// block writes o and lse itself; > 1: partial results to `workspace`, merged by a second
// kernel). scale is the softmax scale (usually 1 / sqrt(head_dim)).
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
void decode_attention(const DecodeArgs<half>& args, const PagedKv& kv, DecodeWorkspace& workspace,
                      int num_splits = kAutoSplits);
void decode_attention(const DecodeArgs<bfloat16>& args, const PagedKv& kv,
                      DecodeWorkspace& workspace, int num_splits = kAutoSplits);

}  // namespace d11
