// Day 9 — Tensor Core programming: WMMA, mma.sync, ldmatrix, swizzled shared memory, wgmma.
//
// The interface the tests and the benchmark call. Pointers are device pointers; every launcher
// checks its arguments and throws course::InvalidArgument (a message, never an illegal address)
// or course::CudaError. Work is queued on the default stream. Exercises are numbered as in
// README.md.
//
// One convention for every matrix product of the day (lesson §2):
//   C[m, n] = sum_k A[m, k] * B(k, n)
//   A  [M, K] row-major                     (rows of A are contiguous along K)
//   B  stored [N, K] row-major: B(k, n) = B[n * K + k], i.e. B "column-major", contiguous along
//      K like A. This is what mma.sync's ".row.col" and ldmatrix without .trans want, and the
//      layout of a weight matrix kept as [out_features, in_features].
//   C  [M, N] row-major, float32 (accumulated in float32 and stored without rounding)
// The float64 reference is course::reference::gemm with BLayout::kColMajor.
#pragma once

#include <cstdint>

#include "course/dtype.h"

namespace d09 {

using course::bfloat16;
using course::half;

// ------------------------------------------------------------------------------------------
// Exercise 1 — WMMA (lesson §3). One warp per 16x16 tile of C, nvcuda::wmma fragments of
// 16x16x16, float32 accumulation. M, N and K must be multiples of 16 (the launcher says so
// otherwise), and A, B, C 32-byte aligned (what wmma::load_matrix_sync asks for).
constexpr int kWmmaTile = 16;
void wmma_gemm_f16(const half* A, const half* B, float* C, std::int64_t M, std::int64_t N,
                   std::int64_t K);
void wmma_gemm_bf16(const bfloat16* A, const bfloat16* B, float* C, std::int64_t M, std::int64_t N,
                    std::int64_t K);

// ------------------------------------------------------------------------------------------
// Exercise 2 — the fragment layouts of mma.sync.m16n8k16 (lesson §4). Which elements of the
// tiles lane `lane` (0..31) holds:
//   A 16x16 (row, col = k):  elements a0..a7, two per 32-bit register (a0 a1 | a2 a3 | ...)
//   B 16x8  (row = k, col = n):  elements b0..b3, two per register (b0 b1 | b2 b3)
//   C 16x8  (row, col = n):  float32 elements c0..c3, one per register
// Pure host functions (the kernels use the same code on the device): tested without a GPU.
// Unwritten, they return {-1, -1}.
struct FragCoord {
  int row;
  int col;
};
FragCoord mma_a_coord(int lane, int element);  // element 0..7
FragCoord mma_b_coord(int lane, int element);  // element 0..3
FragCoord mma_c_coord(int lane, int element);  // element 0..3

// ------------------------------------------------------------------------------------------
// Exercise 3 — one mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 by one warp
// (lesson §4.3): C [16, 8] = A [16, 16] * B, A row-major, B stored [8, 16] (n, k) as above, C
// row-major float32. Each lane loads its fragments from global memory with the maps of
// Exercise 2, and stores its part of C the same way.
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
void mma_16x8x16_bf16(const bfloat16* A, const bfloat16* B, float* C);
void mma_16x8x16_f16(const half* A, const half* B, float* C);

// ------------------------------------------------------------------------------------------
// Exercise 4 — ldmatrix (lesson §5). One warp copies `count` (1, 2 or 4) 8x8 matrices of 16-bit
// values from `src` (matrix j, row r, column c at src[64 j + 8 r + c]) to shared memory, loads
// them with ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16, and writes every lane's
// registers out unchanged: out[lane * count + j] = the lane's register j (32 bits: two 16-bit
// values, the lower-addressed one in the low half). out has 32 * count elements.
void ldmatrix_dump(const std::uint16_t* src, std::uint32_t* out, int count, bool trans);

// ------------------------------------------------------------------------------------------
// Exercise 5 — swizzled shared memory for ldmatrix (lesson §6). A tile of rows of `row_bytes`
// (64 or 128) bytes, cut in 16-byte chunks: the chunk `chunk` of row `row` is stored at chunk
// swizzle_chunk(row, chunk, row_bytes) of that row (an XOR of chunk bits with row bits), so
// that the 8 rows one ldmatrix phase reads at the same logical chunk fall in 8 different
// 16-byte bank groups. A pure host function (the kernels use the same code): tested without a
// GPU. Unwritten, it returns -1.
int swizzle_chunk(int row, int chunk, int row_bytes);

// The GPU side: a [16, row_bytes / 2] tile of 16-bit values (row-major in `src`) is stored to
// shared memory swizzled, then read back as 16x16 A fragments with ldmatrix.x4 at the swizzled
// addresses: for block b (columns 16 b .. 16 b + 15) and lane l, out[(32 b + l) * 4 + j] is
// register j of lane l (the mma.sync A fragment of that 16x16 block). row_bytes: 64 or 128.
void ldmatrix_swizzled_tile(const std::uint16_t* src, std::uint32_t* out, int row_bytes);

// ------------------------------------------------------------------------------------------
// Exercise 6 — a small GEMM from mma.sync tiles (lesson §7): bfloat16 A [M, K] and B [N, K],
// float32 C [M, N], any M, N, K >= 1 (partial tiles are zero-padded in shared memory; K == 0
// writes C = 0). Tiles of shared memory in the swizzled layout of Exercise 5, fragments by
// ldmatrix.x4, mma.sync m16n8k16. No pipelining (that is Day 10).
void gemm_mma_bf16(const bfloat16* A, const bfloat16* B, float* C, std::int64_t M, std::int64_t N,
                   std::int64_t K);

// ------------------------------------------------------------------------------------------
// Exercise 7 — Hopper (compute capability 9.0: the launcher throws course::InvalidArgument on
// other GPUs): one warpgroup (128 threads) computes ONE tile C [64, N] = A [64, K] * B with
// wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16, both operands in shared memory described
// by matrix descriptors (lesson §8). N is 64 or 128; K is a multiple of 16, 16 <= K <= 256.
// The shared-memory layout is the no-swizzle ("interleaved") K-major one: 8x8 core matrices of
// 128 contiguous bytes.
constexpr int kWgmmaM = 64;
constexpr int kWgmmaMaxK = 256;
void wgmma_64xn(const bfloat16* A, const bfloat16* B, float* C, int N, int K);

// The byte offset of element (row, k) of a [rows, K] K-major operand in that layout: core
// matrix (row / 8, k / 8), K / 8 core matrices per 8-row group. Unwritten: -1.
std::int64_t wgmma_smem_offset(int row, int k, int K);

// The 64-bit shared-memory matrix descriptor of wgmma: start address, leading- and
// stride-dimension byte offsets (all three in bytes, multiples of 16: the descriptor keeps them
// >> 4, in 14 bits), and the swizzle mode (0 none, 1 128-byte, 2 64-byte, 3 32-byte; bits
// 62-63). Unwritten: 0.
std::uint64_t wgmma_descriptor(std::uint32_t smem_address, std::uint32_t leading_byte_offset,
                               std::uint32_t stride_byte_offset, int swizzle_mode);

// Given (not an exercise): cuBLAS's cublasGemmEx on the same layout (bfloat16 in, float32 out,
// float32 accumulation), the vendor baseline of the benchmark. In cublas_baseline.cu, linked
// into the benchmarks only.
void gemm_0_cublas(const bfloat16* A, const bfloat16* B, float* C, std::int64_t M, std::int64_t N,
                   std::int64_t K);

}  // namespace d09
