// Day 13 — a JIT compilation system: NVRTC, an on-disk kernel cache, autotuning.
//
// The interface the tests and the benchmark call. Kernels are kept as CUDA C++ source
// templates (strings in kernel.cu), specialised at run time (dtype, hidden size, tile sizes,
// vector width) through NVRTC name expressions, compiled to a CUBIN for the device's exact
// architecture, cached in memory and on disk, and loaded with the driver API. Nothing is
// compiled before a kernel is first used. Exercises are numbered as in README.md.
//
// Everything up to Exercise 5 is host code: it runs, and is tested, without a GPU (NVRTC
// compiles for sm_90a on a machine that has none). Pointers of Exercises 6-8 are device
// pointers; the work is queued on the default stream.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/dtype.h"

namespace d13 {

using course::bfloat16;
using course::half;

// ------------------------------------------------------------------------------------------
// Given — SHA-256 (FIPS 180-4) of a byte string, as 64 lowercase hex digits.
std::string sha256_hex(const std::string& bytes);
// Given — NVRTC's version as 1000 * major + 10 * minor (13.0 -> 13000).
int nvrtc_version();
// Given — the NVRTC architecture for compute capability major.minor: "sm_90a" for 9.0 (the
// 'a' unlocks the architecture-specific features: wgmma, setmaxnreg), "sm_80" for 8.0.
std::string arch_for(int major, int minor);

// ------------------------------------------------------------------------------------------
// Exercise 1 — the cache key (lesson §3). SHA-256 of everything that changes the CUBIN: the
// source, the name expression, the options (in order), the architecture and NVRTC's version,
// each field length-prefixed so that no two different inputs serialise to the same bytes.
std::string cache_key(const std::string& source, const std::string& name_expression,
                      const std::vector<std::string>& options, const std::string& arch,
                      int nvrtc_version);

// ------------------------------------------------------------------------------------------
// Exercise 2 — a cache entry that knows when it is broken (lesson §4). An entry is a
// kEntryHeaderBytes header then the payload:
//   bytes  0- 7  kEntryMagic ("D13KCACH")
//   bytes  8-11  kEntryVersion, little-endian uint32
//   bytes 12-15  kEntryHeaderBytes, little-endian uint32
//   bytes 16-23  the payload's size in bytes, little-endian uint64
//   bytes 24-55  SHA-256 of the payload (32 raw bytes)
// decode_entry returns the payload only when all five agree with the bytes it was given
// (a truncated, extended, bit-flipped or foreign file is rejected), else std::nullopt.
inline constexpr char kEntryMagic[9] = "D13KCACH";
inline constexpr std::uint32_t kEntryVersion = 1;
inline constexpr std::size_t kEntryHeaderBytes = 56;
std::string encode_entry(const std::string& payload);
std::optional<std::string> decode_entry(const std::string& bytes);

// ------------------------------------------------------------------------------------------
// Exercise 3 — the disk cache (lesson §5). write_file_atomically() writes `bytes` to a
// temporary file in the same directory, fsyncs it and renames it over `path`: a reader sees
// the old file or the new one, never a part, even with two processes writing the same path.
// DiskCache keeps one file per key, <dir>/<key>.<ext>, each an entry of Exercise 2; load()
// returns the payload, or std::nullopt when the file is missing or corrupt (a corrupt one is
// counted and deleted, so that the caller rebuilds it).
void write_file_atomically(const std::string& path, const std::string& bytes);

// Given — the cache folder: $COURSE_KERNEL_CACHE if set, else $XDG_CACHE_HOME/cuda-course/kernels,
// else $HOME/.cache/cuda-course/kernels, else a folder under the system's temporary directory.
std::string default_cache_dir();

class DiskCache {
 public:
  explicit DiskCache(std::string dir);  // creates the folder (and its parents) if need be
  const std::string& dir() const { return dir_; }
  std::string path_for(const std::string& key, const std::string& ext) const;
  std::optional<std::string> load(const std::string& key, const std::string& ext);
  void store(const std::string& key, const std::string& ext, const std::string& payload);
  // Deletes every entry (and any temporary file a killed writer left behind) in the folder.
  void clear();
  int corrupt_entries() const { return corrupt_entries_; }

 private:
  std::string dir_;
  int corrupt_entries_ = 0;
};

// Given — DiskCache(default_cache_dir()).clear(): what `course jit-cache clear` will call.
void clear_kernel_cache();

// ------------------------------------------------------------------------------------------
// Exercise 4 — NVRTC (lesson §2, §6). compile_cubin() compiles `source` for `arch` (for
// example "sm_90a") with `options`, instantiating the kernel that `name_expression` names
// ("d13_rmsnorm_kernel<F16, 4096, 8, 256>"), and returns the CUBIN and the kernel's lowered
// (mangled) name. A source that does not compile throws CompileError: its what() holds NVRTC's
// log and the generated source's lines around every line the log names, numbered.
struct Cubin {
  std::string image;         // the ELF image NVRTC produced
  std::string lowered_name;  // the symbol cuModuleGetFunction looks up
};

class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& what, std::string log)
      : std::runtime_error(what), log_(std::move(log)) {}
  const std::string& log() const { return log_; }  // NVRTC's own log

 private:
  std::string log_;
};

Cubin compile_cubin(const std::string& source, const std::string& name_expression,
                    const std::vector<std::string>& options, const std::string& arch);

// ------------------------------------------------------------------------------------------
// Exercise 5 — the kernel cache (lesson §7): memory, then disk, then NVRTC. A KernelSpec is one
// specialisation of one template.
struct KernelSpec {
  std::string name;  // the template's name, for messages ("d13_rmsnorm")
  std::string source;
  std::string name_expression;
  std::vector<std::string> options;
};

struct CacheStats {
  int compiles = 0;         // NVRTC runs
  int memory_hits = 0;      // get_cubin answered from memory
  int disk_hits = 0;        // ... from the disk cache
  int corrupt_entries = 0;  // disk entries found broken (and rebuilt)
  int modules_loaded = 0;   // cuModuleLoadData calls (GPU only)
  int tuning_runs = 0;      // autotuning runs that timed candidates
  int tuning_hits = 0;      // autotuning answered by a record (memory or disk)
};

class KernelCache {
 public:
  // `arch` as arch_for() gives it; "" = the current device's (asked on first use, not here).
  explicit KernelCache(std::string dir, std::string arch = "");
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The CUBIN of `spec` for this cache's architecture: from memory, else from disk, else
  // compiled by NVRTC (and then stored on disk, atomically).
  const Cubin& get_cubin(const KernelSpec& spec);
  // The loaded kernel (a CUfunction), loading the module on first use (GPU only).
  void* get_function(const KernelSpec& spec);
  // Forgets what is in memory (unloading modules): the next get goes to disk.
  void clear_memory();

  const std::string& arch();
  DiskCache& disk() { return disk_; }
  CacheStats& stats() { return stats_; }
  // Autotuning records (Exercise 8): the winning configuration's description per tuning text.
  std::map<std::string, std::string>& tuned() { return tuned_; }

 private:
  struct Entry;
  Entry& entry_for(const KernelSpec& spec);  // memory, else disk, else NVRTC
  DiskCache disk_;
  std::string arch_;
  CacheStats stats_;
  std::map<std::string, std::unique_ptr<Entry>> memory_;  // by name expression and options
  std::map<std::string, std::string> tuned_;
};

// The process's cache (default_cache_dir(), the current device): created on first use.
KernelCache& default_kernel_cache();

// ------------------------------------------------------------------------------------------
// Exercise 6 — a JIT RMSNorm (lesson §8): y[r, c] = x[r, c] / sqrt(mean(x[r, :]^2) + eps) * w[c],
// x, y [rows, hidden] row-major, w [hidden]; one block per row, the hidden size, the vector width
// and the block size compiled in. `config` = {0, 0} lets the autotuner choose (Exercise 8);
// otherwise vec must divide hidden and every pointer must be vec-element aligned.
inline constexpr int kMaxHidden = 16384;
inline constexpr int kRmsNormMaxItems = 16;  // vectors one thread keeps in registers
struct RmsNormConfig {
  int threads = 0;  // 32..1024, a multiple of 32
  int vec = 0;      // elements per access: 1, 2, 4 or 8, at most 16 bytes
};
std::string describe(const RmsNormConfig& c);
// The spec of one specialisation ("float32", "float16" or "bfloat16"): pure host code.
KernelSpec rmsnorm_spec(const std::string& dtype, int hidden, const RmsNormConfig& config);
// The candidates the autotuner times for this dtype size, hidden size and alignment.
std::vector<RmsNormConfig> rmsnorm_candidates(int element_bytes, int hidden, int max_vec);

template <class T>
void rmsnorm(const T* x, const T* w, T* y, std::int64_t rows, int hidden, float eps,
             RmsNormConfig config = {}, KernelCache* cache = nullptr);

// Given — the ahead-of-time baseline: the same RMSNorm compiled by nvcc for any hidden size (a
// run-time loop bound, the row read twice), for the benchmark's comparison.
template <class T>
void rmsnorm_0_aot(const T* x, const T* w, T* y, std::int64_t rows, int hidden, float eps);

// ------------------------------------------------------------------------------------------
// Exercise 7 — a JIT tiled GEMM (lesson §9): C[M, N] = A[M, K] B[K, N], float32, row-major,
// any M, N, K >= 1; a block computes a BM x BN tile of C in K-steps of BK, each thread TM x TN
// of it. `config` = {} lets the autotuner choose.
struct GemmConfig {
  int bm = 0, bn = 0, bk = 0, tm = 0, tn = 0;
};
std::string describe(const GemmConfig& c);
KernelSpec gemm_spec(const GemmConfig& config);
inline constexpr GemmConfig kGemmCandidates[] = {
    {32, 32, 8, 2, 2},  {64, 64, 8, 4, 4},  {64, 64, 16, 4, 4},
    {128, 64, 8, 8, 4}, {64, 128, 8, 4, 8}, {128, 128, 8, 8, 8},
};
void gemm(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N, std::int64_t K,
          GemmConfig config = {}, KernelCache* cache = nullptr);

// Given (not an exercise): cublasSgemm on the same data, the vendor baseline of the benchmark.
// It is in cublas_baseline.cu, linked into the benchmarks only.
void gemm_0_cublas(const float* A, const float* B, float* C, std::int64_t M, std::int64_t N,
                   std::int64_t K);

// ------------------------------------------------------------------------------------------
// Exercise 8 — autotuning (lesson §10). Times every candidate on the caller's buffers (CUDA
// events, warm-up, median of kTuneSamples), keeps the winner per (device name and compute
// capability, kernel, problem shape) in memory and on disk (<key>.tune, written atomically),
// and answers from that record next time without timing anything.
inline constexpr int kTuneWarmup = 3;
inline constexpr int kTuneSamples = 15;
template <class Config>
struct Tuned {
  Config config;
  bool from_cache = false;  // true: no candidate was timed
  int candidates_timed = 0;
  double best_us = 0.0;  // the winner's median (0 when from the cache)
};
template <class T>
Tuned<RmsNormConfig> autotune_rmsnorm(const T* x, const T* w, T* y, std::int64_t rows, int hidden,
                                      float eps, KernelCache* cache = nullptr);
Tuned<GemmConfig> autotune_gemm(const float* A, const float* B, float* C, std::int64_t M,
                                std::int64_t N, std::int64_t K, KernelCache* cache = nullptr);

}  // namespace d13
