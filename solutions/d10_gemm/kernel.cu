// >>> STARTER
//|// Day 10 — your kernels. Read lessons/d10_gemm.md first; README.md in this folder lists the
//|// steps. Replace each TODO block; keep the names, the template parameters and the launchers (the
//|// tests and the benchmark call them through lab.h). Check with:  course check d10
//|// The steps, each building on the one before:
// === SOLUTION
// Day 10 — reference solution: GEMM from one thread per element to Hopper's TMA + wgmma with a
// warp-specialised pipeline, and FP8. One file, eight numbered steps (the lesson's table):
// <<<
//   1 naive            one thread per C element, operands straight from global memory
//   2 smem             32 x 32 tiles of A and B in shared memory: each value read K/32 times less
//   3 register_tile    128 x 128 block tile, each thread an 8 x 8 block of C in registers
//   4 vectorized       step 3 with 16-byte loads and A transposed in shared memory
//   5 warp_tile        warp tiles (64 x 64), double-buffered shared memory (SGEMM_CUDA's 10th)
//   6 mma              bfloat16 mma.sync.m16n8k16 + ldmatrix, swizzled cp.async ring
//   7 wgmma            Hopper: TMA boxes, 128-byte swizzle, wgmma m64n256k16, producer/consumers
//   8 fp8              step 7 with e4m3 inputs (wgmma m64n256k32) and per-tensor scales
#include <cuda.h>  // CUtensorMap and its enums only: the driver is reached through the runtime
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/cp_async.cuh"
#include "course/device.h"
#include "course/mbarrier.cuh"
#include "course/mma.cuh"
#include "course/vec.cuh"
#include "course/wgmma.cuh"
#include "lab.h"

namespace d10 {

using course::cp_async_16_zfill;  // Day 7
using course::cp_async_commit;
using course::cp_async_wait;
using course::smem_address;
using course::Vec;
using Float4 = Vec<float, 4>;

// ---------------------------------------------------------------------------------------------
// Step 1 — naive (lesson §2). Thread (x, y) of the grid computes C[m, n] with n along x, so a
// warp reads one row of B and writes one row of C contiguously, and all its lanes read the same
// A[m, k] (a broadcast). Every product costs two global loads: the L1 and L2 hold the reuse.
constexpr int kNaiveX = 32, kNaiveY = 8;

__global__ void __launch_bounds__(kNaiveX* kNaiveY)
    gemm_1_naive_kernel(const float* __restrict__ A, const float* __restrict__ B,
                        float* __restrict__ C, std::int64_t M, std::int64_t N, std::int64_t K) {
  // >>> STARTER d10.1
  //|  // TODO(d10.1) (lesson §2): n = blockIdx.x * kNaiveX + threadIdx.x and m = blockIdx.y * kNaiveY
  //|  // + threadIdx.y (64-bit); return if m >= M or n >= N; acc = sum over k of A[m * K + k] *
  //|  // B[k * N + n] in float32; C[m * N + n] = acc.
  // === SOLUTION
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kNaiveX + threadIdx.x;
  const std::int64_t m = static_cast<std::int64_t>(blockIdx.y) * kNaiveY + threadIdx.y;
  if (m >= M || n >= N) return;
  float acc = 0.0f;
  for (std::int64_t k = 0; k < K; ++k) acc += A[m * K + k] * B[k * N + n];
  C[m * N + n] = acc;
  // <<< d10.1
}

// ---------------------------------------------------------------------------------------------
// Step 2 — shared-memory tiles (lesson §3). A block of kTile x kTile threads computes a
// kTile x kTile tile of C; for each K-tile it stages a tile of A and one of B (each thread
// loads one element of each, zero outside the matrices), then every thread reads a row of the A
// tile and a column of the B tile from shared memory: each global value is loaded once per block
// instead of once per thread.
constexpr int kTile = 32;

__global__ void __launch_bounds__(kTile* kTile)
    gemm_2_smem_kernel(const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, std::int64_t M, std::int64_t N, std::int64_t K) {
  // >>> STARTER d10.2
  //|  // TODO(d10.2) (lesson §3): two __shared__ float tiles [kTile][kTile] (A as (m, k), B as
  //|  // (k, n)). For each K-tile k0: thread (tx, ty) loads A[m, k0 + tx] and B[k0 + ty, n] (0 outside
  //|  // the matrices), __syncthreads(), adds the kTile products of its row and column, and
  //|  // __syncthreads() again before the tiles are overwritten. Store C[m, n] if in bounds.
  // === SOLUTION
  __shared__ float a_tile[kTile][kTile];  // (m, k)
  __shared__ float b_tile[kTile][kTile];  // (k, n)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kTile + tx;
  const std::int64_t m = static_cast<std::int64_t>(blockIdx.y) * kTile + ty;
  float acc = 0.0f;
  for (std::int64_t k0 = 0; k0 < K; k0 += kTile) {
    a_tile[ty][tx] = (m < M && k0 + tx < K) ? A[m * K + k0 + tx] : 0.0f;
    b_tile[ty][tx] = (k0 + ty < K && n < N) ? B[(k0 + ty) * N + n] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += a_tile[ty][k] * b_tile[k][tx];
    __syncthreads();  // the tiles are overwritten next
  }
  if (m < M && n < N) C[m * N + n] = acc;
  // <<< d10.2
}

// ---------------------------------------------------------------------------------------------
// Step 3 — 2-D register tiling (lesson §4). A block of 16 x 16 threads computes a 128 x 128 tile
// of C; thread (ty, tx) owns the 8 x 8 block at rows ty*8.., columns tx*8... For each k of a
// K-tile of 8 it reads 8 values of A and 8 of B from shared memory into registers and does 64
// FMAs with them: 16 shared loads per 64 FMAs instead of 2 per 1.
constexpr int kRtBM = 128, kRtBN = 128, kRtBK = 8, kRtTM = 8, kRtTN = 8;
constexpr int kRtThreads = (kRtBM / kRtTM) * (kRtBN / kRtTN);  // 256
static_assert(kRtBM * kRtBK % kRtThreads == 0 && kRtBK * kRtBN % kRtThreads == 0,
              "every thread loads the same number of elements of each tile");

__global__ void __launch_bounds__(kRtThreads)
    gemm_3_register_tile_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                float* __restrict__ C, std::int64_t M, std::int64_t N,
                                std::int64_t K) {
  // >>> STARTER d10.3
  //|  // TODO(d10.3) (lesson §4): tiles a_tile[kRtBM][kRtBK], b_tile[kRtBK][kRtBN] in shared memory;
  //|  // thread tid = (ty, tx) of 16 x 16 owns C rows ty * kRtTM .. + 7 and columns tx * kRtTN .. + 7
  //|  // of the block's 128 x 128 tile (acc[kRtTM][kRtTN] in registers). Per K-tile of kRtBK: every
  //|  // thread loads kRtBM * kRtBK / kRtThreads elements of each tile (consecutive threads along the
  //|  // contiguous dimension, 0 outside), barrier; for each k, 8 values of A and 8 of B into
  //|  // registers, 64 FMAs; barrier. Finally store the 8 x 8 block with bounds checks.
  // === SOLUTION
  __shared__ float a_tile[kRtBM][kRtBK];  // (m, k)
  __shared__ float b_tile[kRtBK][kRtBN];  // (k, n)
  const int tid = threadIdx.x;
  const int tx = tid % (kRtBN / kRtTN), ty = tid / (kRtBN / kRtTN);
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * kRtBM;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * kRtBN;
  float acc[kRtTM][kRtTN] = {};
  for (std::int64_t k0 = 0; k0 < K; k0 += kRtBK) {
#pragma unroll
    for (int i = 0; i < kRtBM * kRtBK / kRtThreads; ++i) {
      const int e = tid + i * kRtThreads;
      const int r = e / kRtBK, c = e % kRtBK;  // A tile (r, c): consecutive threads along k
      const std::int64_t m = m0 + r, k = k0 + c;
      a_tile[r][c] = (m < M && k < K) ? A[m * K + k] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kRtBK * kRtBN / kRtThreads; ++i) {
      const int e = tid + i * kRtThreads;
      const int r = e / kRtBN, c = e % kRtBN;  // B tile (r, c): consecutive threads along n
      const std::int64_t k = k0 + r, n = n0 + c;
      b_tile[r][c] = (k < K && n < N) ? B[k * N + n] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kRtBK; ++k) {
      float a_reg[kRtTM], b_reg[kRtTN];
#pragma unroll
      for (int i = 0; i < kRtTM; ++i) a_reg[i] = a_tile[ty * kRtTM + i][k];
#pragma unroll
      for (int j = 0; j < kRtTN; ++j) b_reg[j] = b_tile[k][tx * kRtTN + j];
#pragma unroll
      for (int i = 0; i < kRtTM; ++i)
#pragma unroll
        for (int j = 0; j < kRtTN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kRtTM; ++i) {
    const std::int64_t m = m0 + ty * kRtTM + i;
#pragma unroll
    for (int j = 0; j < kRtTN; ++j) {
      const std::int64_t n = n0 + tx * kRtTN + j;
      if (m < M && n < N) C[m * N + n] = acc[i][j];
    }
  }
  // <<< d10.3
}

// ---------------------------------------------------------------------------------------------
// Step 4 — 16-byte loads, A transposed in shared memory (lesson §5). Step 3's tiling, but every
// global load is a float4 (K % 4 == 0 and N % 4 == 0 keep each one whole and aligned) and the A
// tile is stored as (k, m): the 8 values of A a thread needs for one k are then contiguous, and
// so are its 8 values of B, so the inner loop reads both with float4 shared loads.
constexpr int kVecBM = 128, kVecBN = 128, kVecBK = 8, kVecTM = 8, kVecTN = 8;
constexpr int kVecThreads = (kVecBM / kVecTM) * (kVecBN / kVecTN);  // 256
static_assert(kVecBM * kVecBK / 4 == kVecThreads, "one float4 of the A tile per thread");
static_assert(kVecBK * kVecBN / 4 == kVecThreads, "one float4 of the B tile per thread");

__global__ void __launch_bounds__(kVecThreads)
    gemm_4_vectorized_kernel(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, std::int64_t M, std::int64_t N,
                             std::int64_t K) {
  // >>> STARTER d10.4
  //|  // TODO(d10.4) (lesson §5): step 3 with Float4 (course::Vec<float, 4>) loads: one float4 of A
  //|  // (row tid / 2, columns (tid % 2) * 4 ..) and one of B (row tid / 32, columns (tid % 32) * 4 ..)
  //|  // per thread per K-tile (K % 4 == 0 and N % 4 == 0: each float4 is all in or all out). Store A
  //|  // TRANSPOSED, a_tile[kVecBK][kVecBM] as (k, m), so that a thread's 8 values of A for one k are
  //|  // contiguous: read them and the 8 of B with two Float4 shared loads each. Store C by float4.
  // === SOLUTION
  __shared__ __align__(16) float a_tile[kVecBK][kVecBM];  // (k, m): A transposed
  __shared__ __align__(16) float b_tile[kVecBK][kVecBN];  // (k, n)
  const int tid = threadIdx.x;
  const int tx = tid % (kVecBN / kVecTN), ty = tid / (kVecBN / kVecTN);
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * kVecBM;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * kVecBN;
  const int a_row = tid / (kVecBK / 4), a_col = tid % (kVecBK / 4) * 4;  // A tile (m, k..k+3)
  const int b_row = tid / (kVecBN / 4), b_col = tid % (kVecBN / 4) * 4;  // B tile (k, n..n+3)
  float acc[kVecTM][kVecTN] = {};
  for (std::int64_t k0 = 0; k0 < K; k0 += kVecBK) {
    Float4 a{}, b{};
    if (m0 + a_row < M && k0 + a_col < K) a.load(A + (m0 + a_row) * K + k0 + a_col);
    if (k0 + b_row < K && n0 + b_col < N) b.load(B + (k0 + b_row) * N + n0 + b_col);
#pragma unroll
    for (int i = 0; i < 4; ++i) a_tile[a_col + i][a_row] = a[i];
    b.store(&b_tile[b_row][b_col]);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kVecBK; ++k) {
      Float4 a_reg[kVecTM / 4], b_reg[kVecTN / 4];
#pragma unroll
      for (int i = 0; i < kVecTM / 4; ++i) a_reg[i].load(&a_tile[k][ty * kVecTM + 4 * i]);
#pragma unroll
      for (int j = 0; j < kVecTN / 4; ++j) b_reg[j].load(&b_tile[k][tx * kVecTN + 4 * j]);
#pragma unroll
      for (int i = 0; i < kVecTM; ++i)
#pragma unroll
        for (int j = 0; j < kVecTN; ++j) acc[i][j] += a_reg[i / 4][i % 4] * b_reg[j / 4][j % 4];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kVecTM; ++i) {
    const std::int64_t m = m0 + ty * kVecTM + i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < kVecTN / 4; ++j) {
      const std::int64_t n = n0 + tx * kVecTN + 4 * j;  // N % 4 == 0: the float4 is all in or out
      if (n < N) {
        Float4 out;
#pragma unroll
        for (int q = 0; q < 4; ++q) out[q] = acc[i][4 * j + q];
        out.store(C + m * N + n);
      }
    }
  }
  // <<< d10.4
}

// ---------------------------------------------------------------------------------------------
// Step 5 — warp tiling (lesson §6; SGEMM_CUDA's kernel 10). The 256 x 128 block tile is split
// among 8 warps of 64 x 64 (4 along M, 2 along N); a warp's tile is four 64 x 16 sub-tiles side
// by side, and in each a lane owns an 8 x 4 block (8 lanes down, 4 across). A lane's 8 x 16
// outputs thus come from 2 float4 of A and 4 float4 of B per k: 128 FMAs per 6 shared loads
// (step 4 and an 8 x 8 lane block: 64 per 4), read by 8 and 4 distinct lanes of the warp (the
// others get broadcasts). Shared memory is double-buffered with K-tiles of 8: the next tile's
// float4 loads are issued into registers before the current tile is computed, and stored into
// the other buffer after it, so one barrier per K-tile suffices. The transposed A tile's rows are
// padded by 4 floats so that its scattered stores don't collide on banks. 256 threads of about
// 235 registers (128 accumulators, the operands of the next k, the prefetched tile): one block of
// 8 warps per SM. Measured on the H100, this beats two 128 x 128 blocks of 4 warps per SM (86%
// of cuBLAS against 81%): the same warps, but each K-tile of B is loaded once for twice the rows.
constexpr int kWtBM = 256, kWtBN = 128, kWtBK = 8;
constexpr int kWtWM = 64, kWtWN = 64;                         // a warp's tile
constexpr int kWtTM = 8, kWtTN = 4;                           // a lane's block in one sub-tile
constexpr int kWtSubN = 4;                                    // sub-tiles along N in a warp tile
constexpr int kWtSubWidth = kWtWN / kWtSubN;                  // 16
constexpr int kWtLanesN = kWtSubWidth / kWtTN;                // 4 lanes across a sub-tile
constexpr int kWtLanesM = 32 / kWtLanesN;                     // 8 lanes down
constexpr int kWtWarpsN = kWtBN / kWtWN;                      // 2
constexpr int kWtThreads = (kWtBM / kWtWM) * kWtWarpsN * 32;  // 256
constexpr int kWtAStride = kWtBM + 4;  // a row of the transposed A tile, padded by 16 bytes
// float4s of A and of B per thread per K-tile: 2 and 1
[[maybe_unused]] constexpr int kWtALoads = kWtBM * kWtBK / 4 / kWtThreads;
[[maybe_unused]] constexpr int kWtBLoads = kWtBK * kWtBN / 4 / kWtThreads;
static_assert(kWtLanesM * kWtTM == kWtWM, "the lanes cover the warp tile's rows");
static_assert(kWtBM * kWtBK % (4 * kWtThreads) == 0 && kWtBK * kWtBN % (4 * kWtThreads) == 0,
              "every thread loads whole float4s of both tiles");
static_assert(kWtAStride % 4 == 0, "the A tile's rows stay 16-byte aligned for float4 loads");

__global__ void __launch_bounds__(kWtThreads, 1)
    gemm_5_warp_tile_kernel(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, std::int64_t M, std::int64_t N, std::int64_t K) {
  // >>> STARTER d10.5
  //|  // TODO(d10.5) (lesson §6): a_tile[2][kWtBK][kWtAStride] (A transposed, rows padded) and
  //|  // b_tile[2][kWtBK][kWtBN]. Warp w: warp_m = w / kWtWarpsN, warp_n = w % kWtWarpsN owns the
  //|  // 64 x 64 block at (warp_m * kWtWM, warp_n * kWtWN); lane l: lane_m = l / kWtLanesN,
  //|  // lane_n = l % kWtLanesN owns rows lane_m * kWtTM .. + 7 and, in each of the kWtSubN sub-tiles
  //|  // of width kWtSubWidth, columns lane_n * kWtTN .. + 3 (8 x 16 accumulators). Double buffering:
  //|  // load K-tile 0, store it, barrier; each iteration loads tile t + 1 into registers (kWtALoads +
  //|  // kWtBLoads float4s), computes tile t from buffer t % 2, stores the registers into the other
  //|  // buffer, barrier. Store C by float4.
  // === SOLUTION
  __shared__ __align__(16) float a_tile[2][kWtBK][kWtAStride];  // (buffer, k, m): A transposed
  __shared__ __align__(16) float b_tile[2][kWtBK][kWtBN];       // (buffer, k, n)
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / kWtWarpsN, warp_n = warp % kWtWarpsN;
  const int lane_m = lane / kWtLanesN, lane_n = lane % kWtLanesN;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * kWtBM;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * kWtBN;

  // This thread's float4s of each tile: (row, column) in the tile, and the global address of
  // the first K-tile's (advanced by k0 or k0 * N for later tiles).
  int a_r[kWtALoads], a_c[kWtALoads], b_r[kWtBLoads], b_c[kWtBLoads];
  const float* a_src[kWtALoads];
  const float* b_src[kWtBLoads];
#pragma unroll
  for (int i = 0; i < kWtALoads; ++i) {
    const int e = tid + i * kWtThreads;
    a_r[i] = e / (kWtBK / 4);  // (m, k..k+3): 4 consecutive threads cover a row of the tile
    a_c[i] = e % (kWtBK / 4) * 4;
    a_src[i] = A + (m0 + a_r[i]) * K + a_c[i];
  }
#pragma unroll
  for (int i = 0; i < kWtBLoads; ++i) {
    const int e = tid + i * kWtThreads;
    b_r[i] = e / (kWtBN / 4);  // (k, n..n+3)
    b_c[i] = e % (kWtBN / 4) * 4;
    b_src[i] = B + static_cast<std::int64_t>(b_r[i]) * N + n0 + b_c[i];
  }
  // Global -> registers for K-tile k0 (zeros outside the matrices), registers -> buffer.
  Float4 a_next[kWtALoads], b_next[kWtBLoads];
  const auto load_tile = [&](std::int64_t k0) {
#pragma unroll
    for (int i = 0; i < kWtALoads; ++i) {
      a_next[i] = Float4{};
      if (m0 + a_r[i] < M && k0 + a_c[i] < K) a_next[i].load(a_src[i] + k0);
    }
#pragma unroll
    for (int i = 0; i < kWtBLoads; ++i) {
      b_next[i] = Float4{};
      if (k0 + b_r[i] < K && n0 + b_c[i] < N) b_next[i].load(b_src[i] + k0 * N);
    }
  };
  const auto store_tile = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kWtALoads; ++i)
#pragma unroll
      for (int q = 0; q < 4; ++q) a_tile[buf][a_c[i] + q][a_r[i]] = a_next[i][q];
#pragma unroll
    for (int i = 0; i < kWtBLoads; ++i) b_next[i].store(&b_tile[buf][b_r[i]][b_c[i]]);
  };

  float acc[kWtTM][kWtSubN * kWtTN] = {};
  const int a_off = warp_m * kWtWM + lane_m * kWtTM;  // this lane's rows in the block tile
  const int b_off = warp_n * kWtWN + lane_n * kWtTN;  // ... its columns in sub-tile 0
  const std::int64_t tiles = (K + kWtBK - 1) / kWtBK;
  if (tiles > 0) {
    load_tile(0);
    store_tile(0);
  }
  __syncthreads();
  for (std::int64_t t = 0; t < tiles; ++t) {
    const int buf = static_cast<int>(t % 2);
    if (t + 1 < tiles) load_tile((t + 1) * kWtBK);  // in flight while this tile is computed
#pragma unroll
    for (int k = 0; k < kWtBK; ++k) {
      Float4 a_reg[kWtTM / 4], b_reg[kWtSubN];
#pragma unroll
      for (int i = 0; i < kWtTM / 4; ++i) a_reg[i].load(&a_tile[buf][k][a_off + 4 * i]);
#pragma unroll
      for (int s = 0; s < kWtSubN; ++s) b_reg[s].load(&b_tile[buf][k][b_off + s * kWtSubWidth]);
#pragma unroll
      for (int i = 0; i < kWtTM; ++i)
#pragma unroll
        for (int s = 0; s < kWtSubN; ++s)
#pragma unroll
          for (int j = 0; j < kWtTN; ++j)
            acc[i][s * kWtTN + j] += a_reg[i / 4][i % 4] * b_reg[s][j];
    }
    // The other buffer was last read in iteration t - 1, and every thread has passed the
    // barrier that ended it: it may be overwritten now.
    if (t + 1 < tiles) store_tile(1 - buf);
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kWtTM; ++i) {
    const std::int64_t m = m0 + a_off + i;
    if (m >= M) continue;
#pragma unroll
    for (int s = 0; s < kWtSubN; ++s) {
      const std::int64_t n = n0 + b_off + s * kWtSubWidth;  // N % 4 == 0: whole float4 in or out
      if (n < N) {
        Float4 out;
#pragma unroll
        for (int j = 0; j < kWtTN; ++j) out[j] = acc[i][s * kWtTN + j];
        out.store(C + m * N + n);
      }
    }
  }
  // <<< d10.5
}

// ---------------------------------------------------------------------------------------------
// Steps 6-8 — the order of the output tiles (lesson §7.6). Consecutive blocks take the tiles of
// `group` tile rows column by column: at any moment the running blocks share a few rows of A
// and a few columns of B, which stay in the L2, instead of sweeping all of B for every row.
__host__ __device__ inline TileCoord grouped_tile_of(std::int64_t block, std::int64_t tiles_m,
                                                     std::int64_t tiles_n, int group) {
  // >>> STARTER d10.6b
  //|  // TODO(d10.6b) (lesson §7.6): per_group = group * tiles_n blocks cover `group` tile rows;
  //|  // first_m = block / per_group * group; rows = min(group, tiles_m - first_m) (the last group
  //|  // may be short); in_group = block % per_group; m = first_m + in_group % rows,
  //|  // n = in_group / rows.
  //|  return TileCoord{};
  // === SOLUTION
  const std::int64_t per_group = static_cast<std::int64_t>(group) * tiles_n;
  const std::int64_t first_m = block / per_group * group;
  const std::int64_t rows = tiles_m - first_m < group ? tiles_m - first_m : group;  // last group
  const std::int64_t in_group = block % per_group;
  TileCoord tile;
  tile.m = first_m + in_group % rows;
  tile.n = in_group / rows;
  return tile;
  // <<< d10.6b
}

// ---------------------------------------------------------------------------------------------
// Step 6 — the XOR swizzle of the shared tiles (lesson §7.3). ldmatrix reads eight 16-byte rows
// per phase (8 consecutive tile rows, one logical chunk); stored plainly they would share banks
// (a row of 64 bytes puts rows r and r + 2 on the same banks, a row of 512 bytes puts all eight
// there). XOR-ing the chunk index with bits of the row sends the eight to eight different
// 16-byte bank groups, and within a row it only permutes the chunks.
__host__ __device__ constexpr int swizzle_chunk(int row, int chunk, int row_chunks) {
  // >>> STARTER d10.6a
  //|  // TODO(d10.6a) (lesson §7.3): rows of 8 or more chunks: chunk ^ (row & 7); rows of 4 chunks
  //|  // (64 bytes: two rows share a 128-byte line of banks): chunk ^ ((row / 2) % 4).
  //|  return -1;
  // === SOLUTION
  return row_chunks >= 8 ? chunk ^ (row & 7) : chunk ^ (row / (8 / row_chunks) % row_chunks);
  // <<< d10.6a
}

// Step 6 — mma.sync.m16n8k16 (lesson §7). A block of 8 warps computes a 128 x 256 tile of C;
// warp (wm, wn) of 2 x 4 owns 64 x 64, i.e. 4 x 8 mma tiles of 16 x 8 (128 float32 accumulators
// per lane). K advances by 64 (one 128-byte row of every K-major tile): a kMmaStages-deep ring of
// cp.async stages keeps kMmaStages - 1 tiles in flight, one barrier per K-tile, 4 k16 steps of
// 32 mma each per barrier. Each thread's copies follow a plan made once (fixed chunks, pointers
// that step by a K-tile), so the copies cost few instructions. Fragments come from the swizzled
// tiles by ldmatrix.x4 (four 8 x 8 matrices per instruction), with .trans when B is row-major
// ([K, N]: the B fragment wants k pairs, which are then 2 rows apart), and are double-buffered in
// registers: step ks + 1's ldmatrix are issued before step ks's 32 mma, whose latency hides
// theirs, and the barrier with the next tile's first ldmatrix comes before the last step's mma.
// The epilogue goes through shared memory so that C is written in whole 16-byte rows.
constexpr int kMmaBM = 128, kMmaBN = 256, kMmaBK = 64, kMmaStages = 3;
constexpr int kMmaWarpsM = 2, kMmaWarpsN = 4;
constexpr int kMmaWM = kMmaBM / kMmaWarpsM, kMmaWN = kMmaBN / kMmaWarpsN;  // 64 x 64
[[maybe_unused]] constexpr int kMmaTilesM = kMmaWM / 16;  // 4 x 8 mma tiles of 16 x 8
constexpr int kMmaTilesN = kMmaWN / 8;
[[maybe_unused]] constexpr int kMmaKSteps = kMmaBK / 16;                   // k16 steps per stage
constexpr int kMmaThreads = 32 * kMmaWarpsM * kMmaWarpsN;                  // 256
constexpr int kChunkElems = 8;                                             // bfloat16 per 16 B
[[maybe_unused]] constexpr int kMmaKChunks = kMmaBK / kChunkElems;         // 8 per K-major row
[[maybe_unused]] constexpr int kMmaNChunks = kMmaBN / kChunkElems;         // 32 per [K, N] row
constexpr int kMmaAStage = kMmaBM * kMmaBK, kMmaBStage = kMmaBN * kMmaBK;  // elements
[[maybe_unused]] constexpr int kMmaGroup = 8;                              // tile rows per group
constexpr int kMmaCStride = kMmaBN + kChunkElems;  // epilogue tile row, padded by 16 bytes
// 3 stages of 48 KiB = 144 KiB: within the opt-in limit of a block on the A100 (163 KiB) and
// the H100 (227 KiB); one block per SM.
constexpr std::size_t kMmaSmemBytes = sizeof(bfloat16) * kMmaStages * (kMmaAStage + kMmaBStage);
static_assert(kMmaAStage / kChunkElems % kMmaThreads == 0, "whole chunks of A per thread");
static_assert(kMmaBStage / kChunkElems % kMmaThreads == 0, "whole chunks of B per thread");
static_assert(sizeof(bfloat16) * kMmaBM * kMmaCStride <= kMmaSmemBytes,
              "the epilogue's C tile fits in the stages' shared memory");
static_assert(kMmaBK % 16 == 0 && kMmaTilesN % 2 == 0, "whole k16 steps, pairs of n8 tiles");
static_assert(kMmaKChunks == 8, "a K-major row is one 128-byte line: chunk ^ (row & 7)");
static_assert(kMmaSmemBytes <= 163 * 1024, "the stages fit an A100's opt-in shared memory too");

// ldmatrix.x4 (.trans) and mma.sync.m16n8k16, as written on Day 9: course/mma.cuh.
using course::ldmatrix_x4;
using course::ldmatrix_x4_trans;
using course::mma_16816;

template <BLayout kB>
__global__ void __launch_bounds__(kMmaThreads, 1)
    gemm_6_mma_kernel(const bfloat16* __restrict__ A, const bfloat16* __restrict__ B,
                      bfloat16* __restrict__ C, std::int64_t M, std::int64_t N, std::int64_t K,
                      bool c_vector_ok) {
  // >>> STARTER d10.6
  //|  // TODO(d10.6) (lesson §7): the stages (kMmaStages x (kMmaAStage + kMmaBStage) bfloat16) in
  //|  // dynamic shared memory. The block's tile from grouped_tile_of(blockIdx.x, ...). A stage is
  //|  // filled by cp_async_16_zfill of every 16-byte chunk to its swizzled place (row * chunks_per_row
  //|  // + swizzle_chunk(row, chunk, chunks_per_row)) * 16, zeros past M, N or K (valid = false). Plan
  //|  // the copies once, before the loop (lesson §7.4): thread t always copies chunk t % 8 of rows
  //|  // t / 8 + 32 i (t % 32 of rows t / 32 + 8 i for a [K, N] B), from pointers that move by one
  //|  // K-tile per stage, with the rows' bounds known once. The ring: kMmaStages - 1 tiles in flight;
  //|  // each iteration refills the stage the previous tile used and commits a group, empty or not.
  //|  // Compute: kMmaKSteps k16 steps per stage, each ldmatrix_x4 of 4 A fragments and 4 x 2 B
  //|  // fragments (ldmatrix_x4_trans for a row-major B) and 32 mma_16816; double-buffer the
  //|  // fragments in registers (load step ks + 1's before step ks's mma). Before the last step's
  //|  // mma: cp_async_wait<kMmaStages - 2>, __syncthreads, the next tile's step-0 fragments.
  //|  // Epilogue: bfloat16 pairs into a padded C tile in shared memory (row stride kMmaCStride), then
  //|  // 16-byte stores when c_vector_ok, element by element otherwise, bounds-checked.
  // === SOLUTION
  extern __shared__ __align__(128) unsigned char dynamic_smem[];
  bfloat16* a_stages = reinterpret_cast<bfloat16*>(dynamic_smem);  // [stage][BM rows][BK]
  bfloat16* b_stages = a_stages + kMmaStages * kMmaAStage;         // [stage][BN][BK] or [BK][BN]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / kMmaWarpsN, warp_n = warp % kMmaWarpsN;
  const std::int64_t tiles_m = (M + kMmaBM - 1) / kMmaBM, tiles_n = (N + kMmaBN - 1) / kMmaBN;
  const TileCoord tile = grouped_tile_of(blockIdx.x, tiles_m, tiles_n, kMmaGroup);
  const std::int64_t m0 = tile.m * kMmaBM, n0 = tile.n * kMmaBN;
  const int k_tiles = static_cast<int>((K + kMmaBK - 1) / kMmaBK);  // check_gemm_args: K < 2^31

  // The copy plan (lesson §7.4), fixed for the whole K loop. Thread x copies chunk x % 8 of rows
  // x / 8 + 32 i of a K-major tile (A, and B when it is [N, K]) or chunk x % 32 of rows
  // x / 32 + 8 i of a [K, N] tile: whole 8-row swizzle periods apart, so its chunk lands at the
  // same XOR-ed place in each of its rows. Its source pointers move by one K-tile per stage and by
  // one pass per chunk, and its rows' bounds are checked once: each cp.async costs an add and a
  // select, not the 64-bit index arithmetic that otherwise takes the warp's issue slots from its
  // mma (lesson §7.7).
  constexpr int kKPass = kMmaThreads / kMmaKChunks;  // 32 K-major rows per pass of the block
  constexpr int kNPass = kMmaThreads / kMmaNChunks;  // 8 rows of a [K, N] tile per pass
  constexpr int kAPasses = kMmaBM / kKPass;
  const int kr = tid / kMmaKChunks, kc = tid % kMmaKChunks;
  const std::uint32_t k_dst = 16 * (kr * kMmaKChunks + swizzle_chunk(kr, kc, kMmaKChunks));
  const bfloat16* const a_from = A + (m0 + kr) * K + kc * kChunkElems;
  const std::int64_t k_step = kKPass * K;  // a pass further down a K-major matrix
  const std::int64_t n_step = kNPass * N;  // a pass further down a [K, N] matrix
  unsigned a_rows = 0;                     // bit i: row kr + 32 i of the tile is inside A
#pragma unroll
  for (int i = 0; i < kAPasses; ++i) a_rows |= (m0 + kr + i * kKPass < M ? 1u : 0u) << i;

  // K-tile kt into stage s: every 16-byte chunk by one cp.async, zeros past M, N or K.
  const auto load_stage = [&](int kt, int s) {
    const int k0 = kt * kMmaBK;
    const bool kc_ok = k0 + kc * kChunkElems < K;
    {
      const std::uint32_t dst = smem_address(a_stages + s * kMmaAStage) + k_dst;
      const bfloat16* from = a_from + k0;
#pragma unroll
      for (int i = 0; i < kAPasses; ++i) {
        const bool valid = kc_ok && (a_rows >> i & 1u);
        cp_async_16_zfill(dst + i * kKPass * kMmaKChunks * 16, valid ? from : A, valid);
        from += k_step;
      }
    }
    if constexpr (kB == BLayout::kColMajor) {
      constexpr int kBPasses = kMmaBN / kKPass;
      const std::uint32_t dst = smem_address(b_stages + s * kMmaBStage) + k_dst;
      const bfloat16* from = B + (n0 + kr) * K + kc * kChunkElems + k0;
      const int rows_left = static_cast<int>(N - n0) - kr;
#pragma unroll
      for (int i = 0; i < kBPasses; ++i) {
        const bool valid = kc_ok && i * kKPass < rows_left;
        cp_async_16_zfill(dst + i * kKPass * kMmaKChunks * 16, valid ? from : B, valid);
        from += k_step;
      }
    } else {
      constexpr int kBPasses = kMmaBK / kNPass;
      const int r = tid / kMmaNChunks, c = tid % kMmaNChunks;
      const std::uint32_t dst = smem_address(b_stages + s * kMmaBStage) +
                                16 * (r * kMmaNChunks + swizzle_chunk(r, c, kMmaNChunks));
      const bfloat16* from = B + (static_cast<std::int64_t>(k0) + r) * N + n0 + c * kChunkElems;
      const bool c_ok = n0 + c * kChunkElems < N;
      const int rows_left = static_cast<int>(K - k0) - r;
#pragma unroll
      for (int i = 0; i < kBPasses; ++i) {
        const bool valid = c_ok && i * kNPass < rows_left;
        cp_async_16_zfill(dst + i * kNPass * kMmaNChunks * 16, valid ? from : B, valid);
        from += n_step;
      }
    }
  };

  float acc[kMmaTilesM][kMmaTilesN][4] = {};
  // The fragments of one k16 step: the warp's 4 A tiles (16 x 16) and 8 B tiles (16 x 8). Lane l
  // addresses row l % 8 of matrix j = l / 8 of each ldmatrix.x4.
  struct Fragments {
    std::uint32_t a[kMmaTilesM][4];
    std::uint32_t b[kMmaTilesN][2];
  };
  const auto load_fragments = [&](Fragments& f, std::uint32_t a_base, std::uint32_t b_base,
                                  int ks) {
    const int j = lane / 8, r8 = lane % 8;
#pragma unroll
    for (int mi = 0; mi < kMmaTilesM; ++mi) {
      // Matrices: rows 0-7 | 8-15 of the 16 x 16 tile, k 0-7 | 8-15 (a0, a1, a2, a3).
      const int r = warp_m * kMmaWM + mi * 16 + (j % 2) * 8 + r8;
      const int c = ks * 2 + j / 2;
      ldmatrix_x4(f.a[mi], a_base + 16 * (r * kMmaKChunks + swizzle_chunk(r, c, kMmaKChunks)));
    }
#pragma unroll
    for (int p = 0; p < kMmaTilesN / 2; ++p) {
      // Matrices: B registers 0, 1 of n8 tile 2p, then registers 0, 1 of n8 tile 2p + 1.
      std::uint32_t q[4];
      if constexpr (kB == BLayout::kColMajor) {
        const int n = warp_n * kMmaWN + p * 16 + (j / 2) * 8 + r8;
        const int c = ks * 2 + j % 2;
        ldmatrix_x4(q, b_base + 16 * (n * kMmaKChunks + swizzle_chunk(n, c, kMmaKChunks)));
      } else {
        const int k = ks * 16 + (j % 2) * 8 + r8;
        const int c = (warp_n * kMmaWN + p * 16) / kChunkElems + j / 2;
        ldmatrix_x4_trans(q, b_base + 16 * (k * kMmaNChunks + swizzle_chunk(k, c, kMmaNChunks)));
      }
      f.b[2 * p][0] = q[0];
      f.b[2 * p][1] = q[1];
      f.b[2 * p + 1][0] = q[2];
      f.b[2 * p + 1][1] = q[3];
    }
  };
  // One k16 step: 32 mma along n within a row of m tiles, in a serpentine (odd rows backwards):
  // consecutive mma never share an accumulator, and the B fragment at a row's turn is reused.
  const auto mma_step = [&](const Fragments& cur) {
#pragma unroll
    for (int mi = 0; mi < kMmaTilesM; ++mi)
#pragma unroll
      for (int nj = 0; nj < kMmaTilesN; ++nj) {
        const int ni = mi % 2 == 0 ? nj : kMmaTilesN - 1 - nj;
        mma_16816<bfloat16>(acc[mi][ni], cur.a[mi], cur.b[ni][0], cur.b[ni][1]);
      }
  };
  const auto stage_a = [&](int s) { return smem_address(a_stages + s * kMmaAStage); };
  const auto stage_b = [&](int s) { return smem_address(b_stages + s * kMmaBStage); };

  // The ring (lesson §7.4): tiles 0 .. stages - 2 in flight before the loop. In iteration kt the
  // refill of tile kt + stages - 1 goes out first, into the stage tile kt - 1 used (every warp
  // finished reading it before the previous iteration's barrier). The fragments are
  // double-buffered: step ks + 1's ldmatrix are issued before step ks's 32 mma, so their latency
  // hides behind independent mma. Before the last step, whose fragments are already in registers,
  // comes the wait for tile kt + 1 and the barrier, and then tile kt + 1's first fragments: the
  // barrier and those ldmatrix overlap the last step's mma instead of stalling a warp whose mma
  // are all done. Every iteration commits one group, empty or not, so the count stays exact.
#pragma unroll
  for (int s = 0; s < kMmaStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }
  cp_async_wait<kMmaStages - 2>();
  __syncthreads();
  Fragments f[2];
  load_fragments(f[0], stage_a(0), stage_b(0), 0);
  int stage = 0, refill = kMmaStages - 1;  // the stages of tiles kt and kt + stages - 1
  for (int kt = 0; kt < k_tiles; ++kt) {
    if (kt + kMmaStages - 1 < k_tiles) load_stage(kt + kMmaStages - 1, refill);
    cp_async_commit();
    const int next = stage + 1 == kMmaStages ? 0 : stage + 1;
#pragma unroll
    for (int ks = 0; ks < kMmaKSteps; ++ks) {
      if (ks + 1 < kMmaKSteps) {
        load_fragments(f[(ks + 1) % 2], stage_a(stage), stage_b(stage), ks + 1);
      } else {
        cp_async_wait<kMmaStages - 2>();  // tile kt + 1 has landed (this thread's copies)
        __syncthreads();                  // ... everyone's; and everyone is done with tile kt
        if (kt + 1 < k_tiles) load_fragments(f[(ks + 1) % 2], stage_a(next), stage_b(next), 0);
      }
      mma_step(f[ks % 2]);
    }
    stage = next;
    refill = refill + 1 == kMmaStages ? 0 : refill + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // the stages are free: the epilogue reuses their memory

  // Epilogue: accumulators -> bfloat16 (round to nearest even) -> padded C tile in shared
  // memory (a row of 264 elements puts the 8 rows of one store on different banks) -> C in
  // 16-byte rows when N % 8 == 0 and C is aligned, element by element otherwise.
  bfloat16* c_tile = reinterpret_cast<bfloat16*>(dynamic_smem);  // [BM][kMmaCStride]
#pragma unroll
  for (int mi = 0; mi < kMmaTilesM; ++mi)
#pragma unroll
    for (int ni = 0; ni < kMmaTilesN; ++ni) {
      const int r = warp_m * kMmaWM + mi * 16 + lane / 4;
      const int c = warp_n * kMmaWN + ni * 8 + (lane % 4) * 2;
      *reinterpret_cast<__nv_bfloat162*>(&c_tile[r * kMmaCStride + c]) =
          __floats2bfloat162_rn(acc[mi][ni][0], acc[mi][ni][1]);
      *reinterpret_cast<__nv_bfloat162*>(&c_tile[(r + 8) * kMmaCStride + c]) =
          __floats2bfloat162_rn(acc[mi][ni][2], acc[mi][ni][3]);
    }
  __syncthreads();
  if (c_vector_ok) {
    using Chunk = Vec<bfloat16, kChunkElems>;
#pragma unroll 4
    for (int i = 0; i < kMmaBM * kMmaNChunks / kMmaThreads; ++i) {
      const int e = tid + i * kMmaThreads;
      const int r = e / kMmaNChunks, c = e % kMmaNChunks * kChunkElems;
      const std::int64_t m = m0 + r, n = n0 + c;  // N % 8 == 0: a chunk is all in or all out
      if (m < M && n < N) {
        Chunk v;
        v.load(&c_tile[r * kMmaCStride + c]);
        v.store(C + m * N + n);
      }
    }
  } else {
    for (int e = tid; e < kMmaBM * kMmaBN; e += kMmaThreads) {
      const int r = e / kMmaBN, c = e % kMmaBN;
      const std::int64_t m = m0 + r, n = n0 + c;
      if (m < M && n < N) C[m * N + n] = c_tile[r * kMmaCStride + c];
    }
  }
  // <<< d10.6
}

// ---------------------------------------------------------------------------------------------
// Steps 7-8 — Hopper (lesson §8-§9). A block of 3 warpgroups computes a 128 x 256 tile of C.
// Warpgroup 0 is the producer: it gives registers back (setmaxnreg.dec) and one thread issues,
// for each K-stage of 128 bytes, a TMA box of A (128 rows) and one of B (256 rows) into a ring of
// kWgStages stages, each announced on the stage's `full` mbarrier. Warpgroups 1 and 2 are the
// consumers (setmaxnreg.inc): consumer c multiplies rows 64c .. 64c + 63 of the tile by all 256
// columns with wgmma m64n256 (4 per stage), reading both operands straight from shared memory
// through matrix descriptors, and frees a stage on its `empty` mbarrier once the wgmma that read
// it has completed. TMA writes each 128-byte row of a box with its 16-byte chunks XOR-swizzled by
// the row's index mod 8 (CU_TENSOR_MAP_SWIZZLE_128B), the layout the descriptors announce.
constexpr int kWgBM = 128, kWgBN = 256;
constexpr int kWgStageKBytes = 128;  // one swizzle row: 64 bfloat16 or 128 FP8 values of K
constexpr int kWgStages = 4;
constexpr int kWgConsumers = 2;                                      // warpgroups
constexpr int kWgThreads = 128 * (1 + kWgConsumers);                 // 384
[[maybe_unused]] constexpr int kWgConsumerWarps = 4 * kWgConsumers;  // one empty arrival each
constexpr int kWgABytes = kWgBM * kWgStageKBytes;                    // 16 KiB
constexpr int kWgBBytes = kWgBN * kWgStageKBytes;                    // 32 KiB
constexpr int kWgStageBytes = kWgABytes + kWgBBytes;                 // 48 KiB
constexpr int kWgMmaKBytes = 32;                                     // k16 bfloat16 or k32 FP8
[[maybe_unused]] constexpr int kWgMmasPerStage = kWgStageKBytes / kWgMmaKBytes;  // 4
[[maybe_unused]] constexpr int kAccRegs = 64 * kWgBN / 128;  // 128 float32 per thread
constexpr int kSwizzleAtom = 1024;  // 8 rows of 128 bytes: the swizzle pattern's period
[[maybe_unused]] constexpr int kWgGroup = 8;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
// The epilogue stages C through shared memory for TMA stores (lesson §8.7, item 5): each consumer
// warpgroup has kWgCHalfBytes, half of its 64 x 256 tile, in boxes of 64 rows x 64 columns
// (128-byte rows, swizzled like the operands), after the barriers' own 1024-byte atom.
constexpr int kWgCBox = 64;                          // rows and columns of a box
constexpr int kWgCHalfBytes = 64 * (kWgBN / 2) * 2;  // 16 KiB
constexpr std::size_t kWgCStagingOffset = kWgStages * kWgStageBytes + kSwizzleAtom;
constexpr std::size_t kWgSmemBytes =
    kSwizzleAtom + kWgCStagingOffset + kWgConsumers * kWgCHalfBytes;
static_assert(2 * kWgStages * sizeof(std::uint64_t) <= kSwizzleAtom, "the barriers fit their atom");
static_assert(kWgABytes % kSwizzleAtom == 0 && kWgBBytes % kSwizzleAtom == 0,
              "every box starts on a swizzle atom (TMA and the descriptors both need it)");
static_assert(128 * kProducerRegs + 128 * kWgConsumers * kConsumerRegs <= 65536,
              "the registers after setmaxnreg fit the SM's 64K");
static_assert(kWgBM == 64 * kWgConsumers, "each consumer warpgroup owns 64 rows");

// Step 7 — the descriptor of a K-major tile in the 128-byte swizzled layout (lesson §8.3): start
// address >> 4 in bits 0-13; leading byte offset (between core matrices along K; unused when a
// wgmma's K extent lies inside one 128-byte swizzle row, as here; 16 by convention) >> 4 in bits
// 16-29; stride byte offset (between groups of 8 rows: 1024) >> 4 in bits 32-45; base offset 0
// (every atom starts 1024-aligned); swizzle mode 1 = 128B in bits 62-63.
__host__ __device__ constexpr std::uint64_t sw128_descriptor(std::uint32_t smem_addr) {
  // >>> STARTER d10.7a
  //|  // TODO(d10.7a) (lesson §8.3): (address & 0x3FFFF) >> 4 in bits 0-13, 16 >> 4 in bits 16-29,
  //|  // 1024 >> 4 in bits 32-45, 1 (128-byte swizzle) in bits 62-63.
  //|  return 0;
  // === SOLUTION
  return static_cast<std::uint64_t>((smem_addr & 0x3FFFF) >> 4) |
         (static_cast<std::uint64_t>(16 >> 4) << 16) |
         (static_cast<std::uint64_t>(kSwizzleAtom >> 4) << 32) | (std::uint64_t{1} << 62);
  // <<< d10.7a
}

// Steps 7-8 — one stage for inputs of element_bytes (lesson §8.2): K extent of 128 bytes, boxes
// of the block tile's rows, and the bytes both boxes deliver (whole boxes: TMA counts the zeros
// it writes for parts outside the matrix).
__host__ __device__ constexpr WgmmaStage wgmma_stage_of(int element_bytes) {
  // >>> STARTER d10.7b
  //|  // TODO(d10.7b) (lesson §8.2): K of one 128-byte swizzle row (kWgStageKBytes / element_bytes),
  //|  // kWgBM and kWgBN rows, kWgStageBytes.
  //|  return WgmmaStage{};
  // === SOLUTION
  return WgmmaStage{kWgStageKBytes / element_bytes, kWgBM, kWgBN, kWgStageBytes};
  // <<< d10.7b
}

// The bounded mbarrier wait (Day 7's), shared by the producer's and the consumers' waits.
__device__ course::MbarrierTimeout g_mbarrier_timeout;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
using course::fence_barrier_init;
using course::mbarrier_arrive;
using course::mbarrier_arrive_expect_tx;
using course::mbarrier_init;
using course::tma_load_2d;
// Waits for the phase `parity` of *bar for at most kMbarrierTimeoutNs; false when it gave up.
__device__ bool mbarrier_wait_bounded(std::uint64_t* bar, std::uint32_t parity,
                                      long long expected_bytes) {
  return course::mbarrier_wait_bounded<true, course::TimeoutBlock::kX>(
      bar, parity, expected_bytes, g_mbarrier_timeout, kMbarrierTimeoutNs);
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
// wgmma.fence / commit_group / wait_group, and fence_registers (the compiler must not move a use
// of the accumulators across the wait that makes them valid): course/wgmma.cuh.
using course::fence_registers;
using course::wgmma_commit;
using course::wgmma_fence;
using course::wgmma_wait;

// d (64 x 256, float32) += A (64 x 16 from desc_a) B (16 x 256 from desc_b), bfloat16, both
// K-major (no transpose); scale-d = 1 (accumulate); the accumulator layout: lane l of warp w
// holds rows 16w + l / 4 (+ 8) and columns 8j + 2 (l % 4) (+ 1), d[4j .. 4j + 3].
__device__ __forceinline__ void wgmma_m64n256k16_bf16(float (&d)[kAccRegs], std::uint64_t desc_a,
                                                      std::uint64_t desc_b) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
      "%127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

// The same for FP8: d += A (64 x 32, e4m3) B (32 x 256, e4m3); FP8 wgmma is K-major only.
__device__ __forceinline__ void wgmma_m64n256k32_e4m3(float (&d)[kAccRegs], std::uint64_t desc_a,
                                                      std::uint64_t desc_b) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
      "%127"
      "}, %128, %129, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Given (not an exercise) — what a block tile of the wgmma kernels writes. kStore: C = A B^T, and
// the tile's kWgBN columns are rows n * kWgBN .. of B. kSiluMul (Day 14's gated MLP, lesson
// §8.9): B = [G; U] stacks the gate rows on the up rows ([2 N, K]), C [M, N] =
// silu(A G^T) * (A U^T), and a tile's B stage holds gate rows n * 128 .. n * 128 + 127 above up
// rows N + n * 128 ..: each output column meets its gate and its up column in one thread's
// accumulators, and the gate/up product never reaches memory.
enum class WgEpilogue { kStore, kSiluMul };
template <WgEpilogue kEpi>
constexpr int kWgOutCols = kEpi == WgEpilogue::kSiluMul ? kWgBN / 2 : kWgBN;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Given — the B rows of tile column n for one stage: one box of kWgBN rows, or for kSiluMul two
// boxes of kWgBN / 2 rows (the launcher's map has boxes that size). Both land as one box of
// kWgBN rows would: each starts on a swizzle atom, and the swizzle follows the address.
template <WgEpilogue kEpi>
__device__ __forceinline__ void tma_load_b(unsigned char* dst, const CUtensorMap* b_map, int k0,
                                           std::int64_t n, std::int64_t N, std::uint64_t* bar) {
  if constexpr (kEpi == WgEpilogue::kStore) {
    tma_load_2d(dst, b_map, k0, static_cast<int>(n * kWgBN), bar);
  } else {
    constexpr int kHalf = kWgBN / 2;
    tma_load_2d(dst, b_map, k0, static_cast<int>(n * kHalf), bar);                      // gate
    tma_load_2d(dst + kWgBBytes / 2, b_map, k0, static_cast<int>(N + n * kHalf), bar);  // up
  }
}

// Given — the value of accumulator pair (4j + 2h, 4j + 2h + 1) for C: scaled, and for kSiluMul
// silu(gate) * up, the up column 128 further on (64 registers: kWgOutCols / 8 blocks of 4).
template <WgEpilogue kEpi>
__device__ __forceinline__ float2 c_pair(const float (&acc)[kAccRegs], int j, int h, float scale) {
  float v0 = acc[4 * j + 2 * h] * scale, v1 = acc[4 * j + 2 * h + 1] * scale;
  if constexpr (kEpi == WgEpilogue::kSiluMul) {  // g / (1 + e^-g) * u in float32
    constexpr int kUp = kWgOutCols<kEpi> / 8;
    v0 = __fdividef(v0, 1.0f + __expf(-v0)) * acc[4 * (j + kUp) + 2 * h];
    v1 = __fdividef(v1, 1.0f + __expf(-v1)) * acc[4 * (j + kUp) + 2 * h + 1];
  }
  return make_float2(v0, v1);
}

// Given — a consumer warpgroup's accumulators to C (lesson §8.7, item 5). Register 4j + 2h + e
// of lane l in warp w is row 16w + l / 4 + 8h, column 8j + 2 (l % 4) + e of the warpgroup's
// 64-row slice of the tile. With a tensor map of C (c_map; N % 8 == 0 and C 16-byte aligned), the
// warpgroup writes each half of its slice, 64 x 128, into its staging buffer (4-byte stores, the
// 16-byte chunks XOR-swizzled by row like TMA's 128-byte pattern: no bank conflicts) and one
// thread hands it to TMA stores, which clip rows and columns past C and run on while the
// warpgroup multiplies its next tile; the buffer is written again only once TMA has read it.
// Without one: straight from the registers, bfloat16 pairs when c_pair_ok, skipping rows past M
// and columns past N.
template <WgEpilogue kEpi>
__device__ __forceinline__ void store_c_tile(const float (&acc)[kAccRegs], bfloat16* C,
                                             const CUtensorMap* c_map, unsigned char* stages,
                                             std::int64_t M, std::int64_t N, TileCoord tile,
                                             int consumer, float scale, bool c_pair_ok) {
  constexpr int kOutCols = kWgOutCols<kEpi>;
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const int r0 = warp * 16 + lane / 4, c0 = (lane % 4) * 2;  // in the warpgroup's 64-row slice
  const std::int64_t m0 = tile.m * kWgBM + consumer * 64, n0 = tile.n * kOutCols;
  if (c_map == nullptr) {
#pragma unroll
    for (int j = 0; j < kOutCols / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const std::int64_t row = m0 + r0 + 8 * h, col = n0 + c0 + 8 * j;
        const float2 v = c_pair<kEpi>(acc, j, h, scale);
        if (row >= M) continue;
        bfloat16* out = C + row * N + col;
        if (c_pair_ok) {
          if (col < N) *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(v.x, v.y);
        } else {
          if (col < N) out[0] = __float2bfloat16_rn(v.x);
          if (col + 1 < N) out[1] = __float2bfloat16_rn(v.y);
        }
      }
    }
    return;
  }
  unsigned char* buffer = stages + kWgCStagingOffset + consumer * kWgCHalfBytes;
  const bool issuer = threadIdx.x % 128 == 0;
  constexpr int kHalfCols = kWgBN / 2;  // 128 columns of C per half
#pragma unroll
  for (int half = 0; half < kOutCols / kHalfCols; ++half) {
    if (issuer) course::bulk_wait_group_read<0>();  // TMA has read the buffer's last contents
    course::named_barrier_sync(1 + consumer, 128);
#pragma unroll
    for (int jj = 0; jj < kHalfCols / 8; ++jj) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float2 v = c_pair<kEpi>(acc, half * (kHalfCols / 8) + jj, h, scale);
        const int r = r0 + 8 * h, c = jj * 8 + c0;  // in the half: box c / 64, column c % 64
        const int chunk = (c % kWgCBox) / 8;
        *reinterpret_cast<__nv_bfloat162*>(buffer + (c / kWgCBox) * kWgCBox * 128 + r * 128 +
                                           ((chunk ^ (r % 8)) * 16) + (c % 8) * 2) =
            __floats2bfloat162_rn(v.x, v.y);
      }
    }
    course::fence_proxy_async_shared();  // these writes, before TMA (the async proxy) reads them
    course::named_barrier_sync(1 + consumer, 128);
    if (issuer) {
#pragma unroll
      for (int box = 0; box < kHalfCols / kWgCBox; ++box)
        course::tma_store_2d(c_map, buffer + box * kWgCBox * 128,
                             static_cast<int>(n0 + half * kHalfCols + box * kWgCBox),
                             static_cast<int>(m0));
      course::bulk_commit_group();
    }
  }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Steps 7-8 — the warp-specialised pipeline (lesson §8.4), for bfloat16 (kFp8 = false: 4
// wgmma m64n256k16 per stage) and e4m3 (4 wgmma m64n256k32). C = scale * A B in bfloat16.
// Stage s's k-th use completes phase k of full[s] (parity k % 2); the consumers' release of that
// use completes phase k of empty[s], which the producer waits for before the (k+1)-th use.
template <bool kFp8, WgEpilogue kEpi = WgEpilogue::kStore>
__device__ __forceinline__ void wgmma_gemm_body(const CUtensorMap* a_map, const CUtensorMap* b_map,
                                                bfloat16* __restrict__ C, std::int64_t M,
                                                std::int64_t N, std::int64_t K,
                                                const float* scale_a, const float* scale_b,
                                                bool c_pair_ok, int debug_extra_tx_bytes,
                                                const CUtensorMap* c_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // >>> STARTER d10.7
  //|  // TODO(d10.7) (lesson §8.4, §8.8): the stages (1024-aligned: round the dynamic shared
  //|  // memory's address up, the launcher adds kSwizzleAtom bytes), then full[kWgStages] and
  //|  // empty[kWgStages] mbarriers, initialised by thread 0 (full: 1 arrival; empty:
  //|  // kWgConsumerWarps) with fence_barrier_init() and a __syncthreads(). The block is
  //|  // persistent: tiles t = blockIdx.x, blockIdx.x + gridDim.x, ... of tiles_m x tiles_n
  //|  // (tiles of kWgBM x kWgOutCols<kEpi> of C), each at grouped_tile_of(t, ...), and one count
  //|  // `it` of stage uses runs on across them (stage it % kWgStages, use it / kWgStages).
  //|  // Warpgroup 0 (setmaxnreg_dec<kProducerRegs>): thread 0, for every tile and K-stage kt,
  //|  // waits for empty[s] of the previous use (mbarrier_wait_bounded, return on failure),
  //|  // arrive_expect_tx(full[s], expected), tma_load_2d of A at (k0, m0) and tma_load_b<kEpi>
  //|  // (given) of B. Warpgroups 1-2 (setmaxnreg_inc<kConsumerRegs>), per tile: zero acc; per
  //|  // K-stage: wait full[s] with parity use % 2, wgmma_fence(), kWgMmasPerStage wgmma with
  //|  // sw128_descriptor(start + kk * kWgMmaKBytes), wgmma_commit(), wgmma_wait<1>(), then lane 0
  //|  // of each warp releases the PREVIOUS stage on empty (not across tiles); after the last:
  //|  // wgmma_wait<0>(), fence_registers, release the last stage, then store_c_tile<kEpi>(acc, C,
  //|  // c_map, stages, M, N, tile, consumer, scale, c_pair_ok) (given). After the last tile, thread
  //|  // 0 of each consumer warpgroup waits for its TMA stores (course::bulk_wait_group_read<0>)
  //|  // when c_map is not null.
  //|  // TODO(d10.8) (lesson §9): for kFp8, wgmma_m64n256k32_e4m3 (kStageK = 128) and C = scale * acc
  //|  // with scale = *scale_a * *scale_b.
  //|  (void)a_map, (void)b_map, (void)C, (void)M, (void)N, (void)K, (void)scale_a, (void)scale_b,
  //|      (void)c_pair_ok, (void)debug_extra_tx_bytes;
  // === SOLUTION
  extern __shared__ __align__(1024) unsigned char wgmma_smem[];
  // The dynamic shared memory's start rounded up to a swizzle atom (the launcher adds that much).
  const std::uint32_t raw = smem_address(wgmma_smem);
  unsigned char* stages = wgmma_smem + (kSwizzleAtom - raw % kSwizzleAtom) % kSwizzleAtom;
  auto* full = reinterpret_cast<std::uint64_t*>(stages + kWgStages * kWgStageBytes);
  std::uint64_t* empty = full + kWgStages;
  constexpr int kStageK = wgmma_stage_of(kFp8 ? 1 : 2).k;  // elements of K per stage
  constexpr int kOutCols = kWgOutCols<kEpi>;               // C columns of a tile
  const std::int64_t tiles_m = (M + kWgBM - 1) / kWgBM, tiles_n = (N + kOutCols - 1) / kOutCols;
  const std::int64_t num_tiles = tiles_m * tiles_n;
  const std::int64_t k_tiles = (K + kStageK - 1) / kStageK;
  const long long expected = static_cast<long long>(kWgStageBytes) + debug_extra_tx_bytes;
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kWgStages; ++s) {
      mbarrier_init(&full[s], 1);                  // the producer's arrive.expect_tx
      mbarrier_init(&empty[s], kWgConsumerWarps);  // one arrival per consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {  // the producer
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      std::int64_t it = 0;  // stage uses so far, counted across this block's tiles
      for (std::int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
        const TileCoord tile = grouped_tile_of(t, tiles_m, tiles_n, kWgGroup);
        const int m0 = static_cast<int>(tile.m * kWgBM);
        for (std::int64_t kt = 0; kt < k_tiles; ++kt, ++it) {
          const int s = static_cast<int>(it % kWgStages);
          const auto use = static_cast<std::uint32_t>(it / kWgStages);
          if (use > 0 && !mbarrier_wait_bounded(&empty[s], (use - 1) % 2, expected)) return;
          unsigned char* stage = stages + s * kWgStageBytes;
          const int k0 = static_cast<int>(kt * kStageK);
          mbarrier_arrive_expect_tx(&full[s], static_cast<std::uint32_t>(expected));
          tma_load_2d(stage, a_map, k0, m0, &full[s]);
          tma_load_b<kEpi>(stage + kWgABytes, b_map, k0, tile.n, N, &full[s]);
        }
      }
    }
    return;
  }

  setmaxnreg_inc<kConsumerRegs>();
  const int consumer = warpgroup - 1;
  const int lane = threadIdx.x % 32, warp_in_group = (threadIdx.x % 128) / 32;
  const float scale = kFp8 ? *scale_a * *scale_b : 1.0f;
  std::int64_t it = 0;  // the producer's count: stage it % kWgStages, use it / kWgStages
  for (std::int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    const TileCoord tile = grouped_tile_of(t, tiles_m, tiles_n, kWgGroup);
    float acc[kAccRegs];
#pragma unroll
    for (int i = 0; i < kAccRegs; ++i) acc[i] = 0.0f;
    fence_registers(acc);
    for (std::int64_t kt = 0; kt < k_tiles; ++kt, ++it) {
      const int s = static_cast<int>(it % kWgStages);
      if (!mbarrier_wait_bounded(&full[s], static_cast<std::uint32_t>(it / kWgStages) % 2,
                                 expected))
        return;
      const std::uint32_t a_addr = smem_address(stages + s * kWgStageBytes) + consumer * 64 * 128;
      const std::uint32_t b_addr = smem_address(stages + s * kWgStageBytes + kWgABytes);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kWgMmasPerStage; ++kk) {
        // One wgmma's 32 bytes of K lie inside the 128-byte rows: advance the start address; the
        // hardware applies the swizzle to the address bits, as TMA did.
        const std::uint64_t desc_a = sw128_descriptor(a_addr + kk * kWgMmaKBytes);
        const std::uint64_t desc_b = sw128_descriptor(b_addr + kk * kWgMmaKBytes);
        if constexpr (kFp8)
          wgmma_m64n256k32_e4m3(acc, desc_a, desc_b);
        else
          wgmma_m64n256k16_bf16(acc, desc_a, desc_b);
      }
      wgmma_commit();
      // At most this stage's group still runs: the previous stage has been read, release it.
      wgmma_wait<1>();
      fence_registers(acc);
      if (kt > 0 && lane == 0) mbarrier_arrive(&empty[(it - 1) % kWgStages]);
    }
    wgmma_wait<0>();
    fence_registers(acc);
    // The tile's last stage has been read too: release it. The producer is already filling the
    // next tile's stages while this epilogue runs.
    if (lane == 0) mbarrier_arrive(&empty[(it - 1) % kWgStages]);

    store_c_tile<kEpi>(acc, C, c_map, stages, M, N, tile, consumer, scale, c_pair_ok);
  }
  // Every TMA store has read its buffer before the block's shared memory goes away.
  if (c_map != nullptr && threadIdx.x % 128 == 0) course::bulk_wait_group_read<0>();
    // <<< d10.7
#else
  // NOTE: never runs: the launchers refuse GPUs other than compute capability 9.0. The trap
  // makes the sm_80 build recognisable to the SASS checks (they look for HGMMA/QGMMA or this).
  __trap();
#endif
}

// Step 7 — bfloat16 (lesson §8).
__global__ void __launch_bounds__(kWgThreads, 1)
    gemm_7_wgmma_kernel(const __grid_constant__ CUtensorMap a_map,
                        const __grid_constant__ CUtensorMap b_map,
                        const __grid_constant__ CUtensorMap c_map, bool c_tma,
                        bfloat16* __restrict__ C, std::int64_t M, std::int64_t N, std::int64_t K,
                        bool c_pair_ok, int debug_extra_tx_bytes) {
  wgmma_gemm_body<false>(&a_map, &b_map, C, M, N, K, nullptr, nullptr, c_pair_ok,
                         debug_extra_tx_bytes, c_tma ? &c_map : nullptr);
}

// Given — step 7 with the gated MLP's epilogue (Day 14; lesson §8.9).
__global__ void __launch_bounds__(kWgThreads, 1)
    gemm_silu_mul_kernel(const __grid_constant__ CUtensorMap a_map,
                         const __grid_constant__ CUtensorMap b_map,
                         const __grid_constant__ CUtensorMap c_map, bool c_tma,
                         bfloat16* __restrict__ C, std::int64_t M, std::int64_t N, std::int64_t K,
                         bool c_pair_ok) {
  wgmma_gemm_body<false, WgEpilogue::kSiluMul>(&a_map, &b_map, C, M, N, K, nullptr, nullptr,
                                               c_pair_ok, 0, c_tma ? &c_map : nullptr);
}

// Step 8 — FP8 e4m3 with per-tensor scales (lesson §9).
__global__ void __launch_bounds__(kWgThreads, 1)
    gemm_8_fp8_kernel(const __grid_constant__ CUtensorMap a_map,
                      const __grid_constant__ CUtensorMap b_map,
                      const __grid_constant__ CUtensorMap c_map, bool c_tma,
                      bfloat16* __restrict__ C, std::int64_t M, std::int64_t N, std::int64_t K,
                      const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                      bool c_pair_ok, int debug_extra_tx_bytes) {
  wgmma_gemm_body<true>(&a_map, &b_map, C, M, N, K, scale_a, scale_b, c_pair_ok,
                        debug_extra_tx_bytes, c_tma ? &c_map : nullptr);
}

// ---------------------------------------------------------------------------------------------
// Launchers.

namespace {

constexpr std::int64_t kMaxDim = (std::int64_t{1} << 31) - 1;
constexpr std::int64_t kMaxGridY = 65535;

// Checks the shape and pointers; false when there is nothing to launch (M or N is 0, or K is 0
// after C has been set to 0).
template <class In, class Out>
bool check_gemm_args(const std::string& name, const In* A, const In* B, Out* C, std::int64_t M,
                     std::int64_t N, std::int64_t K) {
  course::require(M >= 0 && N >= 0 && K >= 0, name + ": M, N and K must be >= 0");
  course::require(M <= kMaxDim && N <= kMaxDim && K <= kMaxDim,
                  name + ": M, N and K must be below 2^31");
  if (M == 0 || N == 0) return false;
  course::require(A != nullptr && B != nullptr && C != nullptr, name + ": null pointer");
  if (K == 0) {
    COURSE_CUDA_CHECK(cudaMemsetAsync(C, 0, sizeof(Out) * static_cast<std::size_t>(M * N)));
    return false;
  }
  return true;
}

// The 16-byte rules of steps 4-6 (lab.h): every row of A and B whole 16-byte chunks, aligned.
void require_chunks(const std::string& name, const void* A, const void* B, std::int64_t K,
                    std::int64_t b_row, int elems_per_chunk, const char* b_row_name) {
  const std::string per = std::to_string(elems_per_chunk);
  course::require(K % elems_per_chunk == 0,
                  name + ": K = " + std::to_string(K) + " is not a multiple of " + per +
                      ": every row of A must be whole 16-byte chunks for the 16-byte loads");
  course::require(b_row % elems_per_chunk == 0,
                  name + ": " + b_row_name + " = " + std::to_string(b_row) +
                      " is not a multiple of " + per +
                      ": every row of B must be whole 16-byte chunks for the 16-byte loads");
  course::require(course::is_aligned(A, 16) && course::is_aligned(B, 16),
                  name + ": A and B must be 16-byte aligned (16-byte loads)");
}

void require_grid_y(const std::string& name, std::int64_t M, int rows_per_block) {
  course::require((M + rows_per_block - 1) / rows_per_block <= kMaxGridY,
                  name + ": M = " + std::to_string(M) + " needs more than 65535 blocks along y");
}

std::int64_t tiles(std::int64_t n, int tile) { return (n + tile - 1) / tile; }

using course::tensor_map_encoder;  // cuTensorMapEncodeTiled, through the runtime

// Steps 7-8 — a 2-D tensor map of a row-major matrix [rows, cols] (lesson §8.2): innermost
// dimension first (cols, rows), the row pitch in bytes, boxes of box_cols x box_rows, 128-byte
// swizzling, zeros for the parts of a box outside the matrix when loading (a store skips them).
CUtensorMap make_map_2d(const void* base, CUtensorMapDataType type, int element_bytes,
                        std::int64_t rows, std::int64_t cols, int box_rows, int box_cols,
                        CUtensorMapL2promotion promotion) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t pitch[1] = {static_cast<cuuint64_t>(cols) * element_bytes};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult result = tensor_map_encoder()(&map, type, 2, const_cast<void*>(base), dims, pitch,
                                               box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                               CU_TENSOR_MAP_SWIZZLE_128B, promotion,
                                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    throw std::runtime_error("cuTensorMapEncodeTiled failed with CUresult " +
                             std::to_string(static_cast<int>(result)));
  return map;
}

// A K-major operand [rows, K]: boxes of one 128-byte swizzle row of K by box_rows rows.
CUtensorMap make_kmajor_map(const void* base, CUtensorMapDataType type, int element_bytes,
                            std::int64_t rows, std::int64_t K, int box_rows) {
  return make_map_2d(base, type, element_bytes, rows, K, box_rows, wgmma_stage_of(element_bytes).k,
                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

// How steps 7-8 write C (lesson §8.7, item 5): through TMA stores with a bfloat16 [M, N] map of
// kWgCBox x kWgCBox boxes and the 128-byte swizzle, when TMA can write C (rows of a multiple of
// 16 bytes, C 16-byte aligned); otherwise from the registers (tma = false), as bfloat16 pairs
// when N is even and C 4-byte aligned (pair_ok), else one element at a time.
struct COutput {
  CUtensorMap map{};
  bool tma = false;
  bool pair_ok = false;
};
COutput c_output(bfloat16* C, std::int64_t M, std::int64_t N) {
  COutput c;
  c.pair_ok = N % 2 == 0 && course::is_aligned(C, 4);
  if (N % 8 != 0 || !course::is_aligned(C, 16)) return c;
  c.map = make_map_2d(C, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, M, N, kWgCBox, kWgCBox,
                      CU_TENSOR_MAP_L2_PROMOTION_NONE);
  c.tma = true;
  return c;
}

// The TMA rules of steps 7-8 (lab.h).
void require_tma(const std::string& name, const void* A, const void* B, std::int64_t K,
                 int element_bytes) {
  course::require(K * element_bytes % 16 == 0,
                  name + ": K = " + std::to_string(K) + " makes rows of " +
                      std::to_string(K * element_bytes) +
                      " bytes: TMA needs every row pitch to be a multiple of 16 bytes");
  course::require(course::is_aligned(A, 16) && course::is_aligned(B, 16),
                  name + ": A and B must be 16-byte aligned (TMA's global address rule)");
}

// Steps 7-8 are persistent: one block per SM (at most one per tile), each walking the tiles
// blockIdx.x, blockIdx.x + gridDim.x, ... (lesson §8.8).
// tile_cols: the C columns of a tile (kWgBN, or kWgBN / 2 for the gated MLP's epilogue).
int wgmma_grid(std::int64_t M, std::int64_t N, int tile_cols = kWgBN) {
  return static_cast<int>(std::min(tiles(M, kWgBM) * tiles(N, tile_cols),
                                   std::int64_t{std::max(course::device_facts().sm_count, 1)}));
}

}  // namespace

void gemm_1_naive(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                  std::int64_t K) {
  if (!check_gemm_args("gemm_1_naive", A, B, C, M, N, K)) return;
  require_grid_y("gemm_1_naive", M, kNaiveY);
  const dim3 grid(static_cast<unsigned>(tiles(N, kNaiveX)),
                  static_cast<unsigned>(tiles(M, kNaiveY)));
  gemm_1_naive_kernel<<<grid, dim3(kNaiveX, kNaiveY)>>>(A, B, C, M, N, K);
  COURSE_LAUNCH_CHECK();
}

void gemm_2_smem(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                 std::int64_t K) {
  if (!check_gemm_args("gemm_2_smem", A, B, C, M, N, K)) return;
  require_grid_y("gemm_2_smem", M, kTile);
  const dim3 grid(static_cast<unsigned>(tiles(N, kTile)), static_cast<unsigned>(tiles(M, kTile)));
  gemm_2_smem_kernel<<<grid, dim3(kTile, kTile)>>>(A, B, C, M, N, K);
  COURSE_LAUNCH_CHECK();
}

void gemm_3_register_tile(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                          std::int64_t K) {
  if (!check_gemm_args("gemm_3_register_tile", A, B, C, M, N, K)) return;
  require_grid_y("gemm_3_register_tile", M, kRtBM);
  const dim3 grid(static_cast<unsigned>(tiles(N, kRtBN)), static_cast<unsigned>(tiles(M, kRtBM)));
  gemm_3_register_tile_kernel<<<grid, kRtThreads>>>(A, B, C, M, N, K);
  COURSE_LAUNCH_CHECK();
}

void gemm_4_vectorized(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                       std::int64_t K) {
  if (!check_gemm_args("gemm_4_vectorized", A, B, C, M, N, K)) return;
  require_chunks("gemm_4_vectorized", A, B, K, N, 4, "N");
  course::require(course::is_aligned(C, 16),
                  "gemm_4_vectorized: C must be 16-byte aligned (16-byte stores)");
  require_grid_y("gemm_4_vectorized", M, kVecBM);
  const dim3 grid(static_cast<unsigned>(tiles(N, kVecBN)), static_cast<unsigned>(tiles(M, kVecBM)));
  gemm_4_vectorized_kernel<<<grid, kVecThreads>>>(A, B, C, M, N, K);
  COURSE_LAUNCH_CHECK();
}

void gemm_5_warp_tile(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                      std::int64_t K) {
  if (!check_gemm_args("gemm_5_warp_tile", A, B, C, M, N, K)) return;
  require_chunks("gemm_5_warp_tile", A, B, K, N, 4, "N");
  course::require(course::is_aligned(C, 16),
                  "gemm_5_warp_tile: C must be 16-byte aligned (16-byte stores)");
  require_grid_y("gemm_5_warp_tile", M, kWtBM);
  const dim3 grid(static_cast<unsigned>(tiles(N, kWtBN)), static_cast<unsigned>(tiles(M, kWtBM)));
  gemm_5_warp_tile_kernel<<<grid, kWtThreads>>>(A, B, C, M, N, K);
  COURSE_LAUNCH_CHECK();
}

int mma_swizzle_chunk(int row, int chunk, int row_chunks) {
  return swizzle_chunk(row, chunk, row_chunks);
}

TileCoord grouped_tile(std::int64_t block, std::int64_t tiles_m, std::int64_t tiles_n, int group) {
  course::require(
      tiles_m > 0 && tiles_n > 0 && group > 0 && block >= 0 && block < tiles_m * tiles_n,
      "grouped_tile: block outside the grid, or an empty grid");
  return grouped_tile_of(block, tiles_m, tiles_n, group);
}

void gemm_6_mma(const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M, std::int64_t N,
                std::int64_t K, BLayout b_layout) {
  const std::string name = "gemm_6_mma";
  if (!check_gemm_args(name, A, B, C, M, N, K)) return;
  const bool row_major = b_layout == BLayout::kRowMajor;
  require_chunks(name, A, B, K, row_major ? N : K, kChunkElems,
                 row_major ? "N (B row-major [K, N])" : "K (B stored [N, K])");
  const bool c_vector_ok = N % kChunkElems == 0 && course::is_aligned(C, 16);
  const int grid = static_cast<int>(tiles(M, kMmaBM) * tiles(N, kMmaBN));
  if (row_major) {
    course::allow_dynamic_smem(gemm_6_mma_kernel<BLayout::kRowMajor>, kMmaSmemBytes);
    gemm_6_mma_kernel<BLayout::kRowMajor>
        <<<grid, kMmaThreads, kMmaSmemBytes>>>(A, B, C, M, N, K, c_vector_ok);
  } else {
    course::allow_dynamic_smem(gemm_6_mma_kernel<BLayout::kColMajor>, kMmaSmemBytes);
    gemm_6_mma_kernel<BLayout::kColMajor>
        <<<grid, kMmaThreads, kMmaSmemBytes>>>(A, B, C, M, N, K, c_vector_ok);
  }
  COURSE_LAUNCH_CHECK();
}

std::uint64_t wgmma_descriptor_sw128(std::uint32_t smem_address) {
  return sw128_descriptor(smem_address);
}

WgmmaStage wgmma_stage(int element_bytes) {
  course::require(element_bytes == 1 || element_bytes == 2,
                  "wgmma_stage: element_bytes must be 1 (FP8) or 2 (bfloat16)");
  return wgmma_stage_of(element_bytes);
}

void gemm_7_wgmma(const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M, std::int64_t N,
                  std::int64_t K, int debug_extra_tx_bytes) {
  const std::string name = "gemm_7_wgmma";
  course::require_hopper(name, "TMA, wgmma and setmaxnreg");
  if (!check_gemm_args(name, A, B, C, M, N, K)) return;
  require_tma(name, A, B, K, 2);
  const CUtensorMap a_map = make_kmajor_map(A, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, M, K, kWgBM);
  const CUtensorMap b_map = make_kmajor_map(B, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, N, K, kWgBN);
  course::allow_dynamic_smem(gemm_7_wgmma_kernel, kWgSmemBytes);
  const COutput c = c_output(C, M, N);
  gemm_7_wgmma_kernel<<<wgmma_grid(M, N), kWgThreads, kWgSmemBytes>>>(
      a_map, b_map, c.map, c.tma, C, M, N, K, c.pair_ok, debug_extra_tx_bytes);
  COURSE_LAUNCH_CHECK();
}

void gemm_7_silu_mul(const bfloat16* A, const bfloat16* B, bfloat16* C, std::int64_t M,
                     std::int64_t N, std::int64_t K) {
  const std::string name = "gemm_7_silu_mul";
  course::require_hopper(name, "TMA, wgmma and setmaxnreg");
  course::require(N <= kMaxDim / 2,
                  name + ": 2 N must fit in 31 bits, got N = " + std::to_string(N));
  if (!check_gemm_args(name, A, B, C, M, N, K)) return;
  require_tma(name, A, B, K, 2);
  const CUtensorMap a_map = make_kmajor_map(A, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, M, K, kWgBM);
  const CUtensorMap b_map =
      make_kmajor_map(B, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, 2 * N, K, kWgBN / 2);
  course::allow_dynamic_smem(gemm_silu_mul_kernel, kWgSmemBytes);
  const COutput c = c_output(C, M, N);
  gemm_silu_mul_kernel<<<wgmma_grid(M, N, kWgBN / 2), kWgThreads, kWgSmemBytes>>>(
      a_map, b_map, c.map, c.tma, C, M, N, K, c.pair_ok);
  COURSE_LAUNCH_CHECK();
}

void gemm_8_fp8(const fp8_e4m3* A, const fp8_e4m3* B, bfloat16* C, std::int64_t M, std::int64_t N,
                std::int64_t K, const float* scale_a, const float* scale_b,
                int debug_extra_tx_bytes) {
  const std::string name = "gemm_8_fp8";
  course::require_hopper(name, "TMA, wgmma and setmaxnreg");
  if (!check_gemm_args(name, A, B, C, M, N, K)) return;
  course::require(scale_a != nullptr && scale_b != nullptr, name + ": null scale pointer");
  require_tma(name, A, B, K, 1);
  const CUtensorMap a_map = make_kmajor_map(A, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, M, K, kWgBM);
  const CUtensorMap b_map = make_kmajor_map(B, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, N, K, kWgBN);
  course::allow_dynamic_smem(gemm_8_fp8_kernel, kWgSmemBytes);
  const COutput c = c_output(C, M, N);
  gemm_8_fp8_kernel<<<wgmma_grid(M, N), kWgThreads, kWgSmemBytes>>>(
      a_map, b_map, c.map, c.tma, C, M, N, K, scale_a, scale_b, c.pair_ok, debug_extra_tx_bytes);
  COURSE_LAUNCH_CHECK();
}

void check_mbarrier_timeouts() {
  course::throw_if_mbarrier_timed_out(g_mbarrier_timeout,
                                      "do the two boxes deliver that many, and is every stage "
                                      "released on its empty barrier (lesson §8.4)?");
}

}  // namespace d10
