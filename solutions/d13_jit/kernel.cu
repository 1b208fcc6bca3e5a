// >>> STARTER
//|// Day 13 — a JIT compilation system: NVRTC, an on-disk kernel cache, autotuning (STARTER).
// === SOLUTION
// Day 13 — a JIT compilation system (reference solution).
// <<<
//
// >>> STARTER
//|// Read lessons/d13_jit.md first. This file's kernels are not compiled by nvcc: they are CUDA
//|// C++ source templates (kRmsNormSource, kGemmSource) that your host code compiles at run time
//|// with NVRTC, caches in memory and on disk, and loads with the driver API. Work in the order of
//|// the TODOs; the host exercises (1-5) are tested without a GPU:
//|//   course check d13            (or: ctest --test-dir build -L d13 -L lab)
// === SOLUTION
// The kernels of this file are not compiled by nvcc: they are CUDA C++ source templates
// (kRmsNormSource, kGemmSource), specialised at run time by NVRTC name expressions, compiled to
// a CUBIN for the device's exact architecture, cached in memory and on disk under a SHA-256
// key, loaded with the driver API and launched with cuLaunchKernel. The host code, in the
// order of the exercises:
// <<<
//   1  cache_key             what goes into the key (lesson §3)
//   2  encode/decode_entry   a header that detects truncated and corrupt entries (lesson §4)
//   3  write_file_atomically, DiskCache   temp file + fsync + rename (lesson §5)
//   4  compile_cubin         NVRTC, name expressions, a compile error with line numbers (§6)
//   5  KernelCache           memory -> disk -> NVRTC, the module loaded on first use (§7)
//   6  kRmsNormSource        the RMSNorm template (lesson §8)
//   7  kGemmSource           the tiled GEMM template (lesson §9)
//   8  autotune              events, median, the winner recorded atomically (lesson §10)
// >>> STARTER
//|// Everything marked Given is complete: SHA-256, the driver API entry points, the launchers.
// === SOLUTION
// The driver API is reached through cudaGetDriverEntryPointByVersion, not by linking libcuda:
// a program linked against libcuda.so.1 does not even start on a machine without the driver,
// and the host tests of this day must run there (lesson §7.3).
// <<<
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "course/bench.h"
#include "course/check.h"
#include "lab.h"

namespace d13 {

namespace {

// ==========================================================================================
// Exercises 6 and 7 — the kernel templates. NVRTC compiles them without any header (no
// cuda_fp16.h: the 16-bit types are their bits, converted with cvt), so the JIT needs nothing
// of the toolkit at run time but libnvrtc.
// ==========================================================================================

// The RMSNorm template (lesson §8). One block per row; thread t keeps vectors t, t + kThreads,
// ... of its row in registers (kItems of them, all known at compile time because kHidden is),
// sums their squares, the block reduces the sum (warp shuffles, then one warp over the warps'
// partial sums), and each thread scales its vectors by 1 / rms and by w.
constexpr const char* kRmsNormSource = R"JIT(
struct F32 {
  using Storage = float;
  static __device__ float to_float(float v) { return v; }
  static __device__ float from_float(float f) { return f; }
};
struct F16 {
  using Storage = unsigned short;
  static __device__ float to_float(unsigned short v) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
    return f;
  }
  static __device__ unsigned short from_float(float f) {
    unsigned short v;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(v) : "f"(f));
    return v;
  }
};
struct BF16 {
  using Storage = unsigned short;
  static __device__ float to_float(unsigned short v) {
    return __uint_as_float(static_cast<unsigned int>(v) << 16);
  }
  static __device__ unsigned short from_float(float f) {
    unsigned short v;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(v) : "f"(f));
    return v;
  }
};

template <class S, int kVec>
struct alignas(sizeof(S) * kVec) Pack {
  S v[kVec];
};

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <class D, int kHidden, int kVec, int kThreads>
__global__ void __launch_bounds__(kThreads)
    d13_rmsnorm_kernel(const typename D::Storage* __restrict__ x,
                       const typename D::Storage* __restrict__ w,
                       typename D::Storage* __restrict__ y, long long rows, float eps) {
  // >>> STARTER d13.6
  //|  // TODO(d13.6) (lesson §8): row blockIdx.x of x and y, read as Pack<typename D::Storage, kVec>
  //|  // vectors (kHidden / kVec of them). Thread t keeps vectors t, t + kThreads, ... in a register
  //|  // array of kItems = ceil(kVecs / kThreads) Packs (a loop with #pragma unroll: the bounds are
  //|  // compile-time constants) and sums the squares of their D::to_float values. Reduce the sum over
  //|  // the block (warp_sum, one float per warp in shared memory, warp 0 sums those), then
  //|  // inv_rms = rsqrtf(total / kHidden + eps) and y = D::from_float(x * inv_rms * w), vector by
  //|  // vector. Until then the kernel writes nothing: y keeps its poison.
  // === SOLUTION
  using P = Pack<typename D::Storage, kVec>;
  static_assert(kHidden % kVec == 0, "the vector width must divide the row");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
  constexpr int kVecs = kHidden / kVec;                         // vectors in a row
  constexpr int kItems = (kVecs + kThreads - 1) / kThreads;     // vectors per thread
  constexpr int kWarps = kThreads / 32;
  __shared__ float partial[kWarps];
  __shared__ float total;
  const long long row = blockIdx.x;
  const P* x_row = reinterpret_cast<const P*>(x + row * kHidden);
  P buf[kItems];
  float sum_sq = 0.0f;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = threadIdx.x + i * kThreads;  // vector j of the row
    if (j < kVecs) {
      buf[i] = x_row[j];
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float f = D::to_float(buf[i].v[e]);
        sum_sq += f * f;
      }
    }
  }
  sum_sq = warp_sum(sum_sq);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = sum_sq;
  __syncthreads();
  if (warp == 0) {
    float v = lane < kWarps ? partial[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) total = v;
  }
  __syncthreads();
  const float inv_rms = rsqrtf(total / kHidden + eps);
  const P* w_vec = reinterpret_cast<const P*>(w);
  P* y_row = reinterpret_cast<P*>(y + row * kHidden);
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = threadIdx.x + i * kThreads;
    if (j < kVecs) {
      const P wv = w_vec[j];
      P out;
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        out.v[e] = D::from_float(D::to_float(buf[i].v[e]) * inv_rms * D::to_float(wv.v[e]));
      y_row[j] = out;
    }
  }
  // <<< d13.6
}
)JIT";

// The tiled GEMM template (lesson §9). A block computes the kBM x kBN tile of C at
// (blockIdx.y, blockIdx.x) in K-steps of kBK: it stages A's kBM x kBK slice (transposed, so that
// a thread's kTM values of one k are a row of the tile) and B's kBK x kBN slice in shared memory,
// zero-filled past the matrix's edges. Thread (tr, tc) owns rows tr + i * kRows and columns
// tc + j * kCols of the tile: consecutive threads read consecutive columns of b_tile (no bank
// conflict) and store consecutive columns of C (coalesced).
constexpr const char* kGemmSource = R"JIT(
template <int kBM, int kBN, int kBK, int kTM, int kTN>
__global__ void __launch_bounds__((kBM / kTM) * (kBN / kTN))
    d13_gemm_kernel(const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C, long long M, long long N, long long K) {
  // >>> STARTER d13.7
  //|  // TODO(d13.7) (lesson §9): kRows = kBM / kTM and kCols = kBN / kTN threads; thread tid is
  //|  // (tr, tc) = (tid / kCols, tid % kCols) and owns C rows m0 + tr + i * kRows, columns
  //|  // n0 + tc + j * kCols (m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN, 64-bit). For each K-step
  //|  // k0: stage A's kBM x kBK slice transposed in __shared__ float a_tile[kBK][kBM + 1] and B's
  //|  // kBK x kBN slice in b_tile[kBK][kBN] (zero past M, N, K), __syncthreads(), accumulate
  //|  // float acc[kTM][kTN] over the kBK values of k, __syncthreads(). Store the elements inside C.
  // === SOLUTION
  static_assert(kBM % kTM == 0 && kBN % kTN == 0, "a thread's tile must divide the block's");
  constexpr int kRows = kBM / kTM;  // threads along M
  constexpr int kCols = kBN / kTN;  // threads along N
  constexpr int kThreads = kRows * kCols;
  constexpr int kALoads = (kBM * kBK + kThreads - 1) / kThreads;
  constexpr int kBLoads = (kBK * kBN + kThreads - 1) / kThreads;
  __shared__ float a_tile[kBK][kBM + 1];  // (k, m): A's slice transposed, padded
  __shared__ float b_tile[kBK][kBN];      // (k, n)
  const int tid = threadIdx.x;
  const int tr = tid / kCols, tc = tid % kCols;
  const long long m0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long n0 = static_cast<long long>(blockIdx.x) * kBN;
  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;
  for (long long k0 = 0; k0 < K; k0 += kBK) {
#pragma unroll
    for (int s = 0; s < kALoads; ++s) {
      const int idx = tid + s * kThreads;
      if (idx < kBM * kBK) {
        const int r = idx / kBK, c = idx % kBK;  // (m, k) in the tile: a row's k consecutive
        const long long gm = m0 + r, gk = k0 + c;
        a_tile[c][r] = (gm < M && gk < K) ? A[gm * K + gk] : 0.0f;
      }
    }
#pragma unroll
    for (int s = 0; s < kBLoads; ++s) {
      const int idx = tid + s * kThreads;
      if (idx < kBK * kBN) {
        const int r = idx / kBN, c = idx % kBN;  // (k, n) in the tile
        const long long gk = k0 + r, gn = n0 + c;
        b_tile[r][c] = (gk < K && gn < N) ? B[gk * N + gn] : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float a[kTM], b[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) a[i] = a_tile[k][tr + i * kRows];
#pragma unroll
      for (int j = 0; j < kTN; ++j) b[j] = b_tile[k][tc + j * kCols];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const long long m = m0 + tr + i * kRows;
    if (m < M) {
#pragma unroll
      for (int j = 0; j < kTN; ++j) {
        const long long n = n0 + tc + j * kCols;
        if (n < N) C[m * N + n] = acc[i][j];
      }
    }
  }
  // <<< d13.7
}
)JIT";

// Given — the ahead-of-time baseline (lesson §8.3), compiled by nvcc with the rest of this file:
// the same RMSNorm for any hidden size known only at run time. One block per row, kAotThreads
// threads striding over the row twice (sum of squares, then scale): the row is read twice and
// no loop count is known to the compiler, which is what the JIT's specialisation removes.
constexpr int kAotThreads = 256;

template <class T>
__global__ void __launch_bounds__(kAotThreads)
    rmsnorm_0_aot_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                         int hidden, float eps) {
  __shared__ float partial[kAotThreads / 32];
  __shared__ float total;
  const T* x_row = x + static_cast<std::int64_t>(blockIdx.x) * hidden;
  T* y_row = y + static_cast<std::int64_t>(blockIdx.x) * hidden;
  float sum_sq = 0.0f;
  for (int c = threadIdx.x; c < hidden; c += kAotThreads) {
    const float v = static_cast<float>(x_row[c]);
    sum_sq += v * v;
  }
  for (int offset = 16; offset > 0; offset >>= 1)
    sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum_sq;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int i = 0; i < kAotThreads / 32; ++i) s += partial[i];
    total = s;
  }
  __syncthreads();
  const float inv_rms = rsqrtf(total / hidden + eps);
  for (int c = threadIdx.x; c < hidden; c += kAotThreads)
    y_row[c] = static_cast<T>(static_cast<float>(x_row[c]) * inv_rms * static_cast<float>(w[c]));
}

// ==========================================================================================
// Host code.
// ==========================================================================================

// Given: SHA-256 (FIPS 180-4). 64-byte blocks of the message padded with 0x80, zeros and the
// bit length; each block mixed into the eight-word state by 64 rounds.
constexpr std::uint32_t kSha256Rounds[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

std::array<std::uint8_t, 32> sha256(const std::string& bytes) {
  std::uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::string msg = bytes;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  const std::uint64_t bits = static_cast<std::uint64_t>(bytes.size()) * 8;
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  for (std::size_t block = 0; block < msg.size(); block += 64) {
    std::uint32_t w[64];
    for (int t = 0; t < 16; ++t) {
      const auto* p = reinterpret_cast<const unsigned char*>(msg.data() + block + 4 * t);
      w[t] = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
             (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
    }
    for (int t = 16; t < 64; ++t) {
      const std::uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      const std::uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; ++t) {
      const std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const std::uint32_t ch = (e & f) ^ (~e & g);
      const std::uint32_t t1 = hh + s1 + ch + kSha256Rounds[t] + w[t];
      const std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const std::uint32_t t2 = s0 + maj;
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  std::array<std::uint8_t, 32> out{};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<std::uint8_t>(h[i] >> (24 - 8 * j));
  return out;
}

// >>> STARTER
//|// Given: little-endian integers in a byte string, and the program name NVRTC puts in its log
//|// ([[maybe_unused]]: only your code of TODO d13.2 and d13.4 uses them).
// === SOLUTION
// Given: little-endian integers in a byte string, and the program name NVRTC puts in its log.
// <<<
[[maybe_unused]] void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
[[maybe_unused]] std::uint64_t get_le(const std::string& in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::uint64_t{static_cast<unsigned char>(in[at + i])} << (8 * i);
  return v;
}
[[maybe_unused]] constexpr const char* kProgramName = "d13_jit.cu";

// Given: the driver API, reached through the runtime (see the file's leading comment). The
// function types come from cuda.h's declarations; nothing of libcuda is linked.
struct DriverApi {
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
};

const DriverApi& driver() {
  static const DriverApi api = [] {
    DriverApi a;
    const auto get = [](const char* symbol, void** fn) {
      cudaDriverEntryPointQueryResult found{};
      COURSE_CUDA_CHECK(
          cudaGetDriverEntryPointByVersion(symbol, fn, CUDA_VERSION, cudaEnableDefault, &found));
      if (found != cudaDriverEntryPointSuccess || *fn == nullptr)
        throw std::runtime_error(std::string("the CUDA driver has no ") + symbol);
    };
    get("cuModuleLoadData", reinterpret_cast<void**>(&a.module_load_data));
    get("cuModuleGetFunction", reinterpret_cast<void**>(&a.module_get_function));
    get("cuModuleUnload", reinterpret_cast<void**>(&a.module_unload));
    get("cuLaunchKernel", reinterpret_cast<void**>(&a.launch_kernel));
    get("cuGetErrorString", reinterpret_cast<void**>(&a.get_error_string));
    return a;
  }();
  return api;
}

void check_driver(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  driver().get_error_string(result, &text);
  throw std::runtime_error(std::string(what) + " failed: " + (text ? text : "unknown error") +
                           " (CUresult " + std::to_string(static_cast<int>(result)) + ")");
}

void check_nvrtc(nvrtcResult result, const char* what) {
  if (result != NVRTC_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: " + nvrtcGetErrorString(result));
}

// Given: one launch of a loaded kernel on the default stream.
void launch(void* function, dim3 grid, dim3 block, void** args) {
  check_driver(driver().launch_kernel(static_cast<CUfunction>(function), grid.x, grid.y, grid.z,
                                      block.x, block.y, block.z, 0, nullptr, args, nullptr),
               "cuLaunchKernel");
  COURSE_LAUNCH_CHECK();
}

}  // namespace

// Given.
std::string sha256_hex(const std::string& bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (const std::uint8_t b : sha256(bytes)) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

// Given.
int nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return 1000 * major + 10 * minor;
}

// Given.
std::string arch_for(int major, int minor) {
  course::require(major >= 1 && minor >= 0, "arch_for: not a compute capability");
  return "sm_" + std::to_string(major) + std::to_string(minor) + (major >= 9 ? "a" : "");
}

// ------------------------------------------------------------------------------------------
// Exercise 1 — the cache key (lesson §3).
// ------------------------------------------------------------------------------------------
std::string cache_key(const std::string& source, const std::string& name_expression,
                      const std::vector<std::string>& options, const std::string& arch,
                      int nvrtc_version) {
  // >>> STARTER d13.1
  //|  // TODO(d13.1) (lesson §3): serialise a format tag, the source, the name expression, the
  //|  // number of options, each option, the architecture and the NVRTC version, each field as
  //|  // <length>:<bytes>, and return sha256_hex of that text.
  //|  return "";
  // === SOLUTION
  // Every field as <length>:<bytes>, so that ("ab", "c") and ("a", "bc") differ; the option
  // count too, so that options cannot pass for the architecture. A format tag first: changing
  // this serialisation changes every key.
  std::string text;
  const auto field = [&text](const std::string& f) {
    text += std::to_string(f.size()) + ":" + f + "\n";
  };
  field("d13-kernel-cache-key-v1");
  field(source);
  field(name_expression);
  field(std::to_string(options.size()));
  for (const std::string& option : options) field(option);
  field(arch);
  field(std::to_string(nvrtc_version));
  return sha256_hex(text);
  // <<< d13.1
}

// ------------------------------------------------------------------------------------------
// Exercise 2 — the cache entry (lesson §4).
// ------------------------------------------------------------------------------------------
std::string encode_entry(const std::string& payload) {
  // >>> STARTER d13.2
  //|  // TODO(d13.2) (lesson §4): the 56-byte header of lab.h (kEntryMagic, kEntryVersion,
  //|  // kEntryHeaderBytes, the payload's size, sha256(payload)), then the payload. put_le() writes
  //|  // the little-endian integers.
  //|  return "";
  // === SOLUTION
  std::string out(kEntryMagic, 8);
  put_le(out, kEntryVersion, 4);
  put_le(out, kEntryHeaderBytes, 4);
  put_le(out, payload.size(), 8);
  for (const std::uint8_t b : sha256(payload)) out.push_back(static_cast<char>(b));
  out += payload;
  return out;
  // <<< d13.2
}

std::optional<std::string> decode_entry(const std::string& bytes) {
  // >>> STARTER d13.2
  //|  // TODO(d13.2) (lesson §4): the payload only if the size covers the header, the magic, the
  //|  // version and the header size match, the size field equals what follows the header exactly,
  //|  // and the SHA-256 of what follows equals the stored one; else std::nullopt.
  //|  return std::nullopt;
  // === SOLUTION
  // Every check costs a comparison; skipping one lets a broken file through: a truncated file
  // fails the size, a foreign one the magic, an old format the version, a flipped bit the hash.
  if (bytes.size() < kEntryHeaderBytes) return std::nullopt;
  if (bytes.compare(0, 8, kEntryMagic, 8) != 0) return std::nullopt;
  if (get_le(bytes, 8, 4) != kEntryVersion) return std::nullopt;
  if (get_le(bytes, 12, 4) != kEntryHeaderBytes) return std::nullopt;
  if (get_le(bytes, 16, 8) != bytes.size() - kEntryHeaderBytes) return std::nullopt;
  std::string payload = bytes.substr(kEntryHeaderBytes);
  const std::array<std::uint8_t, 32> digest = sha256(payload);
  if (std::memcmp(digest.data(), bytes.data() + 24, 32) != 0) return std::nullopt;
  return payload;
  // <<< d13.2
}

// ------------------------------------------------------------------------------------------
// Exercise 3 — atomic writes and the disk cache (lesson §5).
// ------------------------------------------------------------------------------------------
void write_file_atomically(const std::string& path, const std::string& bytes) {
  // >>> STARTER d13.3
  //|  // TODO(d13.3) (lesson §5): open a temporary file in the same folder whose name no other
  //|  // writer uses (path + ".tmp." + pid + a counter), write every byte (write() may write fewer),
  //|  // fsync, close, rename it over `path`, then fsync the folder. On any failure remove the
  //|  // temporary file and throw std::runtime_error with strerror(errno).
  //|  throw std::logic_error("write_file_atomically: not written yet (TODO d13.3)");
  // === SOLUTION
  // The temporary file is in the same folder (rename is atomic only within one file system)
  // and its name is unique to this process and call (two writers never share one).
  static std::atomic<unsigned> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  const auto fail = [&](const char* what) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("write_file_atomically(" + path + "): " + what + ": " + why);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("open");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  // fsync before rename: otherwise a crash can leave the new name pointing at a file whose
  // data never reached the disk (a zero-length or partial entry under the final name).
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync");
  }
  if (::close(fd) != 0) fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename");
  // And the folder, so that the rename itself is durable.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  // <<< d13.3
}

std::optional<std::string> DiskCache::load(const std::string& key, const std::string& ext) {
  // >>> STARTER d13.3
  //|  // TODO(d13.3) (lesson §5): read path_for(key, ext) whole (std::nullopt if it does not exist)
  //|  // and decode_entry it; a broken entry is counted (corrupt_entries_) and deleted.
  //|  return std::nullopt;
  // === SOLUTION
  const std::string path = path_for(key, ext);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::optional<std::string> payload = decode_entry(bytes.str());
  if (!payload) {
    // Broken: count it and delete it, so that the caller rebuilds it rather than trusting it.
    ++corrupt_entries_;
    ::unlink(path.c_str());
  }
  return payload;
  // <<< d13.3
}

void DiskCache::store(const std::string& key, const std::string& ext, const std::string& payload) {
  // >>> STARTER d13.3
  //|  // TODO(d13.3) (lesson §5): the encoded entry, written atomically to path_for(key, ext).
  // === SOLUTION
  write_file_atomically(path_for(key, ext), encode_entry(payload));
  // <<< d13.3
}

// Given.
DiskCache::DiskCache(std::string dir) : dir_(std::move(dir)) {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  course::require(!error && std::filesystem::is_directory(dir_),
                  "DiskCache: cannot create the cache folder " + dir_ + ": " + error.message());
}

// Given.
std::string DiskCache::path_for(const std::string& key, const std::string& ext) const {
  return dir_ + "/" + key + "." + ext;
}

// Given.
void DiskCache::clear() {
  std::error_code error;
  for (const auto& file : std::filesystem::directory_iterator(dir_, error)) {
    const std::string name = file.path().filename().string();
    const auto ends_with = [&name](const std::string& tail) {
      return name.size() >= tail.size() &&
             name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends_with(".cubin") || ends_with(".tune") || name.find(".tmp.") != std::string::npos)
      std::filesystem::remove(file.path(), error);
  }
}

// Given.
std::string default_cache_dir() {
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  if (!env("COURSE_KERNEL_CACHE").empty()) return env("COURSE_KERNEL_CACHE");
  if (!env("XDG_CACHE_HOME").empty()) return env("XDG_CACHE_HOME") + "/cuda-course/kernels";
  if (!env("HOME").empty()) return env("HOME") + "/.cache/cuda-course/kernels";
  return (std::filesystem::temp_directory_path() / "cuda-course-kernels").string();
}

// Given.
void clear_kernel_cache() { DiskCache(default_cache_dir()).clear(); }

// ------------------------------------------------------------------------------------------
// Exercise 4 — NVRTC (lesson §6).
// ------------------------------------------------------------------------------------------

// >>> STARTER d13.4
// === SOLUTION
// The message of a CompileError: NVRTC's log, then the generated source around every line the
// log names ("d13_jit.cu(12): error: ..."), numbered, with the named line marked.
std::string annotate_compile_log(const std::string& source, const std::string& log,
                                 const std::string& what) {
  constexpr int kContext = 2;  // lines shown above and below each named line
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::set<int> named;
  const std::string prefix = std::string(kProgramName) + "(";
  for (std::size_t at = log.find(prefix); at != std::string::npos; at = log.find(prefix, at + 1)) {
    const int line = std::atoi(log.c_str() + at + prefix.size());
    if (line >= 1 && line <= static_cast<int>(lines.size())) named.insert(line);
  }
  std::ostringstream out;
  out << what << "\nNVRTC's log:\n" << log;
  if (!named.empty()) out << "\nthe generated source (" << kProgramName << ") around the errors:\n";
  int shown_to = 0;
  for (const int line : named) {
    const int from = std::max({1, line - kContext, shown_to + 1});
    const int to = std::min(static_cast<int>(lines.size()), line + kContext);
    if (from > shown_to + 1 && shown_to > 0) out << "  ...\n";
    for (int l = from; l <= to; ++l)
      out << (l == line ? "> " : "  ") << l << " | " << lines[l - 1] << "\n";
    shown_to = std::max(shown_to, to);
  }
  return out.str();
}

// <<< d13.4
Cubin compile_cubin(const std::string& source, const std::string& name_expression,
                    const std::vector<std::string>& options, const std::string& arch) {
  // >>> STARTER d13.4
  //|  // TODO(d13.4) (lesson §6): nvrtcCreateProgram (program name kProgramName), destroyed on every
  //|  // way out; nvrtcAddNameExpression(name_expression); nvrtcCompileProgram with `options` and
  //|  // "--gpu-architecture=" + arch; read the log. On failure throw CompileError(message, log),
  //|  // the message holding the log and the source's lines around each "d13_jit.cu(LINE)" the log
  //|  // names, numbered "LINE | text". On success: nvrtcGetLoweredName (copy it before the program
  //|  // is destroyed) and nvrtcGetCUBINSize / nvrtcGetCUBIN. Wrap each NVRTC call in check_nvrtc.
  //|  throw std::logic_error("compile_cubin: not written yet (TODO d13.4)");
  // === SOLUTION
  nvrtcProgram program = nullptr;
  check_nvrtc(nvrtcCreateProgram(&program, source.c_str(), kProgramName, 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  // Destroyed on every way out, the throws included.
  const std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(
      &program, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  // The name expression makes NVRTC instantiate the template and remember its mangled name.
  check_nvrtc(nvrtcAddNameExpression(program, name_expression.c_str()), "nvrtcAddNameExpression");
  // A real architecture (sm_90a, not compute_90a): NVRTC then emits SASS, a CUBIN, and the
  // driver loads it with no JIT step of its own.
  std::vector<std::string> all = options;
  all.push_back("--gpu-architecture=" + arch);
  std::vector<const char*> argv;
  for (const std::string& option : all) argv.push_back(option.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  check_nvrtc(nvrtcGetProgramLogSize(program, &log_size), "nvrtcGetProgramLogSize");
  std::string log(log_size, '\0');
  if (log_size > 0) check_nvrtc(nvrtcGetProgramLog(program, log.data()), "nvrtcGetProgramLog");
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (compiled != NVRTC_SUCCESS) {
    std::string flags;
    for (const std::string& option : all) flags += " " + option;
    throw CompileError(
        annotate_compile_log(source, log,
                             "NVRTC could not compile " + name_expression + " (options:" + flags +
                                 "): " + nvrtcGetErrorString(compiled)),
        log);
  }
  Cubin cubin;
  const char* lowered = nullptr;
  check_nvrtc(nvrtcGetLoweredName(program, name_expression.c_str(), &lowered),
              "nvrtcGetLoweredName");
  cubin.lowered_name = lowered;  // copied: the string dies with the program
  std::size_t size = 0;
  check_nvrtc(nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
  cubin.image.resize(size);
  check_nvrtc(nvrtcGetCUBIN(program, cubin.image.data()), "nvrtcGetCUBIN");
  return cubin;
  // <<< d13.4
}

// ------------------------------------------------------------------------------------------
// Exercise 5 — the kernel cache (lesson §7).
// ------------------------------------------------------------------------------------------
struct KernelCache::Entry {
  std::string source;  // the memory key holds the rest of what the disk key hashes
  Cubin cubin;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

KernelCache::KernelCache(std::string dir, std::string arch)
    : disk_(std::move(dir)), arch_(std::move(arch)) {}

KernelCache::~KernelCache() {
  try {
    clear_memory();
  } catch (...) {  // a destructor never throws: at worst a module stays loaded
  }
}

// Given.
const std::string& KernelCache::arch() {
  if (arch_.empty()) {
    int device = 0, major = 0, minor = 0;
    COURSE_CUDA_CHECK(cudaGetDevice(&device));
    COURSE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    COURSE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    arch_ = arch_for(major, minor);
  }
  return arch_;
}

// Given.
void KernelCache::clear_memory() {
  for (auto& [key, entry] : memory_)
    if (entry->module != nullptr) driver().module_unload(entry->module);
  memory_.clear();
  tuned_.clear();
}

KernelCache::Entry& KernelCache::entry_for(const KernelSpec& spec) {
  // >>> STARTER d13.5
  //|  // TODO(d13.5) (lesson §7): memory_ first (key: the name expression and the options; the
  //|  // source must also be equal), counting stats_.memory_hits. Else the disk under
  //|  // cache_key(..., arch(), nvrtc_version()): the payload is lowered_name + "\n" + image
  //|  // (stats_.disk_hits). Else compile_cubin (stats_.compiles) and store that payload, ignoring
  //|  // a failed store. Add the disk's newly found corrupt entries to stats_.corrupt_entries, unload
  //|  // the module of an entry you replace, and keep the new entry in memory_.
  //|  throw std::logic_error("KernelCache: get_cubin/get_function are not written yet (TODO d13.5)");
  // === SOLUTION
  // Memory first, by what is cheap to compare: the name expression and the options pick the
  // entry, the source must then be equal (a few kB of memcmp, no hashing on the hot path).
  std::string memory_key = spec.name_expression;
  for (const std::string& option : spec.options) memory_key += "\n" + option;
  const auto found = memory_.find(memory_key);
  if (found != memory_.end() && found->second->source == spec.source) {
    ++stats_.memory_hits;
    return *found->second;
  }
  // Then the disk, under the full key; a payload is the lowered name, a newline, the CUBIN.
  const std::string key =
      cache_key(spec.source, spec.name_expression, spec.options, arch(), nvrtc_version());
  auto entry = std::make_unique<Entry>();
  entry->source = spec.source;
  const int corrupt_before = disk_.corrupt_entries();
  const std::optional<std::string> payload = disk_.load(key, "cubin");
  const std::size_t newline = payload ? payload->find('\n') : std::string::npos;
  if (newline != std::string::npos && newline > 0) {
    entry->cubin.lowered_name = payload->substr(0, newline);
    entry->cubin.image = payload->substr(newline + 1);
    ++stats_.disk_hits;
  } else {
    // Missing or broken: compile, and store for the next process. A cache that cannot be
    // written (a read-only home) costs the next process a compile, never this launch.
    entry->cubin = compile_cubin(spec.source, spec.name_expression, spec.options, arch());
    ++stats_.compiles;
    try {
      disk_.store(key, "cubin", entry->cubin.lowered_name + "\n" + entry->cubin.image);
    } catch (const std::exception&) {
    }
  }
  stats_.corrupt_entries += disk_.corrupt_entries() - corrupt_before;
  if (found != memory_.end() && found->second->module != nullptr)
    driver().module_unload(found->second->module);
  std::unique_ptr<Entry>& slot = memory_[memory_key];
  slot = std::move(entry);
  return *slot;
  // <<< d13.5
}

// Given.
const Cubin& KernelCache::get_cubin(const KernelSpec& spec) { return entry_for(spec).cubin; }

// Given: the module is loaded on the first launch, in the context the runtime made current.
void* KernelCache::get_function(const KernelSpec& spec) {
  Entry& entry = entry_for(spec);
  if (entry.function == nullptr) {
    COURSE_CUDA_CHECK(cudaFree(nullptr));  // the runtime's primary context, made current
    check_driver(driver().module_load_data(&entry.module, entry.cubin.image.data()),
                 "cuModuleLoadData");
    check_driver(driver().module_get_function(&entry.function, entry.module,
                                              entry.cubin.lowered_name.c_str()),
                 "cuModuleGetFunction");
    ++stats_.modules_loaded;
  }
  return entry.function;
}

// Given.
KernelCache& default_kernel_cache() {
  // Never destroyed: unloading modules after the runtime has shut down at exit is not safe.
  static KernelCache* cache = new KernelCache(default_cache_dir());
  return *cache;
}

// ------------------------------------------------------------------------------------------
// Given — the specialisations (Exercises 6 and 7 write the templates above).
// ------------------------------------------------------------------------------------------
std::string describe(const RmsNormConfig& c) {
  return "threads=" + std::to_string(c.threads) + " vec=" + std::to_string(c.vec);
}

KernelSpec rmsnorm_spec(const std::string& dtype, int hidden, const RmsNormConfig& config) {
  int bytes = 0;
  std::string tag;
  if (dtype == "float32") bytes = 4, tag = "F32";
  if (dtype == "float16") bytes = 2, tag = "F16";
  if (dtype == "bfloat16") bytes = 2, tag = "BF16";
  course::require(bytes > 0, "rmsnorm_spec: dtype must be float32, float16 or bfloat16");
  course::require(hidden >= 1 && hidden <= kMaxHidden, "rmsnorm_spec: hidden must be 1..16384");
  course::require(config.vec == 1 || config.vec == 2 || config.vec == 4 || config.vec == 8,
                  "rmsnorm_spec: vec must be 1, 2, 4 or 8");
  course::require(config.vec * bytes <= 16, "rmsnorm_spec: a vector is at most 16 bytes");
  course::require(hidden % config.vec == 0, "rmsnorm_spec: vec must divide hidden");
  course::require(config.threads >= 32 && config.threads <= 1024 && config.threads % 32 == 0,
                  "rmsnorm_spec: threads must be a multiple of 32 in [32, 1024]");
  const int vecs = hidden / config.vec;
  course::require((vecs + config.threads - 1) / config.threads <= kRmsNormMaxItems,
                  "rmsnorm_spec: more than kRmsNormMaxItems vectors per thread");
  KernelSpec spec;
  spec.name = "d13_rmsnorm";
  spec.source = kRmsNormSource;
  spec.name_expression = "d13_rmsnorm_kernel<" + tag + ", " + std::to_string(hidden) + ", " +
                         std::to_string(config.vec) + ", " + std::to_string(config.threads) + ">";
  spec.options = {"-std=c++17"};
  return spec;
}

std::vector<RmsNormConfig> rmsnorm_candidates(int element_bytes, int hidden, int max_vec) {
  // The widest vector the row, the pointers and 16 bytes allow; then every block size that
  // keeps at most kRmsNormMaxItems vectors per thread and leaves no more than half idle.
  int vec = 8;
  while (vec > 1 && (vec * element_bytes > 16 || vec > max_vec || hidden % vec != 0)) vec /= 2;
  const int vecs = hidden / vec;
  std::vector<RmsNormConfig> out;
  for (const int threads : {32, 64, 128, 256, 512, 1024}) {
    const bool fits = (vecs + threads - 1) / threads <= kRmsNormMaxItems;
    const bool busy = threads == 32 || threads / 2 < vecs;
    if (fits && busy) out.push_back({threads, vec});
  }
  return out;
}

std::string describe(const GemmConfig& c) {
  return "bm=" + std::to_string(c.bm) + " bn=" + std::to_string(c.bn) +
         " bk=" + std::to_string(c.bk) + " tm=" + std::to_string(c.tm) +
         " tn=" + std::to_string(c.tn);
}

KernelSpec gemm_spec(const GemmConfig& c) {
  course::require(c.bm > 0 && c.bn > 0 && c.bk > 0 && c.tm > 0 && c.tn > 0,
                  "gemm_spec: every tile size must be positive");
  course::require(c.bm % c.tm == 0 && c.bn % c.tn == 0,
                  "gemm_spec: a thread's tile (tm, tn) must divide the block's (bm, bn)");
  const int threads = (c.bm / c.tm) * (c.bn / c.tn);
  course::require(threads >= 32 && threads <= 1024 && threads % 32 == 0,
                  "gemm_spec: (bm / tm) * (bn / tn) threads must be whole warps, at most 1024");
  course::require(c.tm * c.tn <= 64, "gemm_spec: at most 64 accumulators per thread");
  course::require((c.bk * (c.bm + 1) + c.bk * c.bn) * 4 <= 48 * 1024,
                  "gemm_spec: the tiles must fit in 48 KB of static shared memory");
  KernelSpec spec;
  spec.name = "d13_gemm";
  spec.source = kGemmSource;
  spec.name_expression = "d13_gemm_kernel<" + std::to_string(c.bm) + ", " + std::to_string(c.bn) +
                         ", " + std::to_string(c.bk) + ", " + std::to_string(c.tm) + ", " +
                         std::to_string(c.tn) + ">";
  spec.options = {"-std=c++17"};
  return spec;
}

// ------------------------------------------------------------------------------------------
// Exercise 8 — autotuning (lesson §10).
// ------------------------------------------------------------------------------------------
namespace {

// Given: what the tuning key names as the device.
[[maybe_unused]] std::string device_description() {
  // Asked once per device: cudaGetDeviceProperties is far too slow for every launch.
  static std::map<int, std::string> known;
  int device = 0;
  COURSE_CUDA_CHECK(cudaGetDevice(&device));
  const auto found = known.find(device);
  if (found != known.end()) return found->second;
  cudaDeviceProp prop{};
  COURSE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return known[device] = std::string(prop.name) + " (compute capability " +
                         std::to_string(prop.major) + "." + std::to_string(prop.minor) + ")";
}

template <class Config>
Tuned<Config> autotune(KernelCache& cache, const std::string& kernel, const std::string& shape,
                       const std::vector<Config>& candidates,
                       const std::function<void(const Config&)>& run) {
  course::require(!candidates.empty(), "autotune: no candidate configuration for " + shape);
  // >>> STARTER d13.8
  //|  // TODO(d13.8) (lesson §10): a text naming the device (device_description()), the kernel, the
  //|  // shape, NVRTC's version and every candidate (describe()) is the key of cache.tuned(); its
  //|  // sha256_hex names the disk record. If cache.tuned() or the disk record (cache.disk().load(key,
  //|  // "tune"), a text "config=<describe()>\n...") names a candidate: return it, from_cache = true,
  //|  // ++stats().tuning_hits. Else time each candidate with `run`: kTuneWarmup launches, then
  //|  // kTuneSamples launches each between two CUDA events, its median (course::bench::percentile);
  //|  // keep the fastest, set candidates_timed and best_us, ++stats().tuning_runs, and record the
  //|  // winner in cache.tuned() and on disk (store, ignoring a failed write).
  //|  return Tuned<Config>{candidates.front()};
  // === SOLUTION
  // The record's key: the device, the kernel, the shape and the candidate list (a changed list
  // is retuned), and NVRTC's version (another compiler, other winners). In memory the text itself
  // is the key (no hashing on every launch); on disk its SHA-256 names the file.
  std::string text = "d13-tune-v1\n" + device_description() + "\n" + kernel + "\n" + shape +
                     "\nnvrtc " + std::to_string(nvrtc_version()) + "\n";
  for (const Config& c : candidates) text += describe(c) + "\n";
  Tuned<Config> result;
  const auto pick = [&](const std::string& description) {
    for (const Config& c : candidates)
      if (describe(c) == description) {
        result.config = c;
        result.from_cache = true;
        ++cache.stats().tuning_hits;
        cache.tuned()[text] = description;
        return true;
      }
    return false;
  };
  const auto remembered = cache.tuned().find(text);
  if (remembered != cache.tuned().end() && pick(remembered->second)) return result;
  const std::string key = sha256_hex(text);
  if (const std::optional<std::string> record = cache.disk().load(key, "tune")) {
    const std::string prefix = "config=";
    if (record->compare(0, prefix.size(), prefix) == 0) {
      const std::size_t end = record->find('\n');
      if (pick(record->substr(prefix.size(), end - prefix.size()))) return result;
    }
  }
  // Time every candidate: the first launch compiles and loads (untimed), kTuneWarmup launches
  // warm the caches and clocks, then kTuneSamples launches each between two events; a
  // candidate's figure is its median, which one slow launch cannot move.
  cudaEvent_t start = nullptr, stop = nullptr;
  COURSE_CUDA_CHECK(cudaEventCreate(&start));
  COURSE_CUDA_CHECK(cudaEventCreate(&stop));
  const std::unique_ptr<cudaEvent_t, void (*)(cudaEvent_t*)> start_guard(
      &start, [](cudaEvent_t* e) { cudaEventDestroy(*e); });
  const std::unique_ptr<cudaEvent_t, void (*)(cudaEvent_t*)> stop_guard(
      &stop, [](cudaEvent_t* e) { cudaEventDestroy(*e); });
  double best_us = std::numeric_limits<double>::infinity();
  for (const Config& c : candidates) {
    for (int i = 0; i < kTuneWarmup; ++i) run(c);
    std::vector<double> samples;
    for (int i = 0; i < kTuneSamples; ++i) {
      COURSE_CUDA_CHECK(cudaEventRecord(start));
      run(c);
      COURSE_CUDA_CHECK(cudaEventRecord(stop));
      COURSE_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0.0f;
      COURSE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      samples.push_back(1000.0 * ms);
    }
    const double median_us = course::bench::percentile(samples, 0.5);
    if (median_us < best_us) {
      best_us = median_us;
      result.config = c;
    }
  }
  result.candidates_timed = static_cast<int>(candidates.size());
  result.best_us = best_us;
  ++cache.stats().tuning_runs;
  cache.tuned()[text] = describe(result.config);
  std::ostringstream record;
  record << "config=" << describe(result.config) << "\nmedian_us=" << best_us
         << "\nkernel=" << kernel << "\nshape=" << shape << "\n";
  try {  // as for CUBINs: an unwritable cache costs the next process a tuning run, nothing more
    cache.disk().store(key, "tune", record.str());
  } catch (const std::exception&) {
  }
  return result;
  // <<< d13.8
}

// Given: the widest vector (in elements, up to 8) to which every pointer is aligned.
int max_vec_for(std::size_t element_bytes, std::initializer_list<const void*> pointers) {
  int vec = 8;
  for (const void* p : pointers)
    while (vec > 1 && !course::is_aligned(p, vec * element_bytes)) vec /= 2;
  return vec;
}

}  // namespace

template <class T>
Tuned<RmsNormConfig> autotune_rmsnorm(const T* x, const T* w, T* y, std::int64_t rows, int hidden,
                                      float eps, KernelCache* cache) {
  course::require(hidden >= 1 && hidden <= kMaxHidden, "autotune_rmsnorm: hidden must be 1..16384");
  course::require(rows >= 1, "autotune_rmsnorm: rows must be >= 1");
  KernelCache& kc = cache != nullptr ? *cache : default_kernel_cache();
  const int max_vec = max_vec_for(sizeof(T), {x, w, y});
  const std::string shape = std::string(course::DType<T>::name) + " rows=" + std::to_string(rows) +
                            " hidden=" + std::to_string(hidden) +
                            " max_vec=" + std::to_string(max_vec);
  return autotune<RmsNormConfig>(
      kc, "d13_rmsnorm", shape, rmsnorm_candidates(sizeof(T), hidden, max_vec),
      [&](const RmsNormConfig& c) { rmsnorm(x, w, y, rows, hidden, eps, c, &kc); });
}

Tuned<GemmConfig> autotune_gemm(const float* A, const float* B, float* C, std::int64_t M,
                                std::int64_t N, std::int64_t K, KernelCache* cache) {
  course::require(M >= 1 && N >= 1 && K >= 1, "autotune_gemm: M, N and K must be >= 1");
  KernelCache& kc = cache != nullptr ? *cache : default_kernel_cache();
  const std::string shape =
      "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
  return autotune<GemmConfig>(
      kc, "d13_gemm", shape,
      std::vector<GemmConfig>(std::begin(kGemmCandidates), std::end(kGemmCandidates)),
      [&](const GemmConfig& c) { gemm(A, B, C, M, N, K, c, &kc); });
}

// ------------------------------------------------------------------------------------------
// Launchers.
// ------------------------------------------------------------------------------------------
// Given.
template <class T>
void rmsnorm_0_aot(const T* x, const T* w, T* y, std::int64_t rows, int hidden, float eps) {
  course::require(hidden >= 1 && rows >= 0 && rows <= INT_MAX,
                  "rmsnorm_0_aot: hidden must be >= 1 and rows in [0, 2^31)");
  if (rows == 0) return;
  course::require(x != nullptr && w != nullptr && y != nullptr, "rmsnorm_0_aot: null pointer");
  rmsnorm_0_aot_kernel<T><<<static_cast<unsigned>(rows), kAotThreads>>>(x, w, y, hidden, eps);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void rmsnorm(const T* x, const T* w, T* y, std::int64_t rows, int hidden, float eps,
             RmsNormConfig config, KernelCache* cache) {
  course::require(hidden >= 1 && hidden <= kMaxHidden, "rmsnorm: hidden must be 1..16384");
  course::require(rows >= 0 && rows <= INT_MAX, "rmsnorm: rows must be in [0, 2^31)");
  course::require(eps >= 0.0f, "rmsnorm: eps must be >= 0");
  if (rows == 0) return;
  course::require(x != nullptr && w != nullptr && y != nullptr, "rmsnorm: null pointer");
  KernelCache& kc = cache != nullptr ? *cache : default_kernel_cache();
  if (config.threads == 0 && config.vec == 0)
    config = autotune_rmsnorm(x, w, y, rows, hidden, eps, &kc).config;
  course::require(config.vec >= 1 && config.vec <= max_vec_for(sizeof(T), {x, w, y}),
                  "rmsnorm: every pointer must be aligned to vec elements");
  const KernelSpec spec = rmsnorm_spec(course::DType<T>::name, hidden, config);
  void* function = kc.get_function(spec);
  const void* x_arg = x;
  const void* w_arg = w;
  void* y_arg = y;
  long long rows_arg = rows;
  float eps_arg = eps;
  void* args[] = {&x_arg, &w_arg, &y_arg, &rows_arg, &eps_arg};
  launch(function, dim3(static_cast<unsigned>(rows)), dim3(config.threads), args);
}

void gemm(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N, std::int64_t K,
          GemmConfig config, KernelCache* cache) {
  course::require(M >= 0 && N >= 0 && K >= 0, "gemm: M, N and K must be >= 0");
  if (M == 0 || N == 0) return;
  course::require(K >= 1, "gemm: K must be >= 1");
  course::require(A != nullptr && B != nullptr && C != nullptr, "gemm: null pointer");
  KernelCache& kc = cache != nullptr ? *cache : default_kernel_cache();
  if (config.bm == 0) config = autotune_gemm(A, B, C, M, N, K, &kc).config;
  const KernelSpec spec = gemm_spec(config);
  const std::int64_t grid_n = (N + config.bn - 1) / config.bn;
  const std::int64_t grid_m = (M + config.bm - 1) / config.bm;
  course::require(grid_n <= INT_MAX && grid_m <= 65535, "gemm: the matrix has too many tiles");
  void* function = kc.get_function(spec);
  const void* a_arg = A;
  const void* b_arg = B;
  void* c_arg = C;
  long long m_arg = M, n_arg = N, k_arg = K;
  void* args[] = {&a_arg, &b_arg, &c_arg, &m_arg, &n_arg, &k_arg};
  const int threads = (config.bm / config.tm) * (config.bn / config.tn);
  launch(function, dim3(static_cast<unsigned>(grid_n), static_cast<unsigned>(grid_m)),
         dim3(threads), args);
}

#define D13_INSTANTIATE(T)                                                                     \
  template void rmsnorm_0_aot<T>(const T*, const T*, T*, std::int64_t, int, float);            \
  template void rmsnorm<T>(const T*, const T*, T*, std::int64_t, int, float, RmsNormConfig,    \
                           KernelCache*);                                                      \
  template Tuned<RmsNormConfig> autotune_rmsnorm<T>(const T*, const T*, T*, std::int64_t, int, \
                                                    float, KernelCache*);
D13_INSTANTIATE(float)
D13_INSTANTIATE(half)
D13_INSTANTIATE(bfloat16)
#undef D13_INSTANTIATE

}  // namespace d13
