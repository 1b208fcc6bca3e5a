// Day 10 — GEMM, from one thread per element to Hopper's Tensor Memory Accelerator and wgmma.
//
// The interface the tests and the benchmark call. Pointers are device pointers; every function
// checks its arguments and throws course::InvalidArgument (a message, never an illegal address)
// or course::CudaError. Work is queued on the default stream; the functions return before it
// finishes. Steps are numbered as in README.md and the lesson.
//
//   C[m, n] = sum_k A[m, k] * B(k, n)        0 <= m < M, 0 <= n < N
//
// A is row-major [M, K]; C is row-major [M, N]. B comes in one of two layouts (BLayout):
//   kRowMajor  B row-major [K, N] (the textbook "A times B"): B(k, n) = B[k * N + n]
//   kColMajor  B stored [N, K], K contiguous ("TN", a weight matrix [out, in]):
//              B(k, n) = B[n * K + k]. Both operands are then K-major, which ldmatrix without
//              .trans and every wgmma with 8-bit inputs want.
//
// Shapes and alignment (checked by every launcher, with a message naming the rule):
//   steps 1-3      float32, B row-major. Any M, N, K >= 0; any pointer alignment.
//   steps 4-5      float32, B row-major, 16-byte loads: K % 4 == 0 and N % 4 == 0 (every row of A
//                  and B starts on a 16-byte boundary) and A, B 16-byte aligned. Any M.
//   step 6         bfloat16 in, float32 accumulation, bfloat16 out; B in either layout. cp.async
//                  moves 16 bytes: K % 8 == 0, and N % 8 == 0 when B is row-major; A, B 16-byte
//                  aligned. Any M; any N for kColMajor.
//   steps 7-8      Hopper only (compute capability 9.0: the launchers throw
//                  course::InvalidArgument elsewhere). B kColMajor only. The Tensor Memory
//                  Accelerator needs every row pitch a multiple of 16 bytes and 16-byte aligned
//                  bases: K * sizeof(input) % 16 == 0 (K % 8 == 0 for bfloat16, K % 16 == 0 for
//                  FP8) and A, B 16-byte aligned. Any M, N; C any alignment.
// M == 0 or N == 0 launches nothing; K == 0 writes C = 0. Sizes must be below 2^31.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

#include "course/dtype.h"

namespace d10 {

using course::bfloat16;
using fp8_e4m3 = __nv_fp8_e4m3;

enum class BLayout { kRowMajor, kColMajor };

// ------------------------------------------------------------------------------------------
// Steps 1-5 — float32 on the CUDA cores (lesson §2-§6), C float32.
// Step 1 — one thread per element of C, every operand read from global memory.
void gemm_1_naive(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                  std::int64_t K);
// Step 2 — square tiles of A and B staged in shared memory, one element of C per thread.
void gemm_2_smem(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                 std::int64_t K);
// Step 3 — 2-D register tiling: each thread computes an 8 x 8 block of C from registers.
void gemm_3_register_tile(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                          std::int64_t K);
// Step 4 — step 3 with 16-byte loads and A stored transposed in shared memory.
void gemm_4_vectorized(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                       std::int64_t K);
// Step 5 — warp tiling: 128 x 128 block tile, 64 x 64 per warp, double-buffered shared memory.
void gemm_5_warp_tile(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                      std::int64_t K);

// ------------------------------------------------------------------------------------------
// Step 6 — Tensor Cores with mma.sync.m16n8k16 (lesson §7): bfloat16 A and B, float32
// accumulators, bfloat16 C (rounded to nearest even). Tiles arrive by a multi-stage cp.async
// ring in XOR-swizzled shared memory and reach the registers by ldmatrix (.trans for a row-major
// B).
void gemm_6_mma(const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M, std::int64_t N,
                std::int64_t K, BLayout b_layout);

// Step 6 (host-tested) — the XOR swizzle of the shared-memory tiles. A tile row of row_chunks
// 16-byte chunks (8 for a K-major tile of 64 bfloat16, 32 for a [64, 256] row-major tile of B)
// stores its logical chunk `chunk` at the returned physical chunk of the same row, so that the
// eight 16-byte rows one ldmatrix phase reads (8 consecutive tile rows, one logical chunk) fall
// in eight different groups of four banks. row_chunks is 4 or a multiple of 8.
int mma_swizzle_chunk(int row, int chunk, int row_chunks);

// Steps 6-8 (host-tested) — the order of the output tiles: block `block` of a grid of
// tiles_m x tiles_n tiles computes tile (m, n). Blocks run in groups of `group` tile rows,
// column by column inside a group, so that the blocks running at the same time share rows of A
// and columns of B in the L2. A bijection of [0, tiles_m * tiles_n).
struct TileCoord {
  std::int64_t m = -1, n = -1;
};
TileCoord grouped_tile(std::int64_t block, std::int64_t tiles_m, std::int64_t tiles_n, int group);

// ------------------------------------------------------------------------------------------
// Steps 7-8 — Hopper: TMA + wgmma with a warp-specialised producer/consumer pipeline
// (lesson §8-§9). The stages complete on mbarriers whose waits are bounded: a wait that has not
// completed after kMbarrierTimeoutNs makes the kernel record the failure and return instead of
// hanging; check_mbarrier_timeouts() waits for the GPU and throws std::runtime_error saying so,
// if any kernel since the last call timed out. `debug_extra_tx_bytes` is added to the bytes
// every stage expects: anything but 0 is a bug on purpose, for the test of the bounded wait.
constexpr long long kMbarrierTimeoutNs = 1000000000;  // 1 s: a stage takes microseconds
void check_mbarrier_timeouts();

// Step 7 — bfloat16, B kColMajor ([N, K]), bfloat16 C (rounded to nearest even, as step 6).
void gemm_7_wgmma(const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M, std::int64_t N,
                  std::int64_t K, int debug_extra_tx_bytes = 0);

// Given with step 7 (Day 14's gated MLP; lesson §8.9): B = [G; U] is [2 N, K], the N gate rows
// above the N up rows, and C [M, N] = silu(A G^T) * (A U^T), silu(g) = g / (1 + e^-g), from
// the float32 accumulators, rounded once to bfloat16. Step 7's kernel with another epilogue:
// it works when step 7 does.
void gemm_7_silu_mul(const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M,
                     std::int64_t N, std::int64_t K);

// Step 8 — FP8 e4m3 A [M, K] and B [N, K], float32 accumulation, per-tensor scales:
// C = (*scale_a) * (*scale_b) * A B, rounded to bfloat16 (to nearest even). scale_a and scale_b are
// device pointers to one float each (as cuBLASLt takes them: a scale computed on the GPU needs no
// trip to the host).
void gemm_8_fp8(const fp8_e4m3* A, const fp8_e4m3* B, bfloat16* C, std::int64_t M, std::int64_t N,
                std::int64_t K, const float* scale_a, const float* scale_b,
                int debug_extra_tx_bytes = 0);

// Step 7 (host-tested) — the shared-memory matrix descriptor of a K-major operand tile laid out
// by TMA with 128-byte swizzling: rows of 128 bytes, in groups of 8 rows (1024 bytes) one after
// the other. The 64-bit word wgmma reads: start address, leading and stride byte offsets (each
// >> 4, 14 bits) and the swizzle mode (bits 62-63).
std::uint64_t wgmma_descriptor_sw128(std::uint32_t smem_address);

// Steps 7-8 (host-tested) — one pipeline stage of the wgmma kernels for inputs of
// element_bytes (2: bfloat16, 1: FP8): the K extent of a stage (one 128-byte swizzle row), the
// TMA boxes of A and B (rows of the block tile), and the bytes the stage's full barrier expects.
struct WgmmaStage {
  int k = 0;            // elements of K per stage
  int a_rows = 0;       // rows of the A box (the block tile's M)
  int b_rows = 0;       // rows of the B box (the block tile's N)
  int stage_bytes = 0;  // bytes of A and B one stage receives
};
WgmmaStage wgmma_stage(int element_bytes);

// Given (not an exercise): the vendor baselines of the benchmark, in cublas_baseline.cu (linked
// into the benchmarks only). cublasSgemm in its default math mode (float32 FMA, not TF32);
// cublasGemmEx with bfloat16 inputs and output and CUBLAS_COMPUTE_32F; cuBLASLt's FP8 matmul,
// e4m3 TN with the same scale pointers and a bfloat16 D.
void gemm_0_cublas_fp32(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                        std::int64_t K);
void gemm_0_cublas_bf16(const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M,
                        std::int64_t N, std::int64_t K, BLayout b_layout);
void gemm_0_cublaslt_fp8(const fp8_e4m3* A, const fp8_e4m3* B, bfloat16* C, std::int64_t M,
                         std::int64_t N, std::int64_t K, const float* scale_a,
                         const float* scale_b);

// Given (not an exercise): the ceiling of step 6's instruction on this GPU, in mma_ceiling.cu
// (linked into the benchmarks only). `blocks` blocks of kMmaCeilingThreads threads; every warp
// runs kMmaCeilingChains independent float32 accumulators through `iterations` of
// mma.sync.m16n8k16 (bfloat16 A = B = 1) from registers: no memory, no ldmatrix, no barrier.
// out[thread] = the sum of its accumulators, 16 * 4 * kMmaCeilingChains * iterations (exact in
// float32 below 2^24). Asynchronous on the default stream.
constexpr int kMmaCeilingThreads = 256, kMmaCeilingChains = 8;
void mma_sync_ceiling(float* out, int blocks, int iterations);

}  // namespace d10
