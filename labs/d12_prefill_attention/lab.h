// Day 12 — FlashAttention-2-style prefill attention.
//
// The interface the tests and the benchmark call. Pointers are device pointers; every launcher
// checks its arguments and throws course::InvalidArgument (a message, never an illegal address)
// or course::CudaError. Work is queued on the default stream; the launchers return before it
// finishes. Exercises are numbered as in README.md.
//
// Prefill attention over a variable-length ("ragged", packed) batch, as FlashAttention's varlen
// API lays it out. Sequence b owns query rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1 and
// key/value rows cu_seqlens_kv[b] .. cu_seqlens_kv[b + 1] - 1:
//   q   [total_q,  num_heads,    head_dim]   bfloat16 or float16, row-major (dense, packed)
//   k   [total_kv, num_kv_heads, head_dim]   same dtype
//   v   [total_kv, num_kv_heads, head_dim]   same dtype
//   o   [total_q,  num_heads,    head_dim]   same dtype
//   lse [num_heads, total_q]                 float32, head-major (FlashAttention 2's varlen
//                                            layout): lse[h * total_q + i] for query row i
// For query row i of sequence b and head h (its KV head is h / (num_heads / num_kv_heads):
// grouped-query attention, every group of num_heads / num_kv_heads query heads shares one):
//   s_j = scale * q_i . k_j  over the visible keys j of sequence b
//   lse = log(sum_j exp(s_j))            (natural log)
//   o   = sum_j exp(s_j - lse) v_j
// Causal masking aligns the ENDS of the query and key ranges ("bottom-right", as FlashAttention
// 2 and FlashInfer do): query i (0-based in its sequence) sits at key position
// i + len_kv - len_q and sees keys 0 .. i + len_kv - len_q. With len_q == len_kv that is the
// usual lower triangle; with len_q < len_kv (a chunk of new tokens after a cached prefix) every
// query sees the whole prefix. With len_q > len_kv the first len_q - len_kv queries see NO key:
// such a fully masked row (and every row of a sequence with len_kv == 0) gets o = 0 and
// lse = -inf (the log of an empty sum; FlashInfer's convention, course/reference/attention.h).
//
// Requirements: head_dim 64 or 128; num_heads a multiple of num_kv_heads; q, k, v, o 16-byte
// aligned (every row then starts on a 16-byte boundary: the copies move 16-byte chunks);
// scale > 0 and finite. cu_seqlens_* are device arrays of batch + 1 non-decreasing int32 values
// starting at 0 and ending at total_q / total_kv, and max_seqlen_q >= every len_q: the launcher
// cannot read device memory without waiting for the GPU, so it trusts them (as FlashAttention
// does). batch == 0, max_seqlen_q == 0 or total_q == 0 launches nothing.
#pragma once

#include <cstdint>

#include "course/dtype.h"

namespace d12 {

using course::bfloat16;
using course::half;

// Everything one call needs (more than six arguments: a struct, as ThunderKittens does).
template <class T>
struct PrefillArgs {
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  T* o = nullptr;
  float* lse = nullptr;
  const std::int32_t* cu_seqlens_q = nullptr;   // device, [batch + 1]
  const std::int32_t* cu_seqlens_kv = nullptr;  // device, [batch + 1]
  int batch = 0;
  std::int64_t total_q = 0, total_kv = 0;
  int max_seqlen_q = 0;  // the longest query range: the grid covers it
  int num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 0.0f;  // usually 1 / sqrt(head_dim)
  bool causal = false;
};

// The block's tiles: kBlockM query rows per block; kBlockN key rows per K/V tile (64 for head dim
// 128, 128 for head dim 64: the same 16 KiB per tile).
constexpr int kBlockM = 128;
constexpr int block_n(int head_dim) { return head_dim == 128 ? 64 : 128; }

// ------------------------------------------------------------------------------------------
// Exercise 1 — which key tiles a block of query rows visits (lesson §4). Pure arithmetic, the
// same function the kernel calls, checked on the host. For the query rows q0 .. q0 + block_m - 1
// (q0 < len_q; rows >= len_q are padding and need nothing) of a sequence with len_q queries and
// len_kv keys, cut into key tiles of block_n:
//   tiles         the number of key tiles the block must visit: tiles 0 .. tiles - 1 hold every
//                 key some row of the block sees, and none after them does (with the causal
//                 mask the tiles past the last row's diagonal are SKIPPED, never loaded); 0 when
//                 no row of the block sees any key
//   first_masked  the first tile in which some (row, key) pair of the block is NOT visible (a
//                 key past len_kv in the last, partial tile, or above the causal diagonal):
//                 tiles before it need no mask at all; tiles <= first_masked <= tiles (== tiles:
//                 no visited tile needs the mask)
struct KvTileRange {
  int tiles = -1;
  int first_masked = -1;
};
KvTileRange kv_tile_range(int q0, int len_q, int len_kv, bool causal, int block_m, int block_n);

// Exercise 2 — the XOR swizzle of a shared-memory tile (lesson §5). A tile of rows of
// chunks_per_row 16-byte chunks (8 or 16: head dim 64 or 128) is stored row after row, but chunk c
// of row r goes to position c ^ (r % 8) within its row, so that the 8 rows one ldmatrix reads at
// the same logical chunk land in 8 different bank groups. Returns the chunk's index in the tile
// (r * chunks_per_row + its position in the row).
int swizzled_chunk(int row, int chunk, int chunks_per_row);

// ------------------------------------------------------------------------------------------
// Exercises 3-5 — the FlashAttention-2-style kernel on mma.sync (lesson §3, §6-§8): blocks of
// kBlockM query rows (4 warps of 32 rows, two m16 tiles each), K/V tiles double-buffered through
// swizzled shared memory by cp.async, S = Q K^T and O = P V on Tensor Cores (mma.sync.m16n8k16,
// float32 accumulation), the online softmax in registers.
void prefill_1_mma(const PrefillArgs<bfloat16>& args);
void prefill_1_mma(const PrefillArgs<half>& args);

// ------------------------------------------------------------------------------------------
// Exercise 6 — Hopper (lesson §9): the same attention with the Tensor Memory Accelerator loading
// the tiles and wgmma computing both products, one producer warpgroup and two consumer
// warpgroups on mbarriers. Head dim 128 only. Compute capability 9.0 only (the kernel is
// compiled for sm_90a): elsewhere the launcher throws course::InvalidArgument. Every wait on an
// mbarrier gives up after kMbarrierTimeoutNs and records it; check_mbarrier_timeouts() waits for
// the GPU and throws std::runtime_error saying so, if any kernel since the last call gave up.
constexpr long long kMbarrierTimeoutNs = 1000000000;  // 1 s: a tile takes microseconds

// Exercise 6a — the 64-bit wgmma matrix descriptor of a 128-byte-swizzled tile at shared-memory
// address smem_address, with the given leading and stride byte offsets (the function the kernel
// calls; checked on the host).
std::uint64_t wgmma_descriptor(std::uint32_t smem_address, std::uint32_t leading_bytes,
                               std::uint32_t stride_bytes);
void prefill_2_wgmma(const PrefillArgs<bfloat16>& args);
void prefill_2_wgmma(const PrefillArgs<half>& args);
void check_mbarrier_timeouts();

}  // namespace d12
