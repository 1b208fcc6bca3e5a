// Day 8 — CUB, sampling and a caching memory pool.
//
// The interface the tests and the benchmark call. Part 1 (steps 1-7): the caching pool. Part 2
// (exercises 8-12, below the pool): a block-wide tile scan with CUB's block primitives, two
// device-wide inclusive scans of int32, and LLM sampling (min-p, top-k, top-p) without sorting.
//
// Part 1. A CachingPool hands out device memory the way
// an ML framework's allocator does (PyTorch's CUDACachingAllocator, simplified): it asks a
// backend (DeviceMemory) for large segments, carves blocks out of them, and keeps freed blocks
// to hand out again instead of returning them. The backend is an interface so that the same
// pool runs on the GPU (CudaDeviceMemory, given in kernel.cu) and in host-only tests (a fake
// backend in test_d08.cu that counts calls and completes events when the test says so).
// The steps are numbered as in README.md; every rule below is one the tests check exactly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace d08 {

// ---------------------------------------------------------------------------------------------
// The backend: where segments come from, and how the pool learns that a stream has finished
// with a block. Every call is made with the pool's mutex held, never from two threads at once.
class DeviceMemory {
 public:
  // An opaque handle to an event recorded on a stream (a cudaEvent_t for the CUDA backend).
  using Event = std::uintptr_t;
  // What the device reports about its memory, for the out-of-memory message.
  struct Info {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
  };

  virtual ~DeviceMemory() = default;
  // `bytes` of device memory (aligned to at least 512 bytes), or nullptr when the device has
  // not that much left. Never throws for lack of memory.
  virtual void* allocate(std::size_t bytes) = 0;
  // Returns a pointer that allocate() gave, with all of its bytes.
  virtual void free(void* ptr) = 0;
  // Records an event on `stream` now: it completes once the work queued on `stream` before
  // it has finished.
  virtual Event record_event(cudaStream_t stream) = 0;
  // Whether `event` has completed (never waits).
  virtual bool event_completed(Event event) = 0;
  // Gives the event back; the pool calls it once per recorded event, completed or not.
  virtual void release_event(Event event) = 0;
  virtual Info info() = 0;
};

// The real backend: cudaMalloc / cudaFree / cudaEventRecord / cudaEventQuery on the current
// device. Given complete in kernel.cu.
class CudaDeviceMemory final : public DeviceMemory {
 public:
  void* allocate(std::size_t bytes) override;
  void free(void* ptr) override;
  Event record_event(cudaStream_t stream) override;
  bool event_completed(Event event) override;
  void release_event(Event event) override;
  Info info() override;
};

// ---------------------------------------------------------------------------------------------
// Step 1 — sizes (lesson §2).
constexpr std::size_t kMinBlockSize = 512;           // every block is a multiple of this
constexpr std::size_t kSmallSize = 1 << 20;          // requests up to 1 MiB are "small"
constexpr std::size_t kSmallSegmentSize = 2 << 20;   // small blocks are cut from 2 MiB segments
constexpr std::size_t kLargeSegmentRound = 2 << 20;  // large segments: a multiple of 2 MiB
// The block size for a request: `bytes` rounded up to a multiple of kMinBlockSize (1 -> 512,
// 512 -> 512, 513 -> 1024). 0 bytes is not a request (allocate(0) returns nullptr).
std::size_t round_size(std::size_t bytes);
// The size of the segment the pool asks the backend for when no cached block fits a block of
// `size` bytes (a round_size() result): kSmallSegmentSize for a small block (size <=
// kSmallSize), else `size` rounded up to a multiple of kLargeSegmentRound.
std::size_t segment_size(std::size_t size);

// ---------------------------------------------------------------------------------------------
// The statistics (step 5, lesson §5). Every byte the pool has reserved is in exactly one of
// three states, so that reserved_bytes == allocated_bytes + pending_bytes + cached_bytes:
struct PoolStats {
  std::size_t reserved_bytes = 0;        // the sum of the segments held from the backend
  std::size_t allocated_bytes = 0;       // blocks handed out and not yet freed (their full size)
  std::size_t pending_bytes = 0;         // freed blocks still in use by another stream (step 4)
  std::size_t cached_bytes = 0;          // free blocks the pool may hand out again
  std::size_t peak_allocated_bytes = 0;  // the most allocated_bytes ever was (until reset)
  std::size_t largest_cached_block = 0;  // the largest single cached block, in bytes
  std::int64_t segments = 0;             // segments held from the backend
  std::int64_t allocated_blocks = 0;     // blocks handed out and not yet freed
  std::int64_t cached_blocks = 0;        // blocks in the free lists
  // The share of the cached bytes that one request could not use, because they are cut into
  // pieces: 1 - largest_cached_block / cached_bytes, 0 when nothing is cached. 0: all the
  // cached memory is one block; near 1: it is dust.
  double fragmentation = 0.0;
};

// Thrown when the backend cannot give a segment even after the pool released every cached
// segment and tried again (step 7). Its message reads, with every number in bytes:
//   "CachingPool: out of memory: tried to allocate <request> bytes (a <segment>-byte segment);
//    the pool has <reserved> bytes reserved (<allocated> allocated, <pending> pending,
//    <cached> cached); the device has <free> of <total> bytes free"
// where <request> is the caller's size before rounding and the pool's numbers are those after
// the release.
class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Steps 2 to 7 — the pool. Thread-safe: any thread may call any member at any time.
class CachingPool {
 public:
  // The pool keeps a reference to `backend`, which must outlive it.
  explicit CachingPool(DeviceMemory& backend);
  // Returns every segment to the backend (blocks still allocated become invalid) and releases
  // every event it still holds.
  ~CachingPool();
  CachingPool(const CachingPool&) = delete;
  CachingPool& operator=(const CachingPool&) = delete;

  // Step 2 (lesson §3): a block of round_size(bytes) bytes or more for use on `stream`:
  // the best-fitting cached block of that stream (the smallest that is large enough; among
  // equal sizes the lowest address) if there is one, else a new segment of segment_size()
  // bytes from the backend. Small blocks (<= kSmallSize) come only from small segments, large
  // ones only from large segments. The block found is split (step 3) when what is left
  // over is worth keeping: at least kMinBlockSize bytes for a small block, more than
  // kSmallSize for a large one; otherwise the whole block is handed out (and counted as
  // allocated). nullptr for 0 bytes. Throws OutOfMemory (step 7).
  void* allocate(std::size_t bytes, cudaStream_t stream = nullptr);
  // Step 3 (lesson §3): gives back a block that allocate() returned. With no other stream
  // recorded on it, the block is cached at once, merged with the cached blocks of its segment
  // on either side. Throws std::invalid_argument for a pointer the pool did not hand out (or
  // already took back).
  void free(void* ptr);
  // Step 4 (lesson §4): `stream` (other than the block's own) also uses the block that
  // starts at `ptr`. When the block is freed, the pool records an event on every such stream
  // and caches the block only once all of them have completed: until then it is pending.
  void record_stream(void* ptr, cudaStream_t stream);

  // Step 5 (lesson §5). Pending blocks whose events have completed are cached first.
  PoolStats stats();
  // peak_allocated_bytes = allocated_bytes now.
  void reset_peak();
  // Step 6 (lesson §5): returns to the backend every segment that is one cached block
  // (nothing in it allocated or pending), after caching the pending blocks whose events have
  // completed. Returns the bytes released.
  std::size_t empty_cache();

 private:
  struct Impl;  // defined in kernel.cu: the data structures are yours to choose
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Given: fills `bytes` bytes at `ptr` (device memory) with `value`, on `stream`: the GPU tests
// write through the pool's pointers with it.
void fill_bytes(void* ptr, std::size_t bytes, std::uint8_t value, cudaStream_t stream = nullptr);

// =============================================================================================
// Part 2 — CUB, a device-wide scan and sampling (lesson §10-§14). Pointers are device pointers;
// work is queued on the default stream; every launcher checks its arguments and throws
// course::InvalidArgument (a message, never an illegal address).

// ---------------------------------------------------------------------------------------------
// The scans: y[i] = x[0] + x[1] + ... + x[i] (INCLUSIVE), in int32 arithmetic that wraps
// around like uint32 (two's complement): 2^31 - 1 + 1 = -2^31. y may not overlap x.
// A tile is kScanTile consecutive elements, one block of kScanThreads threads with
// kScanItems each (lesson §11.1). 128 x 32 rather than 256 x 16: the same tile in fewer, fatter
// threads made the look-back scan 10% faster on the H100 (913 against 1015 us for 2^28
// elements, 2026-11-25), while 512 x 8 made it 25% slower (lesson §11.5).
constexpr int kScanThreads = 128;
constexpr int kScanItems = 32;
constexpr int kScanTile = kScanThreads * kScanItems;  // 4096 elements
static_assert(kScanTile == 4096, "the tests' tile-edge sizes assume 4096-element tiles");

// Exercise 2 (TODO d08.2) — one tile, with CUB's block primitives (lesson §10.2): for every tile
// t, y[t * kScanTile + j] = x[t * kScanTile] + ... + x[t * kScanTile + j] (each tile scanned on
// its own, as if it started the array) and tile_sums[t] = the tile's total, for the
// ceil(n / kScanTile) tiles (the last one may be partial).
void scan_tiles(const std::int32_t* x, std::int32_t* y, std::int32_t* tile_sums, std::int64_t n);

// The scratch memory both scans need, in bytes, for n elements (given: lesson §10.3). Like CUB's
// device algorithms, the scans take it from the caller (a pool of part 1, say) instead of
// calling cudaMalloc on every call; its contents before a call do not matter.
std::size_t scan_temp_bytes(std::int64_t n);

// Exercise 3 (TODO d08.3) — reduce-then-scan (lesson §11.2): three kernels, 3 * 4n bytes moved
// (x read twice, y written once).
void scan_1_reduce_then_scan(const std::int32_t* x, std::int32_t* y, std::int64_t n, void* temp,
                             std::size_t temp_bytes);
// Exercise 4 (TODO d08.4) — one pass with decoupled look-back (lesson §11.3): 2 * 4n bytes.
void scan_2_decoupled_lookback(const std::int32_t* x, std::int32_t* y, std::int64_t n, void* temp,
                               std::size_t temp_bytes);

// Given (not an exercise): cub::DeviceScan::InclusiveSum, the vendor baseline, with CUB's
// two-call temp-storage protocol: called with temp == nullptr it only sets temp_bytes; called
// again with that much scratch it scans. In cub_baseline.cu, linked into the benchmark only.
void scan_cub(void* temp, std::size_t& temp_bytes, const std::int32_t* x, std::int32_t* y,
              std::int64_t n);

// ---------------------------------------------------------------------------------------------
// Sampling (lesson §12-§14). probs is a row-major [batch, vocab] matrix of float32
// probabilities: finite, >= 0, each row adding up to 1 (a softmax's output). For each row r one
// token is drawn and written to tokens[r], from the ALLOWED set of the filter, renormalised:
//
//   the threshold t of row r (a probability of the row, or 0 = keep every token):
//     kMinP  t = min_p * max_i p[i], the product rounded to float32 (__fmul_rn(min_p, max)).
//     kTopK  t = the k-th largest probability, counting repeats (t = 0 when k >= vocab).
//     kTopP  t = the largest probability such that the tokens with p >= t add up to at least
//            top_p: walking down the probabilities from the largest, t is the first one at
//            which the running sum reaches top_p (t = 0 when the whole row adds up to less).
//   allowed: every token with p[i] >= t. TIES: every token equal to t is allowed, so top-k
//            keeps MORE than k tokens when the k-th largest probability is repeated, and top-p
//            keeps every token of the probability at which the sum reached top_p.
//   the draw: u = sampling_uniform(seed, r, draw) (below), M = the sum of the allowed
//            probabilities, and the token is the FIRST index i (in vocabulary order, not in
//            sorted order) whose running sum of allowed probabilities p[0..i] exceeds u * M.
//            When float rounding leaves every running sum <= u * M, the last allowed token
//            with p > 0.
//
// So a token is drawn with probability p[i] / M if allowed, 0 otherwise, and the same (seed,
// draw) gives the same tokens on every run and every GPU. The sums are float32 on the GPU (the
// tests allow for their rounding where a decision is that close).
enum class Filter { kMinP, kTopK, kTopP };
inline const char* filter_name(Filter f) {
  switch (f) {
    case Filter::kMinP:
      return "min_p";
    case Filter::kTopK:
      return "top_k";
    case Filter::kTopP:
      return "top_p";
  }
  return "?";
}

struct SamplingParams {
  Filter filter = Filter::kMinP;
  int top_k = 1;       // kTopK: 1 <= top_k
  float top_p = 1.0f;  // kTopP: 0 < top_p <= 1
  float min_p = 0.0f;  // kMinP: 0 <= min_p <= 1
};

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), the
// counter-based generator of cuRAND and of PyTorch: 10 rounds that scramble a 128-bit counter
// under a 64-bit key. Given, and the same on the host and the GPU (lesson §13.2).
struct Philox4x32 {
  std::uint32_t v[4];
};
__host__ __device__ inline Philox4x32 philox4x32_10(Philox4x32 counter, std::uint32_t key0,
                                                    std::uint32_t key1) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * counter.v[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * counter.v[2];
    const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    counter = Philox4x32{{hi1 ^ counter.v[1] ^ key0, lo1, hi0 ^ counter.v[3] ^ key1, lo0}};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return counter;
}

// The uniform of draw `draw` of row `row`: Philox of the counter (draw, row) under the key
// `seed`, its first word's top 23 bits as a float in [0, 1 - 2^-23]. One number per row per
// draw, from nothing but (seed, row, draw): no state to keep, any row on any thread.
// INVARIANT: u <= 1 - 2^-23, so that u * M, rounded to float32, is below M.
__host__ __device__ inline float sampling_uniform(std::uint64_t seed, std::uint64_t row,
                                                  std::uint64_t draw) {
  const Philox4x32 counter{{static_cast<std::uint32_t>(draw),
                            static_cast<std::uint32_t>(draw >> 32), static_cast<std::uint32_t>(row),
                            static_cast<std::uint32_t>(row >> 32)}};
  const Philox4x32 r = philox4x32_10(counter, static_cast<std::uint32_t>(seed),
                                     static_cast<std::uint32_t>(seed >> 32));
  return static_cast<float>(r.v[0] >> 9) * 0x1.0p-23f;
}

// Exercises 5 (TODO d08.5: min-p and the draw) and 6 (TODO d08.6: the pivot search for
// top-k and top-p) — sampling without sorting (lesson §13): tokens[r] for every row as above.
// vocab <= kMaxVocab.
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 30;
void sample_1_pivot(const float* probs, std::int64_t batch, std::int64_t vocab,
                    const SamplingParams& params, std::uint64_t seed, std::uint64_t draw,
                    std::int32_t* tokens);

// Given (not an exercise): the same sampling by sorting every row with
// cub::DeviceSegmentedRadixSort::SortPairsDescending, then scanning the sorted row for the
// threshold (lesson §12.2): the baseline the benchmark compares with. In cub_baseline.cu, linked
// into the benchmark only.
void sample_0_sort(const float* probs, std::int64_t batch, std::int64_t vocab,
                   const SamplingParams& params, std::uint64_t seed, std::uint64_t draw,
                   std::int32_t* tokens);

}  // namespace d08
