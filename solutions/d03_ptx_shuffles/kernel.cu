// >>> STARTER
//|// Day 3 — your kernels. Read lessons/d03_ptx_shuffles.md first; README.md in this folder lists
//|// the exercises. Replace each TODO block; keep the names and the launchers' signatures (the
//|// tests call them through lab.h). Check with:  course check d03
//|//
//|// Until you write it, every device function below returns not_written(...): the tests' poison
//|// value, so a result that passed through an unwritten function reads as "never written".
// === SOLUTION
// Day 3 — reference solution.
// <<<
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "course/check.h"
#include "course/vec.cuh"
#include "lab.h"

namespace d03 {

constexpr int kBlockThreads = 256;                        // 8 warps
constexpr int kWarpsPerBlock = kBlockThreads / kSegment;  // one warp per segment in Part 2
constexpr int kBlocksPerSm = 8;                           // 8 x 256 threads fill an H100 SM
constexpr unsigned kFullMask = 0xffffffffu;               // every lane of the warp takes part

// >>> STARTER
//|// Given: the placeholders' return value, the poison of course/dtype.h (a NaN no arithmetic makes).
//|__device__ __forceinline__ float not_written(float) { return __uint_as_float(0x7fc0deadu); }
//|__device__ __forceinline__ double not_written(double) {
//|  return __longlong_as_double(0x7ff8deaddeaddeadll);
//|}
//|__device__ __forceinline__ __half2 not_written(__half2) {
//|  return __half2half2(__ushort_as_half(0x7e5d));
//|}
//|
// === SOLUTION
// <<<
// =============================================================================================
// Part 1 — fast math in inline PTX (lesson §2, §3).
//
// >>> STARTER
//|// Each wrapper is ONE PTX instruction, written with an asm statement:
//|//     asm volatile("<instruction> %0, %1;" : "=f"(result) : "f"(argument));
//|// "=f" binds %0 to a .f32 register for the result, "f" binds %1 to the argument (lesson §2).
//|// Use the forms without .ftz: they keep subnormal inputs and results.
// === SOLUTION
// Each wrapper is one PTX instruction. In the asm statement "=f"(y) binds %0 to a .f32 register
// the compiler chooses for the result, "f"(x) binds %1 to the argument's register. `volatile`
// keeps the instruction exactly where it is written (the compiler may not delete, merge or move
// it); these instructions have no side effects, so that is a choice, not a need (lesson §2).
// The non-.ftz forms keep subnormal inputs and results: ptxas wraps MUFU in a scaling step.
// <<<

// 2^x. PTX ISA: at most 2 ulp from the correctly rounded result over the full range.
__device__ __forceinline__ float ptx_exp2(float x) {
  // >>> STARTER d03.1a
  //|  // TODO(d03.1a): ex2.approx.f32 (lesson §3).
  //|  return not_written(x);
  // === SOLUTION
  float y;
  asm volatile("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
  // <<< d03.1a
}

// log2(x). PTX ISA: absolute error <= 2^-22 for x in (0.5, 2), relative error <= 2^-22 elsewhere.
__device__ __forceinline__ float ptx_log2(float x) {
  // >>> STARTER d03.1b
  //|  // TODO(d03.1b): lg2.approx.f32.
  //|  return not_written(x);
  // === SOLUTION
  float y;
  asm volatile("lg2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
  // <<< d03.1b
}

// 1/sqrt(x). PTX ISA: relative error <= 2^-22.9.
__device__ __forceinline__ float ptx_rsqrt(float x) {
  // >>> STARTER d03.1c
  //|  // TODO(d03.1c): rsqrt.approx.f32.
  //|  return not_written(x);
  // === SOLUTION
  float y;
  asm volatile("rsqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
  // <<< d03.1c
}

// tanh(x), sm_75 and later. PTX ISA: relative error <= 2^-10.987 (about 2^-11).
__device__ __forceinline__ float ptx_tanh(float x) {
  // >>> STARTER d03.1d
  //|  // TODO(d03.1d): tanh.approx.f32 (it has no .ftz form).
  //|  return not_written(x);
  // === SOLUTION
  float y;
  asm volatile("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
  // <<< d03.1d
}

// >>> STARTER
//|// Given: one type per function, so that each kernel instantiation carries the function's name
//|// (and `cuobjdump -sass` shows which instructions each one compiled to: lesson §8).
// === SOLUTION
// One type per function, so that each kernel instantiation carries the function's name (and
// `cuobjdump -sass` shows which instructions each one compiled to: lesson §8).
// <<<
struct PtxExp2 {
  static __device__ float apply(float x) { return ptx_exp2(x); }
};
struct PtxLog2 {
  static __device__ float apply(float x) { return ptx_log2(x); }
};
struct PtxRsqrt {
  static __device__ float apply(float x) { return ptx_rsqrt(x); }
};
struct PtxTanh {
  static __device__ float apply(float x) { return ptx_tanh(x); }
};
struct LibExp2 {
  static __device__ float apply(float x) { return exp2f(x); }
};
struct LibLog2 {
  static __device__ float apply(float x) { return log2f(x); }
};
struct LibRsqrt {
  static __device__ float apply(float x) { return rsqrtf(x); }
};
struct LibTanh {
  static __device__ float apply(float x) { return tanhf(x); }
};

// >>> STARTER
//|// Given: y[i] = sum over j < terms of F(x[i] + j * kTermStep). Grid-stride loop (Day 1): thread t
//|// of the grid handles elements t, t + G, t + 2G, ... With terms = 1 every evaluation costs 8
//|// bytes of DRAM traffic and the kernel is memory-bound; with terms = 64 the same 8 bytes buy 64
// === SOLUTION
// y[i] = sum over j < terms of F(x[i] + j * kTermStep). Grid-stride loop (Day 1): thread t of the
// grid handles elements t, t + G, t + 2G, ... With terms = 1 every evaluation costs 8 bytes of
// DRAM traffic and the kernel is memory-bound; with terms = 64 the same 8 bytes buy 64
// <<<
// evaluations and the special function unit (16 results per clock per SM) sets the pace.
template <class F>
__global__ void unary_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n,
                             int terms) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float v = x[i];
    float acc = F::apply(v);
    for (int j = 1; j < terms; ++j) acc += F::apply(v + static_cast<float>(j) * kTermStep);
    y[i] = acc;
  }
}

// =============================================================================================
// Parts 2 and 3 — warp shuffles (lesson §4, §5) and shuffling what is not 32 bits (lesson §6).
//
// >>> STARTER
//|// Given: the three shuffles, in PTX. shfl.sync.MODE.b32 d, a, b, c, membermask: every lane of
// === SOLUTION
// The three shuffles, in PTX. shfl.sync.MODE.b32 d, a, b, c, membermask: every lane of
// <<<
// membermask offers its register a and receives the a of one other lane, chosen by MODE and b:
//   bfly: lane ^ b        idx: lane b        up: lane - b (lanes below b keep their own a)
// c packs the segment mask (bits 8-12, 0 = the whole warp) and the clamp lane (bits 0-4: 0x1f for
// bfly/idx, 0 for up). They move 32 bits and nothing else: other types are bit-cast (Part 3).
// volatile is required here: the result depends on other lanes' registers, which the operands
// do not show, so the compiler must never move a shuffle into or out of a branch.
__device__ __forceinline__ std::uint32_t shfl_bfly_b32(std::uint32_t v, int lane_mask) {
  std::uint32_t out;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, %3;"
               : "=r"(out)
               : "r"(v), "r"(lane_mask), "r"(kFullMask));
  return out;
}
__device__ __forceinline__ std::uint32_t shfl_idx_b32(std::uint32_t v, int src_lane) {
  std::uint32_t out;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, %3;"
               : "=r"(out)
               : "r"(v), "r"(src_lane), "r"(kFullMask));
  return out;
}
__device__ __forceinline__ std::uint32_t shfl_up_b32(std::uint32_t v, int delta) {
  std::uint32_t out;
  asm volatile("shfl.sync.up.b32 %0, %1, %2, 0x0, %3;"
               : "=r"(out)
               : "r"(v), "r"(delta), "r"(kFullMask));
  return out;
}

// >>> STARTER
//|// Given: this lane's index in its warp, from the special register %laneid.
// === SOLUTION
// This lane's index in its warp, from the special register %laneid.
// <<<
__device__ __forceinline__ int lane_id() {
  int lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

// >>> STARTER
//|// Given: the same bits seen as another type of the same size: what C++20's std::bit_cast does.
//|// memcpy is the well-defined way to reinterpret bytes (a pointer cast is undefined behaviour, and
//|// the compiler may assume it never aliases); for registers it compiles to nothing at all.
// === SOLUTION
// The same bits seen as another type of the same size: what C++20's std::bit_cast does. memcpy
// is the well-defined way to reinterpret bytes (a pointer cast is undefined behaviour, and the
// compiler may assume it never aliases); for registers it compiles to nothing at all.
// <<<
template <class To, class From>
__device__ __forceinline__ To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast: the two types must have the same size");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

// 2a. A float crosses the warp as its 32 bits.
__device__ __forceinline__ float shfl_xor(float v, int lane_mask) {
  // >>> STARTER d03.2a
  //|  // TODO(d03.2a): __float_as_uint, shfl_bfly_b32, __uint_as_float (lesson §4, §6).
  //|  (void)lane_mask;
  //|  return not_written(v);
  // === SOLUTION
  return __uint_as_float(shfl_bfly_b32(__float_as_uint(v), lane_mask));
  // <<< d03.2a
}

// >>> STARTER
//|// 3a. A double crosses the warp as two 32-bit halves.
// === SOLUTION
// 3a. A double is two 32-bit halves: shuffle both, reassemble. (uint2: .x is the low word.)
// <<<
__device__ __forceinline__ double shfl_xor(double v, int lane_mask) {
  // >>> STARTER d03.3a
  //|  // TODO(d03.3a): bit_cast<uint2>(v) gives the two halves (.x is the low word); shuffle each with
  //|  // shfl_bfly_b32 and bit_cast the reassembled uint2 back to double (lesson §6).
  //|  (void)lane_mask;
  //|  return not_written(v);
  // === SOLUTION
  const uint2 halves = bit_cast<uint2>(v);
  return bit_cast<double>(
      make_uint2(shfl_bfly_b32(halves.x, lane_mask), shfl_bfly_b32(halves.y, lane_mask)));
  // <<< d03.3a
}

// >>> STARTER
//|// 3b. Two halves fit in 32 bits: ONE shuffle moves both.
// === SOLUTION
// 3b. Two halves fit in 32 bits: ONE shuffle moves both. __half2_raw is the plain-data view of a
// __half2 (two unsigned shorts) that CUDA provides for exactly this kind of reinterpretation.
// <<<
__device__ __forceinline__ __half2 shfl_xor(__half2 v, int lane_mask) {
  // >>> STARTER d03.3b
  //|  // TODO(d03.3b): a __half2 has a plain-data view, __half2_raw (static_cast<__half2_raw>(v), and
  //|  // __half2(raw) back); bit_cast that to and from std::uint32_t around shfl_bfly_b32 (lesson §6).
  //|  (void)lane_mask;
  //|  return not_written(v);
  // === SOLUTION
  const std::uint32_t bits = bit_cast<std::uint32_t>(static_cast<__half2_raw>(v));
  return __half2(bit_cast<__half2_raw>(shfl_bfly_b32(bits, lane_mask)));
  // <<< d03.3b
}

// >>> STARTER
//|// 2a/3a. Butterfly sum over the 32 lanes of the warp, returned to every lane. Generic in T: the
//|// shfl_xor overload for T is all it needs, and every overload is declared above this template on
//|// purpose (lesson §6 says what goes wrong otherwise).
// === SOLUTION
// 2a/3a. Butterfly sum: at the step with mask m, lane l adds the value of lane l ^ m. After the
// steps 16, 8, 4, 2, 1 every lane holds the sum of all 32, in five shuffles and no shared memory.
// Generic in T: the shuffle overload for T is all it needs. Every overload must be declared
// ABOVE this template: a double has no namespace for argument-dependent lookup, so a call in a
// template sees only the overloads declared before it, and with only shfl_xor(float) in sight
// the double would silently be converted to float and back (the SASS shows an F2F.F32.F64).
// <<<
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
// >>> STARTER d03.2a
//|  // TODO(d03.2a): for mask = 16, 8, 4, 2, 1: v += shfl_xor(v, mask) (lesson §4).
//|  return not_written(v);
// === SOLUTION
#pragma unroll
  for (int mask = kSegment / 2; mask > 0; mask /= 2) v += shfl_xor(v, mask);
  return v;
  // <<< d03.2a
}

// >>> STARTER d03.2b
//|// 2b. Maximum over the 32 lanes, returned to every lane; NaN if any lane holds NaN.
//|__device__ __forceinline__ float warp_max(float v) {
//|  // TODO(d03.2b): the same butterfly with a maximum that keeps NaN. fmaxf does NOT: it returns
//|  // the other operand. Test for NaN yourself, or use PTX max.NaN.f32 (sm_80+) (lesson §4).
//|  return not_written(v);
// === SOLUTION
// 2b. max.NaN.f32 (sm_80+): the larger operand, or NaN when either is NaN. fmaxf and max.f32
// implement IEEE maxNum, which returns the OTHER operand for a NaN, and a reduction built on them
// would silently drop a NaN.
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm volatile("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
  // <<< d03.2b
}

// >>> STARTER d03.2b
//|// 3b. Both channels of a __half2 at once, NaN propagating per channel (__hmax2_nan).
// === SOLUTION
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int mask = kSegment / 2; mask > 0; mask /= 2) v = max_nan(v, shfl_xor(v, mask));
  return v;
}

// 3b. Both channels at once; __hmax2_nan propagates a NaN per channel.
// <<< d03.2b
__device__ __forceinline__ __half2 warp_max(__half2 v) {
// >>> STARTER d03.3b
//|  // TODO(d03.3b): the butterfly of warp_max with shfl_xor(__half2) and __hmax2_nan.
//|  return not_written(v);
// === SOLUTION
#pragma unroll
  for (int mask = kSegment / 2; mask > 0; mask /= 2) v = __hmax2_nan(v, shfl_xor(v, mask));
  return v;
  // <<< d03.3b
}

// 2c. Every lane receives the value of lane src_lane.
__device__ __forceinline__ float warp_broadcast(float v, int src_lane) {
  // >>> STARTER d03.2c
  //|  // TODO(d03.2c): one shfl_idx_b32, with the bit casts of 2a (lesson §5).
  //|  (void)src_lane;
  //|  return not_written(v);
  // === SOLUTION
  return __uint_as_float(shfl_idx_b32(__float_as_uint(v), src_lane));
  // <<< d03.2c
}

// >>> STARTER
//|// 2d. Inclusive scan: lane l returns x_0 + ... + x_l of the warp's values.
// === SOLUTION
// 2d. Inclusive scan (Hillis-Steele): at the step with distance d, lane l adds the running sum
// of lane l - d, if there is one. After d = 1, 2, 4, 8, 16 lane l holds x_0 + ... + x_l:
// log2(32) = 5 shuffles instead of 31 dependent additions.
// <<<
__device__ __forceinline__ float warp_inclusive_scan(float v) {
  // >>> STARTER d03.2d
  //|  // TODO(d03.2d): Hillis-Steele with shfl_up_b32: for delta = 1, 2, 4, 8, 16 take the value of
  //|  // lane - delta, and add it only if lane_id() >= delta (lanes below delta get their own value
  //|  // back, which must not be added) (lesson §5).
  //|  return not_written(v);
  // === SOLUTION
  const int lane = lane_id();
#pragma unroll
  for (int delta = 1; delta < kSegment; delta *= 2) {
    const float from_below = __uint_as_float(shfl_up_b32(__float_as_uint(v), delta));
    if (lane >= delta) v += from_below;
  }
  return v;
  // <<< d03.2d
}

// >>> STARTER
//|// Given: the reductions of Parts 2 and 3: the element type, what a lane past the end holds (the
// === SOLUTION
// The reductions of Parts 2 and 3: the element type, what a lane past the end holds (the
// <<<
// identity: it must not change the result), and the warp-wide operation.
struct WarpSumF32 {
  using T = float;
  static __device__ T identity() { return 0.0f; }
  static __device__ T reduce(T v) { return warp_sum(v); }
};
struct WarpMaxF32 {
  using T = float;
  // >>> STARTER d03.2b
  //|  // TODO(d03.2b): what must a lane past the end hold so that it never wins a maximum?
  //|  static __device__ T identity() { return 0.0f; }
  // === SOLUTION
  static __device__ T identity() { return -INFINITY; }
  // <<< d03.2b
  static __device__ T reduce(T v) { return warp_max(v); }
};
struct WarpSumF64 {
  using T = double;
  static __device__ T identity() { return 0.0; }
  static __device__ T reduce(T v) { return warp_sum(v); }
};
struct WarpMaxHalf2 {
  using T = __half2;
  static __device__ T identity() { return __half2half2(__ushort_as_half(0xfc00)); }  // -inf, -inf
  static __device__ T reduce(T v) { return warp_max(v); }
};

// out[s] = Op over segment s. Warp w of the grid owns segment w: lane k loads element 32w + k, or
// >>> STARTER
//|// Op::identity() past the end.
// === SOLUTION
// the identity past the end. A warp entirely past the end leaves as a whole; every other warp
// keeps all 32 lanes to the shuffles (the full member mask promises that they all arrive).
// <<<
template <class Op>
__global__ void segment_reduce_kernel(const typename Op::T* __restrict__ x,
                                      typename Op::T* __restrict__ out, std::int64_t n) {
  // >>> STARTER d03.2a
  //|  // TODO(d03.2a): segment = (global thread index) / 32, lane = threadIdx.x % 32.
  //|  //  - if the whole segment is past the end (segment * 32 >= n), return: all 32 lanes agree;
  //|  //  - otherwise EVERY lane goes on to the shuffles, even those past n (the full member mask
  //|  //    promises that all 32 arrive): lane loads x[i] if i < n, else Op::identity();
  //|  //  - Op::reduce(value), and lane 0 writes out[segment].
  // === SOLUTION
  const std::int64_t segment =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kSegment;
  const int lane = static_cast<int>(threadIdx.x % kSegment);
  if (segment * kSegment >= n) return;  // the same for all 32 lanes of the warp
  const std::int64_t i = segment * kSegment + lane;
  const typename Op::T total = Op::reduce(i < n ? x[i] : Op::identity());
  if (lane == 0) out[segment] = total;
  // <<< d03.2a
}

// y[i] = lane src_lane's element of i's segment; lanes past the end hold 0.
__global__ void segment_broadcast_kernel(const float* __restrict__ x, float* __restrict__ y,
                                         std::int64_t n, int src_lane) {
  // >>> STARTER d03.2c
  //|  // TODO(d03.2c): the mapping of segment_reduce_kernel; every lane holds x[i] or 0, calls
  //|  // warp_broadcast(value, src_lane), and writes y[i] if i < n.
  // === SOLUTION
  const std::int64_t segment =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kSegment;
  const int lane = static_cast<int>(threadIdx.x % kSegment);
  if (segment * kSegment >= n) return;
  const std::int64_t i = segment * kSegment + lane;
  const float b = warp_broadcast(i < n ? x[i] : 0.0f, src_lane);
  if (i < n) y[i] = b;
  // <<< d03.2c
}

// y[i] = inclusive scan of i's segment; lanes past the end hold 0 (and come after every real one).
__global__ void segment_scan_kernel(const float* __restrict__ x, float* __restrict__ y,
                                    std::int64_t n) {
  // >>> STARTER d03.2d
  //|  // TODO(d03.2d): the mapping of segment_reduce_kernel; every lane holds x[i] or 0, calls
  //|  // warp_inclusive_scan(value), and writes y[i] if i < n.
  // === SOLUTION
  const std::int64_t segment =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kSegment;
  const int lane = static_cast<int>(threadIdx.x % kSegment);
  if (segment * kSegment >= n) return;
  const std::int64_t i = segment * kSegment + lane;
  const float s = warp_inclusive_scan(i < n ? x[i] : 0.0f);
  if (i < n) y[i] = s;
  // <<< d03.2d
}

// =============================================================================================
// Part 4 — GeLU with tanh.approx (lesson §7).
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// >>> STARTER
//|// Given: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the inner polynomial as one FMA.
// === SOLUTION
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the inner polynomial as one FMA.
// <<<
__device__ __forceinline__ float gelu_with_tanhf(float x) {
  const float inner = kSqrt2OverPi * fmaf(kGeluCubic * x, x * x, x);
  return 0.5f * x * (1.0f + tanhf(inner));
}
// >>> STARTER d03.4
//|// TODO(d03.4): gelu_with_ptx_tanh(float) goes here: gelu_with_tanhf with your ptx_tanh for tanhf.
// === SOLUTION
__device__ __forceinline__ float gelu_with_ptx_tanh(float x) {
  const float inner = kSqrt2OverPi * fmaf(kGeluCubic * x, x * x, x);
  return 0.5f * x * (1.0f + ptx_tanh(inner));
}
// <<< d03.4

// >>> STARTER
//|// Given, the baseline: float32, tanhf from the math library (about 20 instructions, two of them
//|// MUFU). Thread t of the grid handles the vectors t, t + G, ... of V elements (V = 4: one 16-byte
//|// access; V = 1 when a pointer is not 16-byte aligned); the last n % V elements, the tail, go to
//|// the grid's first threads.
// === SOLUTION
// The baseline: float32, tanhf from the math library (about 20 instructions, two of them MUFU).
// Thread t of the grid handles the vectors t, t + G, ... of V elements (V = 4: one 16-byte
// access; V = 1 when a pointer is not 16-byte aligned); the last n % V elements, the tail, go
// to the grid's first threads.
// <<<
template <int V>
__global__ void gelu_tanhf_kernel(const float* __restrict__ x, float* __restrict__ y,
                                  std::int64_t n) {
  const std::int64_t vectors = n / V;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t v = first; v < vectors; v += stride) {
    course::Vec<float, V> in, out;
    in.load(x + v * V);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = gelu_with_tanhf(in[k]);
    out.store(y + v * V);
  }
  const std::int64_t tail = vectors * V + first;
  if (tail < n) y[tail] = gelu_with_tanhf(x[tail]);
}

// >>> STARTER
//|// 4. The same kernel with ptx_tanh for tanhf, for any storage type T (float, half, bfloat16;
//|// V = 16 bytes / sizeof(T) elements per vector, or 1 for unaligned pointers), computing in float32.
// === SOLUTION
// The exercise: what changed from the baseline is ptx_tanh for tanhf (one MUFU.TANH), and the
// storage type T (float, half, bfloat16; V = 16 bytes / sizeof(T)), converted to float32 and back.
// <<<
template <class T, int V>
__global__ void gelu_fast_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n) {
  // >>> STARTER d03.4
  //|  // TODO(d03.4): follow gelu_tanhf_kernel line by line, with
  //|  //  - course::Vec<T, V> for the vectors, course::to_float(in[k]) in and
  //|  //    course::from_float<T>(...) out (course/vec.cuh);
  //|  //  - a gelu_with_ptx_tanh(float) next to gelu_with_tanhf, calling your ptx_tanh (exercise 1d);
  //|  //  - the same tail. (lesson §7)
  // === SOLUTION
  const std::int64_t vectors = n / V;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t v = first; v < vectors; v += stride) {
    course::Vec<T, V> in, out;
    in.load(x + v * V);
#pragma unroll
    for (int k = 0; k < V; ++k)
      out[k] = course::from_float<T>(gelu_with_ptx_tanh(course::to_float(in[k])));
    out.store(y + v * V);
  }
  const std::int64_t tail = vectors * V + first;
  if (tail < n) y[tail] = course::from_float<T>(gelu_with_ptx_tanh(course::to_float(x[tail])));
  // <<< d03.4
}

// =============================================================================================
// Launchers.

// Enough blocks to fill every SM several times over, never more than the work needs.
unsigned grid_for(std::int64_t items) {
  int device = 0, sms = 0;
  COURSE_CUDA_CHECK(cudaGetDevice(&device));
  COURSE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t needed =
      course::ceil_div<std::int64_t>(std::max<std::int64_t>(items, 1), kBlockThreads);
  return static_cast<unsigned>(std::min<std::int64_t>(needed, std::int64_t{sms} * kBlocksPerSm));
}

// One warp per segment: ceil(n / 32) warps, kWarpsPerBlock to a block.
unsigned segment_blocks(std::int64_t n, const char* who) {
  const std::int64_t segments = course::ceil_div<std::int64_t>(n, kSegment);
  const std::int64_t blocks = course::ceil_div<std::int64_t>(segments, kWarpsPerBlock);
  course::require(blocks <= 0x7fffffff, std::string(who) + ": n too large for a 1-D grid");
  return static_cast<unsigned>(blocks);
}

template <class F>
void launch_unary(const float* x, float* y, std::int64_t n, int terms) {
  unary_kernel<F><<<grid_for(n), kBlockThreads>>>(x, y, n, terms);
  COURSE_LAUNCH_CHECK();
}

void check_math_args(const char* who, const float* x, const float* y, std::int64_t n, int terms) {
  course::require(n >= 0, std::string(who) + ": n must be >= 0");
  course::require(terms >= 1, std::string(who) + ": terms must be >= 1");
  course::require(n == 0 || (x && y), std::string(who) + ": null pointer");
}

void ptx_math(MathFn f, const float* x, float* y, std::int64_t n, int terms) {
  check_math_args("ptx_math", x, y, n, terms);
  if (n == 0) return;
  switch (f) {
    case MathFn::kExp2:
      return launch_unary<PtxExp2>(x, y, n, terms);
    case MathFn::kLog2:
      return launch_unary<PtxLog2>(x, y, n, terms);
    case MathFn::kRsqrt:
      return launch_unary<PtxRsqrt>(x, y, n, terms);
    case MathFn::kTanh:
      return launch_unary<PtxTanh>(x, y, n, terms);
  }
  course::require(false, "ptx_math: unknown function");
}

void library_math(MathFn f, const float* x, float* y, std::int64_t n, int terms) {
  check_math_args("library_math", x, y, n, terms);
  if (n == 0) return;
  switch (f) {
    case MathFn::kExp2:
      return launch_unary<LibExp2>(x, y, n, terms);
    case MathFn::kLog2:
      return launch_unary<LibLog2>(x, y, n, terms);
    case MathFn::kRsqrt:
      return launch_unary<LibRsqrt>(x, y, n, terms);
    case MathFn::kTanh:
      return launch_unary<LibTanh>(x, y, n, terms);
  }
  course::require(false, "library_math: unknown function");
}

template <class Op>
void launch_segment_reduce(const typename Op::T* x, typename Op::T* out, std::int64_t n,
                           const char* who) {
  course::require(n >= 0, std::string(who) + ": n must be >= 0");
  if (n == 0) return;
  course::require(x && out, std::string(who) + ": null pointer");
  segment_reduce_kernel<Op><<<segment_blocks(n, who), kBlockThreads>>>(x, out, n);
  COURSE_LAUNCH_CHECK();
}

void segment_sum(const float* x, float* out, std::int64_t n) {
  launch_segment_reduce<WarpSumF32>(x, out, n, "segment_sum");
}

void segment_max(const float* x, float* out, std::int64_t n) {
  launch_segment_reduce<WarpMaxF32>(x, out, n, "segment_max");
}

void segment_sum(const double* x, double* out, std::int64_t n) {
  launch_segment_reduce<WarpSumF64>(x, out, n, "segment_sum(double)");
}

void segment_max_pairs(const course::half* x, course::half* out, std::int64_t pairs) {
  course::require(pairs >= 0, "segment_max_pairs: pairs must be >= 0");
  if (pairs == 0) return;
  course::require(x && out, "segment_max_pairs: null pointer");
  course::require(course::is_aligned(x, 4) && course::is_aligned(out, 4),
                  "segment_max_pairs: x and out must be 4-byte aligned (whole __half2 pairs)");
  launch_segment_reduce<WarpMaxHalf2>(reinterpret_cast<const __half2*>(x),
                                      reinterpret_cast<__half2*>(out), pairs, "segment_max_pairs");
}

void segment_broadcast(const float* x, float* y, std::int64_t n, int src_lane) {
  course::require(n >= 0, "segment_broadcast: n must be >= 0");
  course::require(src_lane >= 0 && src_lane < kSegment,
                  "segment_broadcast: src_lane must be in [0, 32)");
  if (n == 0) return;
  course::require(x && y, "segment_broadcast: null pointer");
  const unsigned blocks = segment_blocks(n, "segment_broadcast");
  segment_broadcast_kernel<<<blocks, kBlockThreads>>>(x, y, n, src_lane);
  COURSE_LAUNCH_CHECK();
}

void segment_scan(const float* x, float* y, std::int64_t n) {
  course::require(n >= 0, "segment_scan: n must be >= 0");
  if (n == 0) return;
  course::require(x && y, "segment_scan: null pointer");
  segment_scan_kernel<<<segment_blocks(n, "segment_scan"), kBlockThreads>>>(x, y, n);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void launch_gelu_fast(const T* x, T* y, std::int64_t n) {
  course::require(n >= 0, "gelu_fast: n must be >= 0");
  if (n == 0) return;
  course::require(x && y, "gelu_fast: null pointer");
  constexpr int kVec = course::kVec16<T>;
  if (course::is_aligned(x, 16) && course::is_aligned(y, 16)) {
    gelu_fast_kernel<T, kVec><<<grid_for(n / kVec), kBlockThreads>>>(x, y, n);
  } else {
    gelu_fast_kernel<T, 1><<<grid_for(n), kBlockThreads>>>(x, y, n);
  }
  COURSE_LAUNCH_CHECK();
}

void gelu_fast(const float* x, float* y, std::int64_t n) { launch_gelu_fast(x, y, n); }
void gelu_fast(const course::half* x, course::half* y, std::int64_t n) {
  launch_gelu_fast(x, y, n);
}
void gelu_fast(const course::bfloat16* x, course::bfloat16* y, std::int64_t n) {
  launch_gelu_fast(x, y, n);
}

void gelu_tanhf(const float* x, float* y, std::int64_t n) {
  course::require(n >= 0, "gelu_tanhf: n must be >= 0");
  if (n == 0) return;
  course::require(x && y, "gelu_tanhf: null pointer");
  constexpr int kVec = course::kVec16<float>;
  if (course::is_aligned(x, 16) && course::is_aligned(y, 16)) {
    gelu_tanhf_kernel<kVec><<<grid_for(n / kVec), kBlockThreads>>>(x, y, n);
  } else {
    gelu_tanhf_kernel<1><<<grid_for(n), kBlockThreads>>>(x, y, n);
  }
  COURSE_LAUNCH_CHECK();
}

}  // namespace d03
