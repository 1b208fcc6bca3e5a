// Day 8 — CUB, sampling and a caching memory pool. Part 1: the caching pool.
//
// The interface the tests and the benchmark call. A CachingPool hands out device memory the way
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

}  // namespace d08
