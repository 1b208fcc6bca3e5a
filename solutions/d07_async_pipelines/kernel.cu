// >>> STARTER
//|// Day 7 — your kernels. Read lessons/d07_async_pipelines.md first; README.md in this folder
//|// lists the exercises. Replace each TODO block; keep the names, the template parameters and the
//|// launchers (the tests call them through lab.h). Check with:  course check d07
// === SOLUTION
// Day 7 — reference solution: cp.async three ways, and the decode GEMV from synchronous tiles to
// a cp.async ring, 1-D bulk copies on an mbarrier and TMA tiles (Hopper).
// <<<
#include <cuda.h>  // CUtensorMap and its enums only: the driver is reached through the runtime
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cuda/pipeline>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/device.h"
#include "course/mbarrier.cuh"
#include "course/vec.cuh"
#include "course/warp.cuh"
#include "lab.h"

namespace d07 {

using course::kVec16;
using course::kWarpSize;
using course::to_float;
using course::Vec;

// ---------------------------------------------------------------------------------------------
// Exercise 1 — one 16-byte cp.async three ways (lesson §3).
// Block b copies tiles b, b + G, ... (G = gridDim.x) of kCopyTileChunks 16-byte chunks: thread t
// stages chunks t, t + kCopyThreads, ... of the tile in shared memory with kCopyChunksPerThread
// asynchronous copies in flight, waits for ITS copies, and writes the same chunks to y. A thread
// reads back only what it copied itself, so waiting for its own copies is enough: no barrier.
// The last n % 4 floats (less than a chunk) are copied by block 0 with plain loads and stores.
constexpr int kCopyThreads = 256;
constexpr int kCopyChunksPerThread = 4;  // 64 bytes in flight per thread
constexpr int kCopyTileChunks = kCopyThreads * kCopyChunksPerThread;
using Chunk = Vec<float, 4>;  // 16 bytes: what one cp.async moves
constexpr int kFloatsPerChunk = Chunk::kSize;

// The floats after the last whole chunk: y[4 * chunks + t] = x[4 * chunks + t] for t < n % 4.
__device__ void copy_float_tail(const float* __restrict__ x, float* __restrict__ y,
                                std::int64_t n) {
  const std::int64_t i = n / kFloatsPerChunk * kFloatsPerChunk + threadIdx.x;
  if (blockIdx.x == 0 && i < n) y[i] = x[i];
}

// (a) libcu++: a per-thread cuda::pipeline; memcpy_async of an aligned_size_t<16> is one cp.async.
__global__ void __launch_bounds__(kCopyThreads)
    async_copy_1_cuda_pipeline_kernel(const float* __restrict__ x, float* __restrict__ y,
                                      std::int64_t n) {
  // >>> STARTER d07.1a
  //|  // TODO(d07.1a) (lesson §3.2): make a per-thread pipeline (cuda::make_pipeline()). For every
  //|  // tile first = blockIdx.x * kCopyTileChunks, stepping by gridDim.x * kCopyTileChunks while
  //|  // first < n / 4: producer_acquire; for j < kCopyChunksPerThread, chunk c = j * kCopyThreads +
  //|  // threadIdx.x, if first + c is a whole chunk, cuda::memcpy_async(&tile[c], &x4[first + c],
  //|  // cuda::aligned_size_t<16>(sizeof(Chunk)), pipe); producer_commit; consumer_wait; write the
  //|  // same chunks from tile to y; consumer_release. Then copy_float_tail(x, y, n).
  // === SOLUTION
  __shared__ Chunk tile[kCopyTileChunks];
  const Chunk* xc = reinterpret_cast<const Chunk*>(x);
  Chunk* yc = reinterpret_cast<Chunk*>(y);
  const std::int64_t chunks = n / kFloatsPerChunk;
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kCopyTileChunks; first < chunks;
       first += static_cast<std::int64_t>(gridDim.x) * kCopyTileChunks) {
    pipe.producer_acquire();
#pragma unroll
    for (int j = 0; j < kCopyChunksPerThread; ++j) {
      const int c = j * kCopyThreads + threadIdx.x;  // chunk in the tile
      if (first + c < chunks)
        cuda::memcpy_async(&tile[c], &xc[first + c], cuda::aligned_size_t<16>(sizeof(Chunk)), pipe);
    }
    pipe.producer_commit();
    pipe.consumer_wait();
#pragma unroll
    for (int j = 0; j < kCopyChunksPerThread; ++j) {
      const int c = j * kCopyThreads + threadIdx.x;
      if (first + c < chunks) yc[first + c] = tile[c];
    }
    pipe.consumer_release();
  }
  copy_float_tail(x, y, n);
  // <<< d07.1a
}

// (b) The CUDA pipeline primitives: __pipeline_memcpy_async, __pipeline_commit,
// __pipeline_wait_prior(0) (all committed batches of this thread have landed).
__global__ void __launch_bounds__(kCopyThreads)
    async_copy_2_primitives_kernel(const float* __restrict__ x, float* __restrict__ y,
                                   std::int64_t n) {
  // >>> STARTER d07.1b
  //|  // TODO(d07.1b) (lesson §3.3): the loop of TODO(d07.1a) with __pipeline_memcpy_async(&tile[c],
  //|  // &x4[first + c], sizeof(Chunk)), one __pipeline_commit() and __pipeline_wait_prior(0) per tile
  //|  // before the chunks are written to y; then copy_float_tail(x, y, n).
  // === SOLUTION
  __shared__ Chunk tile[kCopyTileChunks];
  const Chunk* xc = reinterpret_cast<const Chunk*>(x);
  Chunk* yc = reinterpret_cast<Chunk*>(y);
  const std::int64_t chunks = n / kFloatsPerChunk;
  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kCopyTileChunks; first < chunks;
       first += static_cast<std::int64_t>(gridDim.x) * kCopyTileChunks) {
#pragma unroll
    for (int j = 0; j < kCopyChunksPerThread; ++j) {
      const int c = j * kCopyThreads + threadIdx.x;
      if (first + c < chunks) __pipeline_memcpy_async(&tile[c], &xc[first + c], sizeof(Chunk));
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
#pragma unroll
    for (int j = 0; j < kCopyChunksPerThread; ++j) {
      const int c = j * kCopyThreads + threadIdx.x;
      if (first + c < chunks) yc[first + c] = tile[c];
    }
  }
  copy_float_tail(x, y, n);
  // <<< d07.1b
}

// (c) The PTX itself: cp.async.cg (cache in L2 only: the data goes to shared memory, not
// through L1), commit_group, wait_group N (all but the newest N groups of this thread have
// landed). The GEMV kernels below are built on these three helpers.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* global_src) {
  // >>> STARTER d07.1c
  //|  // TODO(d07.1c) (lesson §3.4): asm volatile with "cp.async.cg.shared.global [%0], [%1], 16;",
  //|  // the shared-memory address as a 32-bit "r" operand (__cvta_generic_to_shared), the global
  //|  // pointer as "l", and a "memory" clobber.
  // === SOLUTION
  const auto dst = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global_src)
               : "memory");
  // <<< d07.1c
}
__device__ __forceinline__ void cp_async_commit() {
  // >>> STARTER d07.1c
  //|  // TODO(d07.1c): "cp.async.commit_group;" (with a "memory" clobber).
  // === SOLUTION
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  // <<< d07.1c
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  // >>> STARTER d07.1c
  //|  // TODO(d07.1c): "cp.async.wait_group %0;" with kPending as an "n" (immediate) operand.
  // === SOLUTION
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
  // <<< d07.1c
}

__global__ void __launch_bounds__(kCopyThreads)
    async_copy_3_ptx_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  // >>> STARTER d07.1c
  //|  // TODO(d07.1c) (lesson §3.4): the loop of TODO(d07.1a) with cp_async_16, one
  //|  // cp_async_commit() and cp_async_wait<0>() per tile; then copy_float_tail(x, y, n).
  // === SOLUTION
  __shared__ Chunk tile[kCopyTileChunks];
  const Chunk* xc = reinterpret_cast<const Chunk*>(x);
  Chunk* yc = reinterpret_cast<Chunk*>(y);
  const std::int64_t chunks = n / kFloatsPerChunk;
  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kCopyTileChunks; first < chunks;
       first += static_cast<std::int64_t>(gridDim.x) * kCopyTileChunks) {
#pragma unroll
    for (int j = 0; j < kCopyChunksPerThread; ++j) {
      const int c = j * kCopyThreads + threadIdx.x;
      if (first + c < chunks) cp_async_16(&tile[c], &xc[first + c]);
    }
    cp_async_commit();
    cp_async_wait<0>();
#pragma unroll
    for (int j = 0; j < kCopyChunksPerThread; ++j) {
      const int c = j * kCopyThreads + threadIdx.x;
      if (first + c < chunks) yc[first + c] = tile[c];
    }
  }
  copy_float_tail(x, y, n);
  // <<< d07.1c
}

// ---------------------------------------------------------------------------------------------
// Exercises 2-6 — the GEMV of decoding (lesson §4).
// Block b computes rows row0 = 8b ... 8b + 7 of y for every batch row: warp w owns row0 + w.
// The block walks K in tiles of kTileK elements. One STAGE of shared memory holds one tile:
//   [kRowsPerBlock][kTileK] of W (the block's 8 row segments), then [kBatch][kTileK] of x,
// so every weight element loaded is used for all batch rows, and the x tile is loaded once per
// block, not once per warp. In a tile, lane l of warp w multiplies 16-byte chunks l, l + 32, ...
// of its row segment with the same chunks of each x row, accumulating in float32; at the end a
// warp_sum per batch row and lane 0 stores y[b, row].
// K % 8 == 0 (the launchers check it), so a row is K / 8 whole chunks; the last tile of a row
// holds what is left: `chunks` <= kTileChunks of them.
constexpr int kGemvThreads = 256;
// At least 4 blocks per SM as far as registers go (at most 64 registers per thread): enough
// warps to keep the copies of several blocks in flight. (With the thread count alone, ptxas
// aims lower on sm_80 and spills the synchronous kernel's registers.)
constexpr int kGemvMinBlocksPerSm = 4;
constexpr int kRowsPerBlock = kGemvThreads / kWarpSize;  // one warp per row
constexpr int kChunkElems = kVec16<bfloat16>;            // 8 bfloat16 = 16 bytes
constexpr int kTileK = 512;                              // elements of a row per stage: 1 KiB
constexpr int kTileChunks = kTileK / kChunkElems;
static_assert(kTileK % kChunkElems == 0, "a tile is whole 16-byte chunks");
static_assert(kTileChunks % kWarpSize == 0, "every lane gets the same number of chunks");
using BVec = Vec<bfloat16, kChunkElems>;

// One stage: W's rows, then x's, each kTileK (or the TMA's kTmaTileK) elements long.
template <int kBatch, int kTile>
constexpr int stage_elems = (kRowsPerBlock + kBatch) * kTile;

// The chunks of tile t: kTileChunks, or fewer in the last tile of a row.
__device__ __forceinline__ int chunks_in_tile(std::int64_t k_chunks, std::int64_t t,
                                              int tile_chunks) {
  const std::int64_t left = k_chunks - t * tile_chunks;
  return static_cast<int>(left < tile_chunks ? left : tile_chunks);
}

// acc[b] += sum over the lane's chunks c of w_row[8c..8c+7] . x_tile[b][8c..8c+7] (shared memory,
// x rows x_stride elements apart), for b < batch. kBatch is a bound known at compile time, so
// acc[] stays in registers; rows b >= batch are skipped by a uniform branch.
template <int kBatch>
__device__ __forceinline__ void accumulate_chunks(const bfloat16* w_row, const bfloat16* x_tile,
                                                  int x_stride, int chunks, int batch,
                                                  float (&acc)[kBatch]) {
  for (int c = threadIdx.x % kWarpSize; c < chunks; c += kWarpSize) {
    BVec w;
    w.load(w_row + c * kChunkElems);
    float wf[kChunkElems];
#pragma unroll
    for (int e = 0; e < kChunkElems; ++e) wf[e] = to_float(w[e]);
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (b < batch) {
        BVec xv;
        xv.load(x_tile + b * x_stride + c * kChunkElems);
#pragma unroll
        for (int e = 0; e < kChunkElems; ++e) acc[b] = fmaf(wf[e], to_float(xv[e]), acc[b]);
      }
    }
  }
}

// The warp's sums, stored by lane 0: y[b, row] for b < batch. Every lane of the warp calls it.
template <int kBatch>
__device__ __forceinline__ void store_row(float (&acc)[kBatch], float* __restrict__ y,
                                          std::int64_t N, std::int64_t row, int batch) {
#pragma unroll
  for (int b = 0; b < kBatch; ++b) {
    if (b < batch) {
      const float sum = course::warp_sum(acc[b]);
      if (threadIdx.x % kWarpSize == 0 && row < N) y[b * N + row] = sum;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 — synchronous tiles (lesson §4.2). Load a tile (16-byte loads, stored to shared
// memory), barrier, compute, barrier (nobody overwrites the tile while another warp reads it).
// Nothing overlaps: while the loads are in flight the block has nothing to compute, and while
// it computes it has nothing in flight. Only other blocks on the SM hide the latency.
template <int kBatch>
__device__ void load_tile_sync(bfloat16* stage, const bfloat16* __restrict__ W,
                               const bfloat16* __restrict__ x, std::int64_t N, std::int64_t K,
                               int batch, std::int64_t row0, std::int64_t k0, int chunks) {
  // >>> STARTER d07.2a
  //|  // TODO(d07.2a) (lesson §4.2): warp w copies row row0 + w of W (if < N), chunks lane, lane + 32,
  //|  // ... below `chunks`, from W + (row0 + w) * K + k0 to stage + w * kTileK, as BVec load/store.
  //|  // Then all threads copy the batch * chunks chunks of x: i = threadIdx.x, i + kGemvThreads, ...;
  //|  // b = i / chunks, c = i % chunks; from x + b * K + k0 + 8c to the x part of the stage
  //|  // (stage + kRowsPerBlock * kTileK + b * kTileK + 8c).
  // === SOLUTION
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  if (row0 + warp < N) {
    const bfloat16* src = W + (row0 + warp) * K + k0;
    for (int c = lane; c < chunks; c += kWarpSize) {
      BVec v;
      v.load(src + c * kChunkElems);
      v.store(stage + warp * kTileK + c * kChunkElems);
    }
  }
  bfloat16* x_tile = stage + kRowsPerBlock * kTileK;
  for (int i = threadIdx.x; i < batch * chunks; i += kGemvThreads) {
    const int b = i / chunks, c = i % chunks;  // x row, chunk in the tile
    BVec v;
    v.load(x + b * K + k0 + c * kChunkElems);
    v.store(x_tile + b * kTileK + c * kChunkElems);
  }
  // <<< d07.2a
}

template <int kBatch>
__global__ void __launch_bounds__(kGemvThreads, kGemvMinBlocksPerSm)
    gemv_1_sync_kernel(const bfloat16* __restrict__ W, const bfloat16* __restrict__ x,
                       float* __restrict__ y, std::int64_t N, std::int64_t K, int batch) {
  // >>> STARTER d07.2b
  //|  // TODO(d07.2b) (lesson §4.2): row0 = blockIdx.x * kRowsPerBlock (64-bit), row = row0 + warp,
  //|  // k_chunks = K / 8, tiles = ceil(k_chunks / kTileChunks); float acc[kBatch] = {}. For each
  //|  // tile t: chunks = chunks_in_tile(k_chunks, t, kTileChunks); load_tile_sync; __syncthreads();
  //|  // if row < N, accumulate_chunks(this warp's row of the stage, the x part, kTileK, chunks, batch,
  //|  // acc); __syncthreads(). Then store_row(acc, y, N, row, batch).
  // === SOLUTION
  __shared__ alignas(16) bfloat16 stage[stage_elems<kBatch, kTileK>];
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock;
  const std::int64_t row = row0 + threadIdx.x / kWarpSize;
  const std::int64_t k_chunks = K / kChunkElems;
  const std::int64_t tiles = (k_chunks + kTileChunks - 1) / kTileChunks;
  float acc[kBatch] = {};
  for (std::int64_t t = 0; t < tiles; ++t) {
    const int chunks = chunks_in_tile(k_chunks, t, kTileChunks);
    load_tile_sync<kBatch>(stage, W, x, N, K, batch, row0, t * kTileK, chunks);
    __syncthreads();  // every thread's part of the tile is in shared memory
    if (row < N)
      accumulate_chunks<kBatch>(stage + (threadIdx.x / kWarpSize) * kTileK,
                                stage + kRowsPerBlock * kTileK, kTileK, chunks, batch, acc);
    __syncthreads();  // every warp is done with the tile before the next load overwrites it
  }
  store_row<kBatch>(acc, y, N, row, batch);
  // <<< d07.2b
}

// ---------------------------------------------------------------------------------------------
// Exercises 3 and 4 — cp.async stages (lesson §4.3, §5).
// The same tile, copied by cp.async straight from global to shared memory (LDGSTS: no register
// holds the data, and the thread issues the next copy at once instead of waiting for the load).
// Every thread commits exactly one group per tile, even when it has nothing to copy (an empty
// group completes at once): the group counts then mean the same in every thread, which is what
// wait_group's argument relies on.
template <int kBatch>
__device__ void issue_tile_cp_async(bfloat16* stage, const bfloat16* __restrict__ W,
                                    const bfloat16* __restrict__ x, std::int64_t N, std::int64_t K,
                                    int batch, std::int64_t row0, std::int64_t k0, int chunks) {
  // >>> STARTER d07.3a
  //|  // TODO(d07.3a) (lesson §4.3): load_tile_sync's mapping with cp_async_16(dst, src) in place of
  //|  // each BVec load + store.
  // === SOLUTION
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  if (row0 + warp < N) {
    const bfloat16* src = W + (row0 + warp) * K + k0;
    for (int c = lane; c < chunks; c += kWarpSize)
      cp_async_16(stage + warp * kTileK + c * kChunkElems, src + c * kChunkElems);
  }
  bfloat16* x_tile = stage + kRowsPerBlock * kTileK;
  for (int i = threadIdx.x; i < batch * chunks; i += kGemvThreads) {
    const int b = i / chunks, c = i % chunks;  // x row, chunk in the tile
    cp_async_16(x_tile + b * kTileK + c * kChunkElems, x + b * K + k0 + c * kChunkElems);
  }
  // <<< d07.3a
}

// Exercise 3 — two stages (lesson §4.3): tile t + 1 is copied into the other stage while tile t
// is computed. wait_group 1: all but the newest group (tile t + 1's) have landed, so tile t has.
template <int kBatch>
__global__ void __launch_bounds__(kGemvThreads, kGemvMinBlocksPerSm)
    gemv_2_double_buffer_kernel(const bfloat16* __restrict__ W, const bfloat16* __restrict__ x,
                                float* __restrict__ y, std::int64_t N, std::int64_t K, int batch) {
  // >>> STARTER d07.3b
  //|  // TODO(d07.3b) (lesson §4.3): two stages of stage_elems<kBatch, kTileK> in dynamic_smem. Issue
  //|  // tile 0 into stage 0 and commit. For each tile t: issue tile t + 1 (if any) into stage
  //|  // (t + 1) % 2; commit (always, even an empty group); cp_async_wait<1>(); __syncthreads();
  //|  // accumulate stage t % 2 (rows < N); __syncthreads() before that stage is refilled.
  //|  // Then store_row.
  // === SOLUTION
  extern __shared__ __align__(128) unsigned char dynamic_smem[];
  bfloat16* stages = reinterpret_cast<bfloat16*>(dynamic_smem);  // [2][stage_elems]
  constexpr int kStage = stage_elems<kBatch, kTileK>;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock;
  const std::int64_t row = row0 + threadIdx.x / kWarpSize;
  const std::int64_t k_chunks = K / kChunkElems;
  const std::int64_t tiles = (k_chunks + kTileChunks - 1) / kTileChunks;
  float acc[kBatch] = {};
  if (tiles > 0)
    issue_tile_cp_async<kBatch>(stages, W, x, N, K, batch, row0, 0,
                                chunks_in_tile(k_chunks, 0, kTileChunks));
  cp_async_commit();
  for (std::int64_t t = 0; t < tiles; ++t) {
    bfloat16* next = stages + ((t + 1) % 2) * kStage;
    if (t + 1 < tiles)
      issue_tile_cp_async<kBatch>(next, W, x, N, K, batch, row0, (t + 1) * kTileK,
                                  chunks_in_tile(k_chunks, t + 1, kTileChunks));
    cp_async_commit();
    cp_async_wait<1>();  // tile t has landed (this thread's copies of it)
    __syncthreads();     // ... and every other thread's
    const bfloat16* stage = stages + (t % 2) * kStage;
    if (row < N)
      accumulate_chunks<kBatch>(stage + (threadIdx.x / kWarpSize) * kTileK,
                                stage + kRowsPerBlock * kTileK, kTileK,
                                chunks_in_tile(k_chunks, t, kTileChunks), batch, acc);
    __syncthreads();  // every warp is done with this stage before tile t + 2 is copied into it
  }
  store_row<kBatch>(acc, y, N, row, batch);
  // <<< d07.3b
}

// Exercise 4 — a ring of kStages stages (lesson §5). The prologue puts tiles 0 .. kStages - 2 in
// flight (one group each). At iteration t, groups 0 .. t + kStages - 2 have been committed and
// tile t is group t, so waiting until at most kStages - 2 groups are pending means tile t has
// landed. One barrier per tile does two jobs: every thread's copies of tile t are visible, and
// every warp has finished computing tile t - 1, whose stage (the one tile t + kStages - 1 goes
// to) may now be overwritten. So the copy is issued AFTER the barrier and before the compute.
template <int kBatch, int kStages>
__global__ void __launch_bounds__(kGemvThreads, kGemvMinBlocksPerSm)
    gemv_3_multistage_kernel(const bfloat16* __restrict__ W, const bfloat16* __restrict__ x,
                             float* __restrict__ y, std::int64_t N, std::int64_t K, int batch) {
  static_assert(kStages >= 3, "with 2 stages, use the double buffer's two barriers");
  // >>> STARTER d07.4
  //|  // TODO(d07.4) (lesson §5): kStages stages in dynamic_smem. Prologue: tiles 0 .. kStages - 2,
  //|  // one commit each (also when there is no such tile). For each tile t: cp_async_wait<kStages -
  //|  // 2>(); ONE __syncthreads(); issue tile t + kStages - 1 (if any) into the stage tile t - 1 used;
  //|  // commit; accumulate the stage of tile t. Keep the two stage indices as counters that wrap to 0
  //|  // at kStages. Then store_row.
  // === SOLUTION
  extern __shared__ __align__(128) unsigned char dynamic_smem[];
  bfloat16* stages = reinterpret_cast<bfloat16*>(dynamic_smem);  // [kStages][stage_elems]
  constexpr int kStage = stage_elems<kBatch, kTileK>;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock;
  const std::int64_t row = row0 + threadIdx.x / kWarpSize;
  const std::int64_t k_chunks = K / kChunkElems;
  const std::int64_t tiles = (k_chunks + kTileChunks - 1) / kTileChunks;
  float acc[kBatch] = {};
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles)
      issue_tile_cp_async<kBatch>(stages + s * kStage, W, x, N, K, batch, row0, s * kTileK,
                                  chunks_in_tile(k_chunks, s, kTileChunks));
    cp_async_commit();  // always: group s is tile s, even when it is empty
  }
  int read_stage = 0, write_stage = kStages - 1;  // stage of tile t, of tile t + kStages - 1
  for (std::int64_t t = 0; t < tiles; ++t) {
    cp_async_wait<kStages - 2>();  // tile t has landed (this thread's copies of it)
    __syncthreads();  // ... every thread's; and tile t - 1 (in write_stage) is no longer read
    const std::int64_t ahead = t + kStages - 1;
    if (ahead < tiles)
      issue_tile_cp_async<kBatch>(stages + write_stage * kStage, W, x, N, K, batch, row0,
                                  ahead * kTileK, chunks_in_tile(k_chunks, ahead, kTileChunks));
    cp_async_commit();
    const bfloat16* stage = stages + read_stage * kStage;
    if (row < N)
      accumulate_chunks<kBatch>(stage + (threadIdx.x / kWarpSize) * kTileK,
                                stage + kRowsPerBlock * kTileK, kTileK,
                                chunks_in_tile(k_chunks, t, kTileChunks), batch, acc);
    read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
  }
  store_row<kBatch>(acc, y, N, row, batch);
  // <<< d07.4
}

// ---------------------------------------------------------------------------------------------
// Exercises 5 and 6 — Hopper: bulk copies that complete on an mbarrier (lesson §6).
// Given: the mbarrier and bulk-copy instructions as small functions, and the bounded wait
// (course/mbarrier.cuh holds the ones Days 10 and 12 use too).
// An mbarrier's phase completes when its pending arrivals reach 0 AND its transaction count
// (bytes announced with expect_tx, minus bytes the copies have delivered) reaches 0. Waiting on
// a phase that never completes would hang the kernel, so every wait here gives up after
// kMbarrierTimeoutNs of %globaltimer, records what it expected and lets the block return; the
// launcher's check_mbarrier_timeouts() turns that into an error with a message.
__device__ course::MbarrierTimeout g_mbarrier_timeout;

using course::smem_address;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
using course::fence_barrier_init;
using course::mbarrier_arrive_expect_tx;
using course::mbarrier_init;
using course::tma_load_2d;
// Waits for the phase `parity` of *bar for at most kMbarrierTimeoutNs; false when it gave up
// (then the failure is recorded with the bytes the stage expected).
__device__ bool mbarrier_wait_bounded(std::uint64_t* bar, std::uint32_t parity,
                                      long long expected_bytes) {
  return course::mbarrier_wait_bounded<false, course::TimeoutBlock::kX>(
      bar, parity, expected_bytes, g_mbarrier_timeout, kMbarrierTimeoutNs);
}
// 1-D bulk copy of `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to
// shared memory by the copy engine; its bytes count toward *bar's transaction count.
__device__ __forceinline__ void bulk_copy_to_shared(void* smem_dst, const void* global_src,
                                                    std::uint32_t bytes, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(smem_address(smem_dst)),
      "l"(global_src), "r"(bytes), "r"(smem_address(bar))
      : "memory");
}
#endif

// Exercise 5 — the bytes one stage expects (lesson §6.2): every row segment and every x
// segment is `chunks` 16-byte chunks. Host and device share it: the test checks it on the host.
__host__ __device__ inline std::int64_t stage_tx_bytes(int rows, int batch, std::int64_t chunks) {
  // >>> STARTER d07.5a
  //|  // TODO(d07.5a) (lesson §6.2): the bytes the copies of one stage deliver: `rows` segments of
  //|  // W and `batch` of x, `chunks` 16-byte chunks each.
  //|  return -1;
  // === SOLUTION
  return static_cast<std::int64_t>(rows + batch) * chunks * 16;
  // <<< d07.5a
}

// Exercise 5 — gemv_4_bulk (lesson §6.2). kBulkStages stages, each with its own mbarrier
// (`full`: the stage's bytes have landed). Thread 0 is the producer: for a tile it announces the
// stage's bytes with arrive.expect_tx and issues one bulk copy per row segment of W (rows < N
// only) and per x row. Every thread waits on the stage's barrier with the parity of its use
// (the k-th use of a stage completes phase k, parity k % 2), computes, and after the block's
// barrier (nobody reads the stage any more) thread 0 refills it with the tile kBulkStages ahead.
constexpr int kBulkStages = 4;

template <int kBatch>
__global__ void __launch_bounds__(kGemvThreads, kGemvMinBlocksPerSm)
    gemv_4_bulk_kernel(const bfloat16* __restrict__ W, const bfloat16* __restrict__ x,
                       float* __restrict__ y, std::int64_t N, std::int64_t K, int batch,
                       int debug_extra_tx_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // >>> STARTER d07.5b
  //|  // TODO(d07.5b) (lesson §6.2): stages of stage_elems<kBatch, kTileK> in dynamic_smem, then
  //|  // kBulkStages mbarriers `full`. Thread 0 inits each with 1 arrival and fence_barrier_init();
  //|  // __syncthreads(). Thread 0 issues tiles 0 .. kBulkStages - 1:
  //|  // mbarrier_arrive_expect_tx(&full[s], stage_tx_bytes(rows_here, batch, chunks) +
  //|  // debug_extra_tx_bytes), then bulk_copy_to_shared of each row segment of W (rows < N) and each x
  //|  // row, chunks * 16 bytes, into the stage. For each tile t: s = t % kBulkStages, parity (t /
  //|  // kBulkStages) % 2; if (!mbarrier_wait_bounded(&full[s], parity, expected bytes)) return;
  //|  // accumulate; __syncthreads(); thread 0 refills stage s with tile t + kBulkStages (if any). Then
  //|  // store_row.
  // === SOLUTION
  extern __shared__ __align__(128) unsigned char dynamic_smem[];
  constexpr int kStage = stage_elems<kBatch, kTileK>;
  bfloat16* stages = reinterpret_cast<bfloat16*>(dynamic_smem);  // [kBulkStages][kStage]
  auto* full = reinterpret_cast<std::uint64_t*>(stages + kBulkStages * kStage);  // [kBulkStages]
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock;
  const std::int64_t row = row0 + threadIdx.x / kWarpSize;
  const int rows_here = static_cast<int>(N - row0 < kRowsPerBlock ? N - row0 : kRowsPerBlock);
  const std::int64_t k_chunks = K / kChunkElems;
  const std::int64_t tiles = (k_chunks + kTileChunks - 1) / kTileChunks;
  const auto expected_bytes = [&](std::int64_t t) {
    return stage_tx_bytes(rows_here, batch, chunks_in_tile(k_chunks, t, kTileChunks)) +
           debug_extra_tx_bytes;
  };
  // Thread 0 only: tile t into stage s.
  const auto issue = [&](int s, std::int64_t t) {
    const int chunks = chunks_in_tile(k_chunks, t, kTileChunks);
    const auto bytes = static_cast<std::uint32_t>(chunks * 16);
    bfloat16* stage = stages + s * kStage;
    mbarrier_arrive_expect_tx(&full[s], static_cast<std::uint32_t>(expected_bytes(t)));
    for (int r = 0; r < rows_here; ++r)
      bulk_copy_to_shared(stage + r * kTileK, W + (row0 + r) * K + t * kTileK, bytes, &full[s]);
    for (int b = 0; b < batch; ++b)
      bulk_copy_to_shared(stage + (kRowsPerBlock + b) * kTileK, x + b * K + t * kTileK, bytes,
                          &full[s]);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kBulkStages; ++s) mbarrier_init(&full[s], 1);  // one arrival: thread 0's
    fence_barrier_init();
  }
  __syncthreads();  // the barriers are initialised before anyone waits on them
  if (threadIdx.x == 0)
    for (int s = 0; s < kBulkStages && s < tiles; ++s) issue(s, s);
  float acc[kBatch] = {};
  for (std::int64_t t = 0; t < tiles; ++t) {
    const int s = static_cast<int>(t % kBulkStages);
    const auto parity = static_cast<std::uint32_t>((t / kBulkStages) % 2);
    if (!mbarrier_wait_bounded(&full[s], parity, expected_bytes(t))) return;
    const bfloat16* stage = stages + s * kStage;
    if (row < N)
      accumulate_chunks<kBatch>(stage + (threadIdx.x / kWarpSize) * kTileK,
                                stage + kRowsPerBlock * kTileK, kTileK,
                                chunks_in_tile(k_chunks, t, kTileChunks), batch, acc);
    __syncthreads();  // nobody reads stage s any more: it may be refilled
    if (threadIdx.x == 0 && t + kBulkStages < tiles) issue(s, t + kBulkStages);
  }
  store_row<kBatch>(acc, y, N, row, batch);
  // <<< d07.5b
#else
  // NOTE: never runs: the launcher refuses GPUs before compute capability 9.0. The trap makes it
  // loud if it ever did, and lets the SASS checks tell this architecture's kernel from an
  // unwritten one (they look for UBLKCP or this trap).
  __trap();
#endif
}

// Exercise 6 — gemv_5_tma (lesson §6.4). As gemv_4_bulk, but each stage is TWO copies whatever
// the shape: one 2-D box of the tensor map of W (kTmaTileK columns x kRowsPerBlock rows, at
// (k0, row0)) and one of x (kTmaTileK x batch, at (k0, 0)). The Tensor Memory Accelerator
// computes the addresses, and fills the parts of a box outside the matrix (rows >= N, columns
// >= K) with zeros, which add nothing to the dot products. A box always delivers its full size,
// zeros included, so every stage expects the same bytes. A box is at most 256 elements wide.
constexpr int kTmaTileK = 256;
[[maybe_unused]] constexpr int kTmaTileChunks = kTmaTileK / kChunkElems;  // used on sm_90 only
constexpr int kTmaStages = 8;
constexpr int kTmaAlign = 128;  // a box's shared-memory destination must be 128-byte aligned
static_assert((kRowsPerBlock * kTmaTileK * 2) % kTmaAlign == 0, "the x box starts aligned");

template <int kBatch>
__global__ void __launch_bounds__(kGemvThreads, kGemvMinBlocksPerSm)
    gemv_5_tma_kernel(const __grid_constant__ CUtensorMap w_map,
                      const __grid_constant__ CUtensorMap x_map, float* __restrict__ y,
                      std::int64_t N, std::int64_t K, int batch, int debug_extra_tx_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // >>> STARTER d07.6b
  //|  // TODO(d07.6b) (lesson §6.4): as TODO(d07.5b) with kTmaStages stages of stage_elems<kBatch,
  //|  // kTmaTileK>, starting at dynamic_smem rounded up to kTmaAlign bytes. Each stage expects the
  //|  // FULL boxes, (kRowsPerBlock + batch) * kTmaTileK * 2 bytes (+ debug_extra_tx_bytes): zeros
  //|  // outside the matrix count. Thread 0 issues two tma_load_2d per stage: W's box at (k0, row0)
  //|  // and x's at (k0, 0), x's box after W's in the stage.
  // === SOLUTION
  extern __shared__ __align__(128) unsigned char dynamic_smem[];
  constexpr int kStage = stage_elems<kBatch, kTmaTileK>;
  static_assert((kStage * 2) % kTmaAlign == 0, "every stage starts aligned");
  // The dynamic shared memory's start rounded up to kTmaAlign (the launcher adds that much).
  const std::uint32_t base = smem_address(dynamic_smem);
  bfloat16* stages = reinterpret_cast<bfloat16*>(
      dynamic_smem + ((kTmaAlign - base % kTmaAlign) % kTmaAlign));  // [kTmaStages][kStage]
  auto* full = reinterpret_cast<std::uint64_t*>(stages + kTmaStages * kStage);  // [kTmaStages]
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock;
  const std::int64_t row = row0 + threadIdx.x / kWarpSize;
  const std::int64_t k_chunks = K / kChunkElems;
  const std::int64_t tiles = (k_chunks + kTmaTileChunks - 1) / kTmaTileChunks;
  const long long expected = static_cast<long long>(kRowsPerBlock + batch) * kTmaTileK * 2 +
                             debug_extra_tx_bytes;  // full boxes: zeros count too
  const auto issue = [&](int s, std::int64_t t) {   // thread 0 only: tile t into stage s
    bfloat16* stage = stages + s * kStage;
    const int k0 = static_cast<int>(t * kTmaTileK);
    mbarrier_arrive_expect_tx(&full[s], static_cast<std::uint32_t>(expected));
    tma_load_2d(stage, &w_map, k0, static_cast<int>(row0), &full[s]);
    tma_load_2d(stage + kRowsPerBlock * kTmaTileK, &x_map, k0, 0, &full[s]);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kTmaStages; ++s) mbarrier_init(&full[s], 1);
    fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int s = 0; s < kTmaStages && s < tiles; ++s) issue(s, s);
  float acc[kBatch] = {};
  for (std::int64_t t = 0; t < tiles; ++t) {
    const int s = static_cast<int>(t % kTmaStages);
    const auto parity = static_cast<std::uint32_t>((t / kTmaStages) % 2);
    if (!mbarrier_wait_bounded(&full[s], parity, expected)) return;
    const bfloat16* stage = stages + s * kStage;
    if (row < N)
      accumulate_chunks<kBatch>(stage + (threadIdx.x / kWarpSize) * kTmaTileK,
                                stage + kRowsPerBlock * kTmaTileK, kTmaTileK,
                                chunks_in_tile(k_chunks, t, kTmaTileChunks), batch, acc);
    __syncthreads();  // nobody reads stage s any more: it may be refilled
    if (threadIdx.x == 0 && t + kTmaStages < tiles) issue(s, t + kTmaStages);
  }
  store_row<kBatch>(acc, y, N, row, batch);
  // <<< d07.6b
#else
  // NOTE: never runs (see gemv_4_bulk_kernel); the SASS checks look for UTMALDG or this trap.
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Launchers.

namespace {

void check_copy_args(const char* who, const float* x, const float* y, std::int64_t n, int blocks) {
  const std::string name = who;
  course::require(n >= 0, name + ": n must be >= 0");
  course::require(blocks >= 0, name + ": blocks must be >= 0 (0: the launcher chooses)");
  if (n == 0) return;
  course::require(x != nullptr && y != nullptr, name + ": null pointer");
  course::require(course::is_aligned(x, 16) && course::is_aligned(y, 16),
                  name +
                      ": x and y must be 16-byte aligned: cp.async copies aligned 16-byte "
                      "chunks");
}

int copy_grid(std::int64_t n, int blocks) {
  if (blocks > 0) return blocks;
  const std::int64_t tiles = course::ceil_div<std::int64_t>(n / kFloatsPerChunk, kCopyTileChunks);
  const std::int64_t most = 4LL * course::device_facts().sm_count;  // enough to fill the GPU
  return static_cast<int>(std::max<std::int64_t>(1, std::min(tiles, most)));
}

// Checks the GEMV arguments; false when there is nothing to launch (N == 0, or K == 0 after
// setting y to 0).
bool check_gemv_args(const char* who, const bfloat16* W, const bfloat16* x, float* y,
                     std::int64_t N, std::int64_t K, int batch) {
  const std::string name = who;
  course::require(N >= 0 && K >= 0, name + ": N and K must be >= 0");
  course::require(batch >= 1 && batch <= kMaxBatch, name + ": batch = " + std::to_string(batch) +
                                                        " is outside [1, " +
                                                        std::to_string(kMaxBatch) + "]");
  course::require(K % kChunkElems == 0,
                  name + ": K = " + std::to_string(K) +
                      " is not a multiple of 8: the rows of W and x must be whole 16-byte "
                      "chunks, which is what the asynchronous copies move");
  course::require(N <= (std::int64_t{1} << 31) - 1 && K <= (std::int64_t{1} << 31) - 1,
                  name + ": N and K must be below 2^31");
  if (N == 0) return false;
  course::require(W != nullptr && x != nullptr && y != nullptr, name + ": null pointer");
  course::require(course::is_aligned(W, 16) && course::is_aligned(x, 16),
                  name +
                      ": W and x must be 16-byte aligned: every row then starts on a "
                      "16-byte boundary, as the asynchronous copies need");
  if (K == 0) {
    COURSE_CUDA_CHECK(cudaMemsetAsync(y, 0, sizeof(float) * static_cast<std::size_t>(N) * batch));
    return false;
  }
  return true;
}

int gemv_grid(std::int64_t N) {
  return static_cast<int>(course::ceil_div<std::int64_t>(N, kRowsPerBlock));
}

template <int kBatch>
void launch_gemv_1(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                   int batch) {
  gemv_1_sync_kernel<kBatch><<<gemv_grid(N), kGemvThreads>>>(W, x, y, N, K, batch);
  COURSE_LAUNCH_CHECK();
}

template <int kBatch>
void launch_gemv_2(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                   int batch) {
  const std::size_t smem = 2 * sizeof(bfloat16) * stage_elems<kBatch, kTileK>;
  course::allow_dynamic_smem(gemv_2_double_buffer_kernel<kBatch>, smem);
  gemv_2_double_buffer_kernel<kBatch><<<gemv_grid(N), kGemvThreads, smem>>>(W, x, y, N, K, batch);
  COURSE_LAUNCH_CHECK();
}

template <int kBatch, int kStages>
void launch_gemv_3(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                   int batch) {
  const std::size_t smem = kStages * sizeof(bfloat16) * stage_elems<kBatch, kTileK>;
  course::allow_dynamic_smem(gemv_3_multistage_kernel<kBatch, kStages>, smem);
  gemv_3_multistage_kernel<kBatch, kStages>
      <<<gemv_grid(N), kGemvThreads, smem>>>(W, x, y, N, K, batch);
  COURSE_LAUNCH_CHECK();
}

template <int kBatch>
void launch_gemv_3_stages(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N,
                          std::int64_t K, int batch, int stages) {
  switch (stages) {
    case 3:
      return launch_gemv_3<kBatch, 3>(W, x, y, N, K, batch);
    case 4:
      return launch_gemv_3<kBatch, 4>(W, x, y, N, K, batch);
    case 6:
      return launch_gemv_3<kBatch, 6>(W, x, y, N, K, batch);
  }
}

template <int kBatch>
void launch_gemv_4(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                   int batch, int debug_extra_tx_bytes) {
  const std::size_t smem =
      kBulkStages * (sizeof(bfloat16) * stage_elems<kBatch, kTileK> + sizeof(std::uint64_t));
  course::allow_dynamic_smem(gemv_4_bulk_kernel<kBatch>, smem);
  gemv_4_bulk_kernel<kBatch>
      <<<gemv_grid(N), kGemvThreads, smem>>>(W, x, y, N, K, batch, debug_extra_tx_bytes);
  COURSE_LAUNCH_CHECK();
}

template <int kBatch>
void launch_gemv_5(const CUtensorMap& w_map, const CUtensorMap& x_map, float* y, std::int64_t N,
                   std::int64_t K, int batch, int debug_extra_tx_bytes) {
  const std::size_t smem =
      kTmaAlign +
      kTmaStages * (sizeof(bfloat16) * stage_elems<kBatch, kTmaTileK> + sizeof(std::uint64_t));
  course::allow_dynamic_smem(gemv_5_tma_kernel<kBatch>, smem);
  gemv_5_tma_kernel<kBatch>
      <<<gemv_grid(N), kGemvThreads, smem>>>(w_map, x_map, y, N, K, batch, debug_extra_tx_bytes);
  COURSE_LAUNCH_CHECK();
}

using course::tensor_map_encoder;  // cuTensorMapEncodeTiled, through the runtime

// Exercise 6 — the tensor map of a row-major bfloat16 matrix [rows, cols] (lesson §6.4): 2-D,
// dimensions innermost first (cols, rows), the row pitch in bytes, boxes of box_cols x box_rows
// elements, no swizzle (the box lands in shared memory row after row, as the kernel reads it),
// and zeros for the parts of a box outside the matrix.
CUtensorMap make_tensor_map_2d(const bfloat16* base, std::int64_t rows, std::int64_t cols,
                               int box_rows, int box_cols) {
  CUtensorMap map{};
  // >>> STARTER d07.6a
  //|  // TODO(d07.6a) (lesson §6.4): call tensor_map_encoder() (cuTensorMapEncodeTiled) with
  //|  // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank 2, `base`, the dimensions innermost first {cols, rows},
  //|  // the one pitch {cols * sizeof(bfloat16)} bytes, the box {box_cols, box_rows}, element strides
  //|  // {1, 1}, no interleave, no swizzle, L2 promotion 256B, OOB fill NONE (zeros); throw
  //|  // std::runtime_error if it does not return CUDA_SUCCESS.
  // === SOLUTION
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t pitch[1] = {static_cast<cuuint64_t>(cols) * sizeof(bfloat16)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult result = tensor_map_encoder()(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<bfloat16*>(base), dims, pitch, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    throw std::runtime_error("cuTensorMapEncodeTiled failed with CUresult " +
                             std::to_string(static_cast<int>(result)));
  // <<< d07.6a
  return map;
}

}  // namespace

void async_copy_1_cuda_pipeline(const float* x, float* y, std::int64_t n, int blocks) {
  check_copy_args("async_copy_1_cuda_pipeline", x, y, n, blocks);
  if (n == 0) return;
  async_copy_1_cuda_pipeline_kernel<<<copy_grid(n, blocks), kCopyThreads>>>(x, y, n);
  COURSE_LAUNCH_CHECK();
}

void async_copy_2_primitives(const float* x, float* y, std::int64_t n, int blocks) {
  check_copy_args("async_copy_2_primitives", x, y, n, blocks);
  if (n == 0) return;
  async_copy_2_primitives_kernel<<<copy_grid(n, blocks), kCopyThreads>>>(x, y, n);
  COURSE_LAUNCH_CHECK();
}

void async_copy_3_ptx(const float* x, float* y, std::int64_t n, int blocks) {
  check_copy_args("async_copy_3_ptx", x, y, n, blocks);
  if (n == 0) return;
  async_copy_3_ptx_kernel<<<copy_grid(n, blocks), kCopyThreads>>>(x, y, n);
  COURSE_LAUNCH_CHECK();
}

// The batch is rounded up to a compiled bound (1, 4 or 16): the kernels skip rows b >= batch.
void gemv_1_sync(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                 int batch) {
  if (!check_gemv_args("gemv_1_sync", W, x, y, N, K, batch)) return;
  if (batch == 1) return launch_gemv_1<1>(W, x, y, N, K, batch);
  if (batch <= 4) return launch_gemv_1<4>(W, x, y, N, K, batch);
  launch_gemv_1<kMaxBatch>(W, x, y, N, K, batch);
}

void gemv_2_double_buffer(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N,
                          std::int64_t K, int batch) {
  if (!check_gemv_args("gemv_2_double_buffer", W, x, y, N, K, batch)) return;
  if (batch == 1) return launch_gemv_2<1>(W, x, y, N, K, batch);
  if (batch <= 4) return launch_gemv_2<4>(W, x, y, N, K, batch);
  launch_gemv_2<kMaxBatch>(W, x, y, N, K, batch);
}

void gemv_3_multistage(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N,
                       std::int64_t K, int batch, int stages) {
  course::require(std::find(std::begin(kMultistageStages), std::end(kMultistageStages), stages) !=
                      std::end(kMultistageStages),
                  "gemv_3_multistage: stages = " + std::to_string(stages) +
                      " is not one of the compiled ring sizes (3, 4, 6)");
  if (!check_gemv_args("gemv_3_multistage", W, x, y, N, K, batch)) return;
  if (batch == 1) return launch_gemv_3_stages<1>(W, x, y, N, K, batch, stages);
  if (batch <= 4) return launch_gemv_3_stages<4>(W, x, y, N, K, batch, stages);
  launch_gemv_3_stages<kMaxBatch>(W, x, y, N, K, batch, stages);
}

std::int64_t bulk_stage_bytes(int rows, int batch, std::int64_t chunks) {
  return stage_tx_bytes(rows, batch, chunks);
}

void gemv_4_bulk(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                 int batch, int debug_extra_tx_bytes) {
  course::require_hopper("gemv_4_bulk", "cp.async.bulk and the Tensor Memory Accelerator",
                         course::Hopper::kAtLeast);
  if (!check_gemv_args("gemv_4_bulk", W, x, y, N, K, batch)) return;
  if (batch == 1) return launch_gemv_4<1>(W, x, y, N, K, batch, debug_extra_tx_bytes);
  if (batch <= 4) return launch_gemv_4<4>(W, x, y, N, K, batch, debug_extra_tx_bytes);
  launch_gemv_4<kMaxBatch>(W, x, y, N, K, batch, debug_extra_tx_bytes);
}

void gemv_5_tma(const bfloat16* W, const bfloat16* x, float* y, std::int64_t N, std::int64_t K,
                int batch, int debug_extra_tx_bytes) {
  course::require_hopper("gemv_5_tma", "cp.async.bulk and the Tensor Memory Accelerator",
                         course::Hopper::kAtLeast);
  if (!check_gemv_args("gemv_5_tma", W, x, y, N, K, batch)) return;
  const CUtensorMap w_map = make_tensor_map_2d(W, N, K, kRowsPerBlock, kTmaTileK);
  const CUtensorMap x_map = make_tensor_map_2d(x, batch, K, batch, kTmaTileK);
  if (batch == 1) return launch_gemv_5<1>(w_map, x_map, y, N, K, batch, debug_extra_tx_bytes);
  if (batch <= 4) return launch_gemv_5<4>(w_map, x_map, y, N, K, batch, debug_extra_tx_bytes);
  launch_gemv_5<kMaxBatch>(w_map, x_map, y, N, K, batch, debug_extra_tx_bytes);
}

void check_mbarrier_timeouts() {
  course::throw_if_mbarrier_timed_out(
      g_mbarrier_timeout,
      "the expected transaction count does not match the bytes the copies deliver (lesson §6.3)");
}

}  // namespace d07
