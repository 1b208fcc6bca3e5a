// >>> STARTER
//|// Day 2 — your kernels. Read lessons/d02_coalescing.md first; README.md in this folder lists
//|// the exercises. Replace each TODO block; keep the names, the template parameters and the
//|// launchers (the tests call them through lab.h). Check with:  course check d02
// === SOLUTION
// Day 2 — reference solution: coalescing and 16-byte vectorized access.
// <<<
//
// >>> STARTER
//|// Every kernel walks its data with a grid-stride loop (Day 1 §4) over a grid of one full wave;
//|// the launchers at the end of the file choose the grid and the path (16-byte vectors or one
//|// element at a time). They are given: read them, they are part of the lesson (§5).
// === SOLUTION
// Every kernel walks its data with a grid-stride loop over a grid of one full wave (the
// launchers at the end choose it). The kernels that move 16 bytes at a time keep kUnroll
// independent loads in flight per thread: they issue all their loads before the first store.
// <<<
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "course/check.h"
#include "course/device.h"
#include "course/dtype.h"
#include "lab.h"

namespace d02 {

using course::bfloat16;
using course::half;

constexpr int kBlockThreads = 256;  // 8 warps; 8 such blocks fill an SM's 2048 threads
constexpr int kUnroll = 4;          // vectors per thread per iteration: loads in flight
// Consecutive rows per thread and pass in the row kernels (Exercises 6 and 7), loads first: two
// 16-byte vectors in flight per thread, or four elements on the one-element path (V = 1).
template <int V>
constexpr int kRowUnroll = V == 1 ? 4 : 2;
constexpr std::int64_t kMaxGridY = 65535;

// =============================================================================================
// >>> STARTER
//|// Exercise 3 — the 16-byte vector type (lesson §4). Exercises 1 and 2 do not need it.
// === SOLUTION
// Exercise 3 — the 16-byte vector type (lesson §4).
// <<<
//
// >>> STARTER d02.3a
//|// N elements of T that move as ONE access: Vec16<T> = Vec<T, 16 / sizeof(T)> is 16 bytes, and a
//|// warp's load of 32 of them is 32 x 16 = 512 contiguous bytes in one instruction (LDG.E.128).
//|// The compiler emits a 16-byte load only for an address it knows to be 16-byte aligned, and the
//|// type's alignment is how it knows.
//|// TODO(d02.3a): declare the struct 16-byte aligned for Vec16: struct alignas(sizeof(T) * N) Vec.
// === SOLUTION
// N elements of T that move as ONE access. alignas(sizeof(T) * N) is what lets the compiler
// emit a single 16-byte load (LDG.E.128) for Vec16: it may only do so for an address it knows
// to be 16-byte aligned, and the type's alignment is how it knows. The launchers make sure the
// addresses really are (course::is_aligned); a misaligned 16-byte access is a fault.
// <<< d02.3a
template <class T, int N>
// >>> STARTER d02.3a
//|struct Vec {
// === SOLUTION
struct alignas(sizeof(T) * N) Vec {
  // <<< d02.3a
  T data[N];

  __device__ __forceinline__ T& operator[](int i) { return data[i]; }
  __device__ __forceinline__ const T& operator[](int i) const { return data[i]; }
  // >>> STARTER d02.3b
  //|
  //|  // TODO(d02.3b): read the N elements at ptr as ONE access of sizeof(T) * N bytes: treat ptr as
  //|  // a pointer to a whole Vec (reinterpret_cast<const Vec*>) and copy that Vec into *this. A loop
  //|  // over the N elements would be N small loads, not one wide one.
  //|  __device__ __forceinline__ void load(const T* ptr) { (void)ptr; }
  //|  // TODO(d02.3c): the same the other way: write *this to ptr as one access.
  //|  __device__ __forceinline__ void store(T* ptr) const { (void)ptr; }
  // === SOLUTION
  // One access of sizeof(T) * N bytes: copy the whole struct through a pointer of its own type.
  __device__ __forceinline__ void load(const T* ptr) { *this = *reinterpret_cast<const Vec*>(ptr); }
  __device__ __forceinline__ void store(T* ptr) const { *reinterpret_cast<Vec*>(ptr) = *this; }
  // <<< d02.3b
};

// How many elements of T fill 16 bytes: 4 floats, 8 halves or bfloat16s.
template <class T>
constexpr int kVec16 = 16 / static_cast<int>(sizeof(T));

template <class T>
using Vec16 = Vec<T, kVec16<T>>;

// =============================================================================================
// Given: float32 in, float32 out. Every kernel computes in float32 and rounds once, on the way
// out (round to nearest even), whatever the storage type.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ half from_float<half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ bfloat16 from_float<bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// =============================================================================================
// Exercise 1 — the coalesced copy (lesson §2).
// Thread t of the grid copies elements t, t + G, t + 2G, ... (G = threads in the grid). At each
// >>> STARTER
//|// step the 32 lanes of a warp touch 32 consecutive elements: for float32 one 128-byte line.
// === SOLUTION
// step the 32 lanes of a warp touch 32 consecutive elements: for float32 one 128-byte line, four
// 32-byte sectors, every byte of which is used.
// <<<
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    copy_1_coalesced_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n) {
  // >>> STARTER d02.1
  //|  // TODO(d02.1): a grid-stride loop (Day 1 §4): i starts at this thread's global index and steps
  //|  // by the number of threads in the grid, both in 64 bits, while i < n; copy y[i] = x[i].
  // === SOLUTION
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    y[i] = x[i];
  // <<< d02.1
}

// =============================================================================================
// Exercise 2 — the strided copy (lesson §3).
// The array as a row-major [rows, stride] matrix, rows = ceil(n / stride), copied one COLUMN at
// >>> STARTER
//|// a time: thread t copies rows t, t + G, ... of column 0, then of column 1, and so on, so that
//|// lanes l and l + 1 touch elements `stride` apart. This kernel is slow on purpose: the
//|// benchmark measures what the access pattern costs. Do not make it coalesced.
// === SOLUTION
// a time: thread t copies rows t, t + G, ... of column 0, then of column 1, and so on. Lanes
// l and l + 1 touch elements `stride` apart: from stride = 32 / sizeof(T) on, each lane's few
// bytes come from a sector of their own, and DRAM moves 32 bytes for every element.
// <<<
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    copy_1_strided_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n,
                          std::int64_t stride) {
  // >>> STARTER d02.2
  //|  // TODO(d02.2): rows = ceil(n / stride). An outer loop over the columns, col = 0, 1, ... while
  //|  // col < stride (and col < n: stride may exceed n); inside it, a grid-stride loop over the rows
  //|  // (row from this thread's global index, step = threads in the grid, while row < rows) that
  //|  // copies element i = row * stride + col, when i < n (the last row may be short).
  // === SOLUTION
  const std::int64_t rows = (n + stride - 1) / stride;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t col = 0; col < stride && col < n; ++col)
    for (std::int64_t row = first; row < rows; row += step) {
      const std::int64_t i = row * stride + col;
      if (i < n) y[i] = x[i];  // the last row may be short
    }
  // <<< d02.2
}

// =============================================================================================
// Given (the test of Exercise 3): y's vector v is x's vector v with its elements reversed.
// Thread t of the grid handles vectors t, t + G, ...; x and y are 16-byte aligned.
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    reverse_within_vectors_kernel(const T* __restrict__ x, T* __restrict__ y,
                                  std::int64_t vectors) {
  constexpr int V = kVec16<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       v < vectors; v += stride) {
    Vec16<T> in, out;
    in.load(x + v * V);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = in[V - 1 - k];
    out.store(y + v * V);
  }
}

// =============================================================================================
// Exercise 4 — the vectorized copy, with its tail (lesson §4, §5).
// >>> STARTER
//|// The body: n / V vectors of V elements (V = 16 / sizeof(T): one 16-byte access; the launcher
//|// also instantiates V = 1 for its element-by-element path, so write the kernel for any V). A
//|// block takes tiles of kUnroll * B vectors (B = blockDim.x): thread t handles vectors t, t + B,
//|// t + 2B, t + 3B of the tile, then moves on by the whole grid's tiles. The tail, the last n % V
//|// elements, goes to the grid's first threads. x and y are 16-byte aligned when V > 1.
// === SOLUTION
// The body: n / V vectors of V elements (V = 16 / sizeof(T): one 16-byte access; V = 1 on the
// launcher's element-by-element path). A block takes tiles of kUnroll * B vectors (B =
// blockDim.x): thread t loads vectors t, t + B, t + 2B, t + 3B of the tile (each load of the
// warp covers 32 consecutive vectors, 512 contiguous bytes), then stores them, then moves on by
// the whole grid's tiles. Issuing the kUnroll loads before the first store keeps 4 x 16 bytes
// in flight per thread. The tail, the last n % V elements, goes to the grid's first threads.
// <<<
template <class T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    copy_2_vectorized_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n) {
  // >>> STARTER d02.4
  //|  // TODO(d02.4):
  //|  //   1. vectors = n / V; tile = kUnroll * blockDim.x (in 64 bits).
  //|  //   2. for (v0 = blockIdx.x * tile + threadIdx.x; v0 < vectors; v0 += gridDim.x * tile):
  //|  //        Vec<T, V> buf[kUnroll];
  //|  //        first loop, u = 0 .. kUnroll - 1: v = v0 + u * blockDim.x; if v < vectors, load
  //|  //          buf[u] from x + v * V;
  //|  //        second loop: the same indices, store buf[u] to y + v * V.
  //|  //      All the loads before the first store: kUnroll independent 16-byte loads in flight per
  //|  //      thread (lesson §4.3). Put #pragma unroll on both loops, so that buf lives in registers.
  //|  //   3. The tail: element i = vectors * V + (this thread's global index), when i < n.
  // === SOLUTION
  const std::int64_t vectors = n / V;
  const std::int64_t tile = std::int64_t{kUnroll} * blockDim.x;
  for (std::int64_t v0 = static_cast<std::int64_t>(blockIdx.x) * tile + threadIdx.x; v0 < vectors;
       v0 += gridDim.x * tile) {
    Vec<T, V> buf[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = v0 + u * blockDim.x;
      if (v < vectors) buf[u].load(x + v * V);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = v0 + u * blockDim.x;
      if (v < vectors) buf[u].store(y + v * V);
    }
  }
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t i = vectors * V + t;  // the tail: fewer than V elements
  if (i < n) y[i] = x[i];
  // <<< d02.4
}

// =============================================================================================
// Exercise 5 — GeLU, tanh approximation, vectorized (lesson §6).
// >>> STARTER
//|// ([[maybe_unused]] only keeps the compiler quiet until your code uses them.)
// === SOLUTION
// Exercise 4's kernel with a function applied between the load and the store: the same
// mapping, the same bytes, a few dozen float32 instructions per element that hide behind the
// memory traffic.
// <<<
[[maybe_unused]] constexpr float kSqrt2OverPi = 0.7978845608028654f;
[[maybe_unused]] constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ float gelu_tanh(float x) {
  // >>> STARTER d02.5a
  //|  // TODO(d02.5a): return 0.5 x (1 + tanh(kSqrt2OverPi (x + kGeluCubic x^3))), in float32
  //|  // (tanhf).
  //|  (void)x;
  //|  return 0.0f;
  // === SOLUTION
  const float inner = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
  // <<< d02.5a
}

// >>> STARTER
//|// Exercise 4's kernel with gelu_tanh applied between the load and the store.
// === SOLUTION
// <<<
template <class T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    gelu_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n) {
  // >>> STARTER d02.5b
  //|  // TODO(d02.5b): copy your copy_2_vectorized_kernel, and between the loads and the stores
  //|  // compute, for each of the V elements k of buf[u], out[k] = from_float<T>(gelu_tanh(
  //|  // to_float(buf[u][k]))) into a Vec<T, V> out that you store. The tail element too.
  // === SOLUTION
  const std::int64_t vectors = n / V;
  const std::int64_t tile = std::int64_t{kUnroll} * blockDim.x;
  for (std::int64_t v0 = static_cast<std::int64_t>(blockIdx.x) * tile + threadIdx.x; v0 < vectors;
       v0 += gridDim.x * tile) {
    Vec<T, V> buf[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = v0 + u * blockDim.x;
      if (v < vectors) buf[u].load(x + v * V);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = v0 + u * blockDim.x;
      if (v < vectors) {
        Vec<T, V> out;
#pragma unroll
        for (int k = 0; k < V; ++k) out[k] = from_float<T>(gelu_tanh(to_float(buf[u][k])));
        out.store(y + v * V);
      }
    }
  }
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t i = vectors * V + t;
  if (i < n) y[i] = from_float<T>(gelu_tanh(to_float(x[i])));
  // <<< d02.5b
}

// =============================================================================================
// Exercise 6 — add-bias + GeLU, unfused and fused (lesson §7).
// The row kernels of Exercises 6 and 7 share one mapping. Thread (c, g), with c = blockIdx.x *
// blockDim.x + threadIdx.x and g = blockIdx.y, owns columns [c V, c V + V) and takes the rows in
// groups of kRowUnroll<V> consecutive rows: group g, then g + G, g + 2G, ... (G = gridDim.y), the
// group's loads first. A warp reads 32 consecutive vectors of one row: 512 contiguous bytes. V
// divides cols (the launcher takes V = 1 otherwise), so a vector never straddles two rows, and
// the thread's slice of the bias is loaded once and kept in registers for every row.

// 6a. y = x + bias, rounded to T: the first kernel of the unfused chain.
template <class T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    add_bias_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y,
                    std::int64_t rows, std::int64_t cols) {
  // >>> STARTER d02.6a
  //|  // TODO(d02.6a):
  //|  //   1. col = (blockIdx.x * blockDim.x + threadIdx.x) * V, in 64 bits; return if col >= cols.
  //|  //   2. Load this thread's slice of the bias once: Vec<T, V> b; b.load(bias + col).
  //|  //   3. for (r0 = blockIdx.y * kRowUnroll<V>; r0 < rows; r0 += kRowUnroll<V> * gridDim.y): as
  //|  //      in Exercise 4, first load buf[u] from x + r * cols + col for r = r0 + u < rows, then compute
  //|  //      out[k] = from_float<T>(to_float(buf[u][k]) + to_float(b[k])) and store out to
  //|  //      y + r * cols + col.
  // === SOLUTION
  const std::int64_t col = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (col >= cols) return;
  Vec<T, V> b;
  b.load(bias + col);
  const std::int64_t group_step = std::int64_t{kRowUnroll<V>} * gridDim.y;
  for (std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kRowUnroll<V>; r0 < rows;
       r0 += group_step) {
    Vec<T, V> buf[kRowUnroll<V>];
#pragma unroll
    for (int u = 0; u < kRowUnroll<V>; ++u) {
      const std::int64_t r = r0 + u;
      if (r < rows) buf[u].load(x + r * cols + col);
    }
#pragma unroll
    for (int u = 0; u < kRowUnroll<V>; ++u) {
      const std::int64_t r = r0 + u;
      if (r < rows) {
        Vec<T, V> out;
#pragma unroll
        for (int k = 0; k < V; ++k) out[k] = from_float<T>(to_float(buf[u][k]) + to_float(b[k]));
        out.store(y + r * cols + col);
      }
    }
  }
  // <<< d02.6a
}

// 6b. y = gelu(x + bias) in one pass: x + bias never leaves the registers.
template <class T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    add_bias_gelu_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y,
                         std::int64_t rows, std::int64_t cols) {
  // >>> STARTER d02.6b
  //|  // TODO(d02.6b): add_bias_kernel, with gelu_tanh applied to the float32 sum before it is
  //|  // rounded to T and stored. One read of x, one write of y.
  // === SOLUTION
  const std::int64_t col = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (col >= cols) return;
  Vec<T, V> b;
  b.load(bias + col);
  const std::int64_t group_step = std::int64_t{kRowUnroll<V>} * gridDim.y;
  for (std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kRowUnroll<V>; r0 < rows;
       r0 += group_step) {
    Vec<T, V> buf[kRowUnroll<V>];
#pragma unroll
    for (int u = 0; u < kRowUnroll<V>; ++u) {
      const std::int64_t r = r0 + u;
      if (r < rows) buf[u].load(x + r * cols + col);
    }
#pragma unroll
    for (int u = 0; u < kRowUnroll<V>; ++u) {
      const std::int64_t r = r0 + u;
      if (r < rows) {
        Vec<T, V> out;
#pragma unroll
        for (int k = 0; k < V; ++k)
          out[k] = from_float<T>(gelu_tanh(to_float(buf[u][k]) + to_float(b[k])));
        out.store(y + r * cols + col);
      }
    }
  }
  // <<< d02.6b
}

// =============================================================================================
// Exercise 7 — SiLU-and-mul, the gated MLP's activation (lesson §8).
// >>> STARTER d02.7a
//|// The row mapping of Exercise 6 over the d output columns: row r of the input holds the gate at
//|// r * 2d and the up projection at r * 2d + d, so a thread loads two vectors per row (both
//|// 16-byte aligned when V divides d) and stores one.
//|__device__ __forceinline__ float silu(float g) {
//|  // TODO(d02.7a): return g / (1 + exp(-g)), in float32 (expf).
//|  (void)g;
//|  return 0.0f;
//|}
// === SOLUTION
// The row mapping of Exercise 6 over the d output columns: each row r of the input holds the
// gate at r * 2d and the up projection at r * 2d + d, so a thread loads two vectors per row
// (both 16-byte aligned when V divides d) and stores one.
__device__ __forceinline__ float silu(float g) { return g / (1.0f + expf(-g)); }
// <<< d02.7a

template <class T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    silu_and_mul_kernel(const T* __restrict__ input, T* __restrict__ out, std::int64_t rows,
                        std::int64_t d) {
  // >>> STARTER d02.7b
  //|  // TODO(d02.7b): the mapping of add_bias_kernel with d columns and no bias. For each row r,
  //|  // load gate[u] from input + r * 2 * d + col and up[u] from input + r * 2 * d + d + col (all
  //|  // loads of the kRowUnroll<V> rows first), then store result[k] = from_float<T>(silu(gate) * up) to
  //|  // out + r * d + col.
  // === SOLUTION
  const std::int64_t col = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (col >= d) return;
  const std::int64_t group_step = std::int64_t{kRowUnroll<V>} * gridDim.y;
  for (std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kRowUnroll<V>; r0 < rows;
       r0 += group_step) {
    Vec<T, V> gate[kRowUnroll<V>], up[kRowUnroll<V>];
#pragma unroll
    for (int u = 0; u < kRowUnroll<V>; ++u) {
      const std::int64_t r = r0 + u;
      if (r < rows) {
        gate[u].load(input + r * 2 * d + col);
        up[u].load(input + r * 2 * d + d + col);
      }
    }
#pragma unroll
    for (int u = 0; u < kRowUnroll<V>; ++u) {
      const std::int64_t r = r0 + u;
      if (r < rows) {
        Vec<T, V> result;
#pragma unroll
        for (int k = 0; k < V; ++k)
          result[k] = from_float<T>(silu(to_float(gate[u][k])) * to_float(up[u][k]));
        result.store(out + r * d + col);
      }
    }
  }
  // <<< d02.7b
}

// =============================================================================================
// >>> STARTER
//|// Launchers (given). They check the arguments, choose the path (16-byte vectors when the
//|// pointers and the sizes allow them, one element at a time otherwise) and size the grid to one
//|// full wave (lesson §5.3, §5.4). You do not need to change anything below this line.
// === SOLUTION
// Launchers (the same in the starter). They check the arguments, choose the path (16-byte
// vectors when the pointers and the sizes allow them, one element at a time otherwise) and size
// the grid to one full wave (lesson §5.3, §5.4).
// <<<

// One full wave: how many blocks of kBlockThreads fit on the whole GPU at once, for this kernel
// (its registers decide how many fit on one SM; the occupancy calculator knows).
template <class Kernel>
std::int64_t wave_blocks(Kernel kernel) {
  int per_sm = 0;
  COURSE_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlockThreads, 0));
  return std::int64_t{std::max(per_sm, 1)} * course::device_facts().sm_count;
}

// The grid of a grid-stride kernel that needs `needed` blocks to cover its data in one pass:
// one wave at most, and no more than max_blocks when that is set.
template <class Kernel>
unsigned grid_1d(Kernel kernel, std::int64_t needed, int max_blocks) {
  std::int64_t blocks = std::min(wave_blocks(kernel), needed);
  if (max_blocks > 0) blocks = std::min<std::int64_t>(blocks, max_blocks);
  return static_cast<unsigned>(std::max<std::int64_t>(blocks, 1));
}

// The grid of the row kernels: x covers the row's column units (V columns each) once, y gives
// every group of kRowUnroll<V> consecutive rows its own blocks, so that each thread makes one pass
// (up to 65535 groups; past that, and under max_blocks, the row loop goes round). Measured on the
// H100 (lesson 2, §7.3): one pass keeps more loads in flight as the grid drains than a one-wave
// grid whose threads each walk many row groups, and consecutive rows keep the blocks that run
// together on a compact stretch of memory.
dim3 grid_rows(std::int64_t column_units, std::int64_t rows, int row_unroll, int max_blocks) {
  const std::int64_t gx = course::ceil_div<std::int64_t>(column_units, kBlockThreads);
  course::require(gx <= 0x7fffffff, "d02: too many columns for one row of blocks");
  std::int64_t gy = std::min(course::ceil_div<std::int64_t>(rows, row_unroll), kMaxGridY);
  if (max_blocks > 0) gy = std::min<std::int64_t>(gy, max_blocks / gx);
  gy = std::max<std::int64_t>(gy, 1);
  return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
}

void check_1d(const char* who, std::int64_t n, int max_blocks) {
  course::require(n >= 0, std::string(who) + ": n must be >= 0");
  course::require(max_blocks >= 0, std::string(who) + ": max_blocks must be >= 0 (0 = choose)");
}

void check_rows(const char* who, std::int64_t rows, std::int64_t cols, int max_blocks) {
  course::require(rows >= 0 && cols >= 0, std::string(who) + ": rows and columns must be >= 0");
  course::require(max_blocks >= 0, std::string(who) + ": max_blocks must be >= 0 (0 = choose)");
}

bool aligned16(const void* a, const void* b, const void* c = nullptr) {
  return course::is_aligned(a, 16) && course::is_aligned(b, 16) &&
         (c == nullptr || course::is_aligned(c, 16));
}

// A grid-stride kernel over n elements taken V at a time, kUnroll vectors per thread and pass.
template <class T>
void launch_vectors(void (*kernel)(const T*, T*, std::int64_t), int V, const T* x, T* y,
                    std::int64_t n, int max_blocks) {
  const std::int64_t needed =
      course::ceil_div<std::int64_t>(std::max<std::int64_t>(n / V, 1), kUnroll * kBlockThreads);
  kernel<<<grid_1d(kernel, needed, max_blocks), kBlockThreads>>>(x, y, n);
  COURSE_LAUNCH_CHECK();
}

// The elements to take one by one before x + head and y + head are both 16-byte aligned: 0 when
// they already are; -1 when no head aligns both (their addresses differ by a number of bytes
// that is not a multiple of 16). Never more than n.
template <class T>
std::int64_t aligning_head(const T* x, const T* y, std::int64_t n) {
  for (std::int64_t head = 0; head < kVec16<T> && head <= n; ++head)
    if (aligned16(x + head, y + head)) return head;
  return -1;
}

// Exercises 4 and 5 launch alike: the head with the element-by-element kernel (V = 1), the rest
// with the 16-byte kernel, which copes with its own tail; or everything element by element when
// no head aligns x and y.
template <class T>
void launch_head_and_body(void (*scalar)(const T*, T*, std::int64_t),
                          void (*vector)(const T*, T*, std::int64_t), const T* x, T* y,
                          std::int64_t n, int max_blocks) {
  const std::int64_t head = aligning_head(x, y, n);
  if (head < 0) {
    launch_vectors(scalar, 1, x, y, n, max_blocks);
    return;
  }
  if (head > 0) launch_vectors(scalar, 1, x, y, head, max_blocks);
  if (n > head) launch_vectors(vector, kVec16<T>, x + head, y + head, n - head, max_blocks);
}

template <class T>
void copy_1_coalesced(const T* x, T* y, std::int64_t n, int max_blocks) {
  check_1d("copy_1_coalesced", n, max_blocks);
  if (n == 0) return;
  course::require(x && y, "copy_1_coalesced: null pointer");
  const auto kernel = copy_1_coalesced_kernel<T>;
  const std::int64_t needed = course::ceil_div<std::int64_t>(n, kBlockThreads);
  kernel<<<grid_1d(kernel, needed, max_blocks), kBlockThreads>>>(x, y, n);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void copy_1_strided(const T* x, T* y, std::int64_t n, std::int64_t stride, int max_blocks) {
  check_1d("copy_1_strided", n, max_blocks);
  course::require(stride >= 1, "copy_1_strided: stride must be >= 1");
  if (n == 0) return;
  course::require(x && y, "copy_1_strided: null pointer");
  const auto kernel = copy_1_strided_kernel<T>;
  const std::int64_t rows = course::ceil_div(n, stride);
  const std::int64_t needed = course::ceil_div<std::int64_t>(rows, kBlockThreads);
  kernel<<<grid_1d(kernel, needed, max_blocks), kBlockThreads>>>(x, y, n, stride);
  COURSE_LAUNCH_CHECK();
}

template <class T>
VecLayout vec16_layout() {
  return {sizeof(Vec16<T>), alignof(Vec16<T>)};
}

template <class T>
void reverse_within_vectors(const T* x, T* y, std::int64_t vectors) {
  course::require(vectors >= 0, "reverse_within_vectors: vectors must be >= 0");
  if (vectors == 0) return;
  course::require(x && y, "reverse_within_vectors: null pointer");
  course::require(aligned16(x, y), "reverse_within_vectors: x and y must be 16-byte aligned");
  const auto kernel = reverse_within_vectors_kernel<T>;
  const std::int64_t needed = course::ceil_div<std::int64_t>(vectors, kBlockThreads);
  kernel<<<grid_1d(kernel, needed, 0), kBlockThreads>>>(x, y, vectors);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void copy_2_vectorized(const T* x, T* y, std::int64_t n, int max_blocks) {
  check_1d("copy_2_vectorized", n, max_blocks);
  if (n == 0) return;
  course::require(x && y, "copy_2_vectorized: null pointer");
  launch_head_and_body<T>(copy_2_vectorized_kernel<T, 1>, copy_2_vectorized_kernel<T, kVec16<T>>, x,
                          y, n, max_blocks);
}

template <class T>
void gelu(const T* x, T* y, std::int64_t n, int max_blocks) {
  check_1d("gelu", n, max_blocks);
  if (n == 0) return;
  course::require(x && y, "gelu: null pointer");
  launch_head_and_body<T>(gelu_kernel<T, 1>, gelu_kernel<T, kVec16<T>>, x, y, n, max_blocks);
}

template <class T>
void add_bias(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t cols,
              int max_blocks) {
  check_rows("add_bias", rows, cols, max_blocks);
  if (rows == 0 || cols == 0) return;
  course::require(x && bias && y, "add_bias: null pointer");
  constexpr int V = kVec16<T>;
  if (cols % V == 0 && aligned16(x, bias, y)) {
    const auto kernel = add_bias_kernel<T, V>;
    const dim3 grid = grid_rows(cols / V, rows, kRowUnroll<V>, max_blocks);
    kernel<<<grid, kBlockThreads>>>(x, bias, y, rows, cols);
  } else {
    const auto kernel = add_bias_kernel<T, 1>;
    const dim3 grid = grid_rows(cols, rows, kRowUnroll<1>, max_blocks);
    kernel<<<grid, kBlockThreads>>>(x, bias, y, rows, cols);
  }
  COURSE_LAUNCH_CHECK();
}

template <class T>
void add_bias_gelu_unfused(const T* x, const T* bias, T* tmp, T* y, std::int64_t rows,
                           std::int64_t cols, int max_blocks) {
  check_rows("add_bias_gelu_unfused", rows, cols, max_blocks);
  if (rows == 0 || cols == 0) return;
  course::require(x && bias && tmp && y, "add_bias_gelu_unfused: null pointer");
  add_bias(x, bias, tmp, rows, cols, max_blocks);  // x + bias goes to DRAM ...
  gelu<T>(tmp, y, rows * cols, max_blocks);        // ... and comes back
}

template <class T>
void add_bias_gelu_fused(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t cols,
                         int max_blocks) {
  check_rows("add_bias_gelu_fused", rows, cols, max_blocks);
  if (rows == 0 || cols == 0) return;
  course::require(x && bias && y, "add_bias_gelu_fused: null pointer");
  constexpr int V = kVec16<T>;
  if (cols % V == 0 && aligned16(x, bias, y)) {
    const auto kernel = add_bias_gelu_kernel<T, V>;
    const dim3 grid = grid_rows(cols / V, rows, kRowUnroll<V>, max_blocks);
    kernel<<<grid, kBlockThreads>>>(x, bias, y, rows, cols);
  } else {
    const auto kernel = add_bias_gelu_kernel<T, 1>;
    const dim3 grid = grid_rows(cols, rows, kRowUnroll<1>, max_blocks);
    kernel<<<grid, kBlockThreads>>>(x, bias, y, rows, cols);
  }
  COURSE_LAUNCH_CHECK();
}

template <class T>
void silu_and_mul(const T* input, T* out, std::int64_t rows, std::int64_t d, int max_blocks) {
  check_rows("silu_and_mul", rows, d, max_blocks);
  if (rows == 0 || d == 0) return;
  course::require(input && out, "silu_and_mul: null pointer");
  constexpr int V = kVec16<T>;
  if (d % V == 0 && aligned16(input, out)) {
    const auto kernel = silu_and_mul_kernel<T, V>;
    const dim3 grid = grid_rows(d / V, rows, kRowUnroll<V>, max_blocks);
    kernel<<<grid, kBlockThreads>>>(input, out, rows, d);
  } else {
    const auto kernel = silu_and_mul_kernel<T, 1>;
    const dim3 grid = grid_rows(d, rows, kRowUnroll<1>, max_blocks);
    kernel<<<grid, kBlockThreads>>>(input, out, rows, d);
  }
  COURSE_LAUNCH_CHECK();
}

// The three element types of the course, for every launcher of lab.h.
template void copy_1_coalesced<float>(const float*, float*, std::int64_t, int);
template void copy_1_coalesced<half>(const half*, half*, std::int64_t, int);
template void copy_1_coalesced<bfloat16>(const bfloat16*, bfloat16*, std::int64_t, int);
template void copy_1_strided<float>(const float*, float*, std::int64_t, std::int64_t, int);
template void copy_1_strided<half>(const half*, half*, std::int64_t, std::int64_t, int);
template void copy_1_strided<bfloat16>(const bfloat16*, bfloat16*, std::int64_t, std::int64_t, int);
template VecLayout vec16_layout<float>();
template VecLayout vec16_layout<half>();
template VecLayout vec16_layout<bfloat16>();
template void reverse_within_vectors<float>(const float*, float*, std::int64_t);
template void reverse_within_vectors<half>(const half*, half*, std::int64_t);
template void reverse_within_vectors<bfloat16>(const bfloat16*, bfloat16*, std::int64_t);
template void copy_2_vectorized<float>(const float*, float*, std::int64_t, int);
template void copy_2_vectorized<half>(const half*, half*, std::int64_t, int);
template void copy_2_vectorized<bfloat16>(const bfloat16*, bfloat16*, std::int64_t, int);
template void gelu<float>(const float*, float*, std::int64_t, int);
template void gelu<half>(const half*, half*, std::int64_t, int);
template void gelu<bfloat16>(const bfloat16*, bfloat16*, std::int64_t, int);
template void add_bias<float>(const float*, const float*, float*, std::int64_t, std::int64_t, int);
template void add_bias<half>(const half*, const half*, half*, std::int64_t, std::int64_t, int);
template void add_bias<bfloat16>(const bfloat16*, const bfloat16*, bfloat16*, std::int64_t,
                                 std::int64_t, int);
template void add_bias_gelu_unfused<float>(const float*, const float*, float*, float*, std::int64_t,
                                           std::int64_t, int);
template void add_bias_gelu_unfused<half>(const half*, const half*, half*, half*, std::int64_t,
                                          std::int64_t, int);
template void add_bias_gelu_unfused<bfloat16>(const bfloat16*, const bfloat16*, bfloat16*,
                                              bfloat16*, std::int64_t, std::int64_t, int);
template void add_bias_gelu_fused<float>(const float*, const float*, float*, std::int64_t,
                                         std::int64_t, int);
template void add_bias_gelu_fused<half>(const half*, const half*, half*, std::int64_t, std::int64_t,
                                        int);
template void add_bias_gelu_fused<bfloat16>(const bfloat16*, const bfloat16*, bfloat16*,
                                            std::int64_t, std::int64_t, int);
template void silu_and_mul<float>(const float*, float*, std::int64_t, std::int64_t, int);
template void silu_and_mul<half>(const half*, half*, std::int64_t, std::int64_t, int);
template void silu_and_mul<bfloat16>(const bfloat16*, bfloat16*, std::int64_t, std::int64_t, int);

}  // namespace d02
