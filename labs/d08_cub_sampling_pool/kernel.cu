// Day 8 — your caching memory pool (part 1) and your scans and sampling kernels (part 2). Read
// lessons/d08_cub_sampling_pool.md first; README.md in this folder lists the steps. Replace
// each TODO block; keep lab.h's interface (the tests call it). The data structures below are a
// suggestion that the TODOs follow; you may change them. Check with:  course check d08
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cuda/atomic>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "course/check.h"
#include "course/warp.cuh"
#include "lab.h"

namespace d08 {

// ---------------------------------------------------------------------------------------------
// Given: the CUDA backend. Events are created per use and destroyed when released (a real
// allocator keeps a pool of them; creating one costs about a microsecond, paid only on the
// cross-stream path).
void* CudaDeviceMemory::allocate(std::size_t bytes) {
  void* ptr = nullptr;
  const cudaError_t err = cudaMalloc(&ptr, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // NOTE: clears the error, so that the next check does not see it
    return nullptr;
  }
  COURSE_CUDA_CHECK(err);
  return ptr;
}

void CudaDeviceMemory::free(void* ptr) { COURSE_CUDA_CHECK(cudaFree(ptr)); }

DeviceMemory::Event CudaDeviceMemory::record_event(cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  COURSE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  COURSE_CUDA_CHECK(cudaEventRecord(event, stream));
  return reinterpret_cast<Event>(event);
}

bool CudaDeviceMemory::event_completed(Event event) {
  const cudaError_t err = cudaEventQuery(reinterpret_cast<cudaEvent_t>(event));
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();  // "not ready" is an answer, not an error
    return false;
  }
  COURSE_CUDA_CHECK(err);
  return true;
}

void CudaDeviceMemory::release_event(Event event) {
  COURSE_CUDA_CHECK(cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event)));
}

DeviceMemory::Info CudaDeviceMemory::info() {
  Info info;
  COURSE_CUDA_CHECK(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
  return info;
}

// Given: fill_bytes, one thread per byte (a test helper, not an exercise).
constexpr int kFillThreads = 256;

__global__ void fill_bytes_kernel(std::uint8_t* __restrict__ p, std::int64_t n,
                                  std::uint8_t value) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value;
}

void fill_bytes(void* ptr, std::size_t bytes, std::uint8_t value, cudaStream_t stream) {
  if (bytes == 0) return;
  course::require(ptr != nullptr, "fill_bytes: ptr is null");
  const auto n = static_cast<std::int64_t>(bytes);
  const auto blocks = static_cast<unsigned>(course::ceil_div<std::int64_t>(n, kFillThreads));
  fill_bytes_kernel<<<blocks, kFillThreads, 0, stream>>>(static_cast<std::uint8_t*>(ptr), n, value);
  COURSE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Given: the pool's data structures (lesson §3). You may change them; the tests see only lab.h.
// A segment is a doubly linked list of blocks in address order (prev/next), which is what lets
// a freed block find its neighbours in O(1). Every block of a segment belongs to the stream
// the segment was allocated for.
struct Block {
  char* ptr = nullptr;
  std::size_t size = 0;
  cudaStream_t stream = nullptr;  // the stream that allocated the segment
  bool small = false;             // cut from a small segment
  bool allocated = false;
  Block* prev = nullptr;                    // the block just below in the segment, or null
  Block* next = nullptr;                    // the block just above, or null
  std::vector<cudaStream_t> stream_uses;    // other streams that use it (record_stream)
  std::vector<DeviceMemory::Event> events;  // pending: recorded when freed, not yet completed

  // INVARIANT: a block is cached (in a free list) exactly when this holds.
  bool cached() const { return !allocated && events.empty(); }
};

std::uintptr_t stream_key(cudaStream_t s) { return reinterpret_cast<std::uintptr_t>(s); }

// Free lists order blocks by stream, then size, then address: lower_bound({stream, size, 0})
// is the best fit on that stream, the lowest address among equal sizes.
struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return stream_key(a->stream) < stream_key(b->stream);
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};
using FreeList = std::set<Block*, BlockOrder>;

struct CachingPool::Impl {
  explicit Impl(DeviceMemory& b) : backend(b) {}

  DeviceMemory& backend;
  std::mutex mutex;  // held by every public member function, for its whole call
  FreeList small_free, large_free;
  std::unordered_map<void*, Block*> allocated;  // handed-out blocks, by pointer
  std::vector<Block*> pending;                  // freed, waiting for other streams' events
  PoolStats stats;  // the counters; fragmentation and largest_cached_block on demand

  FreeList& free_list(bool small) { return small ? small_free : large_free; }

  void* allocate(std::size_t bytes, cudaStream_t stream);
  Block* find_cached(bool small, cudaStream_t stream, std::size_t size);
  Block* new_segment(bool small, cudaStream_t stream, std::size_t bytes, std::size_t size);
  void split(Block* block, std::size_t size);
  void free(void* ptr);
  void cache(Block* block);
  void record_stream(void* ptr, cudaStream_t stream);
  void process_events();
  PoolStats snapshot();
  std::size_t release_cached_segments();
  std::string out_of_memory_message(std::size_t bytes, std::size_t segment);
  void take_from_cache(Block* block);
  void put_in_cache(Block* block);
};

CachingPool::CachingPool(DeviceMemory& backend) : impl_(std::make_unique<Impl>(backend)) {}

// Given: the destructor returns every segment and every event.
CachingPool::~CachingPool() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<Block*> blocks;
  for (auto& [ptr, block] : impl_->allocated) blocks.push_back(block);
  for (Block* block : impl_->pending) blocks.push_back(block);
  blocks.insert(blocks.end(), impl_->small_free.begin(), impl_->small_free.end());
  blocks.insert(blocks.end(), impl_->large_free.begin(), impl_->large_free.end());
  for (Block* block : blocks)
    for (DeviceMemory::Event event : block->events) impl_->backend.release_event(event);
  for (Block* block : blocks)
    if (block->prev == nullptr) impl_->backend.free(block->ptr);  // a segment's first block
  for (Block* block : blocks) delete block;
}

// Given: the free lists' bookkeeping, which keeps cached_bytes and cached_blocks true.
void CachingPool::Impl::take_from_cache(Block* block) {
  free_list(block->small).erase(block);
  stats.cached_bytes -= block->size;
  --stats.cached_blocks;
}

void CachingPool::Impl::put_in_cache(Block* block) {
  free_list(block->small).insert(block);
  stats.cached_bytes += block->size;
  ++stats.cached_blocks;
}

// ---------------------------------------------------------------------------------------------
// Step 1 — sizes (lesson §2).
std::size_t round_size(std::size_t bytes) {
  // TODO(d08.1a): round `bytes` up to a multiple of kMinBlockSize, as lab.h says (lesson §2).
  return 0;  // placeholder: no size yet
}

std::size_t segment_size(std::size_t size) {
  // TODO(d08.1a): kSmallSegmentSize for a small block (size <= kSmallSize), else size rounded
  // up to a multiple of kLargeSegmentRound (lesson §2).
  return 0;  // placeholder: no size yet
}

// ---------------------------------------------------------------------------------------------
// Steps 2 and 7 — allocate: best fit, else a new segment, else release the cache and
// retry, else out of memory (lesson §3, §6).
void* CachingPool::allocate(std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->allocate(bytes, stream);
}

void* CachingPool::Impl::allocate(std::size_t bytes, cudaStream_t stream) {
  // TODO(d08.1b): the allocation path (lesson §3). size = round_size(bytes), small = size <=
  // kSmallSize; process_events() first (a block other streams are done with is reusable);
  // block = find_cached(small, stream, size), taken out of its list with take_from_cache(),
  // or else new_segment(...); split(block, size); mark it allocated, put it in `allocated`,
  // and update stats.allocated_bytes (the block's full size), allocated_blocks and
  // peak_allocated_bytes. Return block->ptr.
  throw std::logic_error("TODO(d08.1b): CachingPool::allocate is not written yet (lesson 8 §3)");
}

Block* CachingPool::Impl::find_cached(bool small, cudaStream_t stream, std::size_t size) {
  // TODO(d08.1b): best fit among this stream's cached blocks of the pool (lesson §3.2): the
  // smallest block of `stream` with size >= `size`, the lowest address among equal sizes.
  // BlockOrder sorts the free lists by exactly that key: one lower_bound finds it.
  return nullptr;  // placeholder: nothing is ever reused
}

Block* CachingPool::Impl::new_segment(bool small, cudaStream_t stream, std::size_t bytes,
                                      std::size_t size) {
  // TODO(d08.1g): a new segment of segment_size(size) bytes from backend.allocate() (lesson
  // §6). When it returns nullptr, release_cached_segments() and try once more; when that fails
  // too, throw OutOfMemory(out_of_memory_message(bytes, segment)). Otherwise a new Block that
  // spans the segment (no neighbours); reserved_bytes and segments grow.
  throw std::logic_error("TODO(d08.1g): CachingPool has no new_segment yet (lesson 8 §6)");
}

std::string CachingPool::Impl::out_of_memory_message(std::size_t bytes, std::size_t segment) {
  // TODO(d08.1g): the message of OutOfMemory, word for word as lab.h writes it (lesson §6),
  // with backend.info() for the device's free and total bytes.
  return "TODO(d08.1g): the out-of-memory message";
}

// ---------------------------------------------------------------------------------------------
// Step 3 — splitting and coalescing (lesson §3.3).
void CachingPool::Impl::split(Block* block, std::size_t size) {
  // TODO(d08.1c): split `block` (in no list) into [size | rest] when the rest is worth keeping:
  // rest >= kMinBlockSize for a small block, rest > kSmallSize for a large one (lesson §3.3).
  // The rest is a new Block just above `block` in the segment's list (fix prev and next on
  // both sides), of the same stream and pool, and goes into the cache with put_in_cache().
  // placeholder: never splits (the whole block is handed out)
}

void CachingPool::free(void* ptr) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->free(ptr);
}

void CachingPool::Impl::free(void* ptr) {
  // TODO(d08.1c): take the block back (lesson §3.3, §4). Find it in `allocated` (throw
  // std::invalid_argument when it is not there), erase it, update allocated_bytes and
  // allocated_blocks. With no stream_uses: cache(block). Otherwise record one event per
  // stream in stream_uses (backend.record_event), clear stream_uses, add the block to
  // `pending` and its size to pending_bytes (step 4).
  throw std::logic_error("TODO(d08.1c): CachingPool::free is not written yet (lesson 8 §3.3)");
}

void CachingPool::Impl::cache(Block* block) {
  // TODO(d08.1c): merge `block` (free, in no list) with the neighbours prev and next when they
  // are cached (Block::cached()): take each out of its list, add its size, unlink and delete
  // it. Then put_in_cache() what is left (lesson §3.3).
  put_in_cache(block);  // placeholder: caches the block without merging
}

// ---------------------------------------------------------------------------------------------
// Step 4 — streams (lesson §4).
void CachingPool::record_stream(void* ptr, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->record_stream(ptr, stream);
}

void CachingPool::Impl::record_stream(void* ptr, cudaStream_t stream) {
  // TODO(d08.1d): find the block in `allocated` (std::invalid_argument if it is not there) and
  // add `stream` to its stream_uses, unless it is the block's own stream or already listed
  // (lesson §4).
  throw std::logic_error(
      "TODO(d08.1d): CachingPool::record_stream is not written yet (lesson 8 §4)");
}

void CachingPool::Impl::process_events() {
  // TODO(d08.1d): every pending block whose events have ALL completed
  // (backend.event_completed): release its events (backend.release_event), clear them,
  // subtract its size from pending_bytes and cache() it. The others stay pending (lesson §4.2).
  // placeholder: nothing pending is ever cached
}

// ---------------------------------------------------------------------------------------------
// Steps 5 and 6 — statistics and empty_cache (lesson §5).
PoolStats CachingPool::stats() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->snapshot();
}

void CachingPool::reset_peak() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->stats.peak_allocated_bytes = impl_->stats.allocated_bytes;
}

PoolStats CachingPool::Impl::snapshot() {
  // TODO(d08.1e): process_events(), then a copy of `stats` with largest_cached_block (the
  // largest block in either free list) and fragmentation = 1 - largest / cached_bytes (0 when
  // nothing is cached) filled in (lesson §5.1).
  return stats;  // placeholder: no largest block, no fragmentation
}

std::size_t CachingPool::empty_cache() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->process_events();
  return impl_->release_cached_segments();
}

std::size_t CachingPool::Impl::release_cached_segments() {
  // TODO(d08.1f): every cached block with no neighbours (prev and next null) is a whole segment:
  // take it from the cache, backend.free() it, update reserved_bytes and segments, delete it.
  // Return the bytes released (lesson §5.2).
  return 0;  // placeholder: releases nothing
}
// =============================================================================================
// Part 2 — CUB's block primitives and a device-wide scan (lesson §10, §11).
//
// Every scan kernel works on tiles of kScanTile = kScanThreads x kScanItems int32 elements: one
// block per tile, thread t holding the kScanItems consecutive elements t * kScanItems ... of its
// tile in registers ("blocked" arrangement). The sums are uint32, which wraps exactly like int32
// is asked to (signed overflow would be undefined behaviour in C++).
using ScanLoad =
    cub::BlockLoad<std::int32_t, kScanThreads, kScanItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
using ScanStore =
    cub::BlockStore<std::int32_t, kScanThreads, kScanItems, cub::BLOCK_STORE_WARP_TRANSPOSE>;
using ScanBlockScan = cub::BlockScan<std::uint32_t, kScanThreads>;
using ScanBlockReduce = cub::BlockReduce<std::uint32_t, kScanThreads>;

// One block's shared memory for any of the primitives above: they are used one after the
// other, with a barrier between, so they can share it (lesson §10.2).
union ScanTileStorage {
  ScanLoad::TempStorage load;
  ScanStore::TempStorage store;
  ScanBlockScan::TempStorage scan;
  ScanBlockReduce::TempStorage reduce;
};

// How many elements of tile `tile` exist (kScanTile except in the last tile).
__device__ __forceinline__ int tile_valid(std::int64_t tile, std::int64_t n) {
  const std::int64_t left = n - tile * kScanTile;
  return left < kScanTile ? static_cast<int>(left) : kScanTile;
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 — a tile with CUB's block primitives (lesson §10.2). load_and_scan_tile: the
// inclusive scan of tile `tile` of x into items (blocked), its total returned to every thread;
// store_tile: items + add written to the tile of y. Both end with the storage free for reuse.
__device__ __forceinline__ std::uint32_t load_and_scan_tile(const std::int32_t* __restrict__ x,
                                                            std::int64_t tile, int valid,
                                                            std::uint32_t (&items)[kScanItems],
                                                            ScanTileStorage& storage) {
  // TODO(d08.2): load the tile with ScanLoad (all kScanTile elements, or only `valid` with 0
  // past them), convert to uint32, InclusiveSum with ScanBlockScan into items, return the
  // total; a __syncthreads() before reusing `storage` for the next primitive (lesson §10.2).
  for (auto& v : items) v = 0;  // placeholder: no scan yet
  return 0;
}

__device__ __forceinline__ void store_tile(std::int32_t* __restrict__ y, std::int64_t tile,
                                           int valid, const std::uint32_t (&items)[kScanItems],
                                           std::uint32_t add, ScanTileStorage& storage) {
  // TODO(d08.2): items[j] + add as int32, stored with ScanStore (only `valid` elements in a
  // partial tile), then __syncthreads() (lesson §10.2).
  // placeholder: y is left untouched
}

// One block per tile: the tile's own scan and its total.
__global__ void __launch_bounds__(kScanThreads)
    scan_tiles_kernel(const std::int32_t* __restrict__ x, std::int32_t* __restrict__ y,
                      std::int32_t* __restrict__ tile_sums, std::int64_t n) {
  __shared__ ScanTileStorage storage;
  const std::int64_t tile = blockIdx.x;
  const int valid = tile_valid(tile, n);
  std::uint32_t items[kScanItems];
  const std::uint32_t total = load_and_scan_tile(x, tile, valid, items, storage);
  store_tile(y, tile, valid, items, 0, storage);
  if (threadIdx.x == 0) tile_sums[tile] = static_cast<std::int32_t>(total);
}

// ---------------------------------------------------------------------------------------------
// Exercise 3 — reduce-then-scan (lesson §11.2). Pass 1 reduces every tile to its total, pass 2
// (one block) scans the totals, pass 3 scans every tile again, starting from the totals of the
// tiles before it. x is read twice: 3 x 4n bytes in all.
__global__ void __launch_bounds__(kScanThreads)
    scan_1_reduce_kernel(const std::int32_t* __restrict__ x, std::int32_t* __restrict__ tile_sums,
                         std::int64_t n) {
  // TODO(d08.3): tile_sums[tile] = the sum of the tile (lesson §11.2): ScanLoad, each thread's
  // sum, ScanBlockReduce::Sum (valid in thread 0).
  // placeholder: no totals
}

// One block walks over the tile totals kScanTile at a time, carrying the sum so far:
// prefixes[t] = tile_sums[0] + ... + tile_sums[t] (inclusive).
__global__ void __launch_bounds__(kScanThreads)
    scan_1_spine_kernel(const std::int32_t* __restrict__ tile_sums,
                        std::int32_t* __restrict__ prefixes, std::int64_t tiles) {
  // TODO(d08.3): prefixes[t] = tile_sums[0] + ... + tile_sums[t] (lesson §11.2), kScanTile
  // totals at a time with load_and_scan_tile and store_tile, carrying the sum of the chunks
  // before.
  // placeholder: no prefixes
}

__global__ void __launch_bounds__(kScanThreads)
    scan_1_downsweep_kernel(const std::int32_t* __restrict__ x, std::int32_t* __restrict__ y,
                            const std::int32_t* __restrict__ prefixes, std::int64_t n) {
  // TODO(d08.3): scan the tile again and store it plus the total of the tiles before it,
  // prefixes[tile - 1] (0 for tile 0) (lesson §11.2).
  // placeholder: y is left untouched
}

// ---------------------------------------------------------------------------------------------
// Exercise 4 — one pass, decoupled look-back (lesson §11.3). Every tile publishes a 64-bit
// status word: the flag in the high half (X: nothing yet, A: the tile's own total, P: the
// inclusive prefix up to and including the tile), the value in the low half.
[[maybe_unused]] constexpr std::uint32_t kFlagX = 0, kFlagA = 1, kFlagP = 2;

__device__ __forceinline__ std::uint64_t pack_status(std::uint32_t flag, std::uint32_t value) {
  return static_cast<std::uint64_t>(flag) << 32 | value;
}
__device__ __forceinline__ std::uint32_t status_flag(std::uint64_t s) {
  return static_cast<std::uint32_t>(s >> 32);
}
__device__ __forceinline__ std::uint32_t status_value(std::uint64_t s) {
  return static_cast<std::uint32_t>(s);
}

// NOTE: relaxed atomics are enough here, and not by luck. The flag and the value travel in ONE
// aligned 64-bit word, written and read with single 64-bit atomic accesses (ST/LD.STRONG.GPU),
// so a reader that sees the flag sees the value stored with it (single-copy atomicity), and the
// look-back reads nothing else that the publishing tile wrote. Were the value in a separate
// word, the writer would need a release (or __threadfence() between the two stores) and the
// reader an acquire. The spin loop needs the atomic (or volatile) load: a plain load may be
// hoisted out of the loop and spin forever on a stale register (lesson §11.4).
__device__ __forceinline__ void publish(unsigned long long* status, std::int64_t tile,
                                        std::uint32_t flag, std::uint32_t value) {
  // TODO(d08.4): one 64-bit atomic store of pack_status(flag, value) into status[tile], with
  // cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> (lesson §11.4).
  // placeholder: publishes nothing
}
__device__ __forceinline__ std::uint64_t read_status(unsigned long long* status,
                                                     std::int64_t tile) {
  // TODO(d08.4): one 64-bit atomic load of status[tile] (lesson §11.4). A plain load can be
  // hoisted out of the look-back's spin loop.
  return pack_status(kFlagP, 0);  // placeholder
}

// Warp 0 of tile `tile` (> 0) looks back 32 predecessors at a time: lane l waits until tile
// end - 1 - l has published something, then the warp adds the values from the nearest tile up
// to and including the first P it finds; with no P among them (all A), it adds all 32 and moves
// 32 tiles further back. Tile 0 always publishes P, so the walk ends.
__device__ std::uint32_t look_back(unsigned long long* status, std::int64_t tile) {
  // TODO(d08.4): lane l waits (spins on read_status) until tile end - 1 - l has published A or
  // P, the warp finds the nearest P with __ballot_sync, adds the values of the tiles up to it
  // (__reduce_add_sync), or of all 32 and goes 32 tiles further back (lesson §11.3).
  return 0;  // placeholder: no prefix
}

// Tiles are numbered by an atomic ticket, not by blockIdx.x: the hardware may start block 9
// before block 3, and a tile must only wait for tiles that are already running (they took
// their tickets earlier), or the look-back could wait for a block that cannot start.
__global__ void __launch_bounds__(kScanThreads)
    scan_2_decoupled_lookback_kernel(const std::int32_t* __restrict__ x,
                                     std::int32_t* __restrict__ y, std::int64_t n,
                                     unsigned long long* __restrict__ ticket,
                                     unsigned long long* __restrict__ status) {
  // TODO(d08.4): the tile number from atomicAdd(ticket, 1) (by thread 0, shared through
  // shared memory), load_and_scan_tile, then warp 0: tile 0 publishes P (its total), any other
  // publishes A (its total), looks back for its prefix and publishes P (prefix + total); the
  // prefix goes to shared memory and every thread stores its items plus it (lesson §11.3).
  // placeholder: y is left untouched
}

// ---------------------------------------------------------------------------------------------
// Sampling (lesson §12-§14). One block of kSampleThreads per row; the row stays in L2 between
// the passes (a 128k-token row is 512 KiB, a batch of 64 rows 32 MiB). The threshold first
// (min-p: one max; top-k and top-p: the pivot search), then two passes of the draw.
constexpr int kSampleThreads = 512;
constexpr int kSampleItems = 16;  // consecutive elements per thread per chunk of the draw
[[maybe_unused]] constexpr int kSampleChunk = kSampleThreads * kSampleItems;
constexpr int kRadixBits = 8;  // the pivot search decides 8 bits of the threshold per pass
constexpr int kRadixBins = 1 << kRadixBits;
static_assert(32 % kRadixBits == 0 && kRadixBins <= kSampleThreads,
              "one thread per bin, whole passes over the 32 bits of a float");
// Top-p's weights in fixed point: p * 2^40, rounded to an integer. Integer sums are exact and
// do not depend on the order of the atomics, so the threshold is the same on every run; a row
// adding up to ~1 stays far below 2^64, and each rounding is at most 2^-41.
constexpr double kMassScale = 1099511627776.0;  // 2^40

struct MaxOp {
  __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};
struct MinOp {
  __device__ int operator()(int a, int b) const { return a < b ? a : b; }
};

using SampleReduceFloat = cub::BlockReduce<float, kSampleThreads>;
using SampleReduceInt = cub::BlockReduce<int, kSampleThreads>;
using SampleScanFloat = cub::BlockScan<float, kSampleThreads>;
using SampleScanWeight = cub::BlockScan<unsigned long long, kSampleThreads>;

struct SampleStorage {
  union {
    SampleReduceFloat::TempStorage reduce_float;
    SampleReduceInt::TempStorage reduce_int;
    SampleScanFloat::TempStorage scan_float;
    SampleScanWeight::TempStorage scan_weight;
  };
  unsigned bin_lo[kRadixBins];  // a bin's weight, low and high 32 bits (native 32-bit atomics)
  unsigned bin_hi[kRadixBins];
  std::uint32_t prefix;       // the bits of the threshold decided so far
  unsigned long long target;  // the weight still to reach below them
  int found;
  float value;  // a float broadcast to the block
  int token;
};

// ---------------------------------------------------------------------------------------------
// Exercise 5 — min-p and the draw (lesson §13.1, §13.3).
__device__ float row_max(const float* __restrict__ row, std::int64_t vocab,
                         SampleStorage& storage) {
  // TODO(d08.5): the largest probability of the row: each thread's maximum over a strided
  // loop, SampleReduceFloat with MaxOp (valid in thread 0), broadcast through storage.value
  // (lesson §13.1).
  return 0.0f;  // placeholder
}

// One pass over the row in chunks of kSampleChunk, thread t holding elements t * kSampleItems
// ... of the chunk: the running sum of the allowed probabilities (p >= t) in vocabulary order.
// With `target` < 0 it returns the total M (as a float); otherwise the first token whose
// running sum exceeds `target` (else the last allowed token with p > 0). Both passes add the
// same numbers in the same order, so the running sums of the second are those the first added.
__device__ float allowed_running_sum(const float* __restrict__ row, std::int64_t vocab,
                                     float threshold, float target, int* token,
                                     SampleStorage& storage) {
  // TODO(d08.5): the running sum of the allowed probabilities (p >= threshold), in chunks of
  // kSampleChunk, thread t holding kSampleItems consecutive elements (lesson §13.3):
  // SampleScanFloat::ExclusiveSum of each thread's sum gives where its running sum starts.
  // With target < 0 return the total; otherwise set *token to the first index whose running
  // sum exceeds target (SampleReduceInt with MinOp over the threads' candidates), else to the
  // last allowed index with p > 0.
  *token = -1;  // placeholder: no token
  return 0.0f;
}

// The draw of lab.h: M, then the first token whose running sum exceeds u * M.
__device__ int draw_token(const float* __restrict__ row, std::int64_t vocab, float threshold,
                          float u, SampleStorage& storage) {
  // TODO(d08.5): M = allowed_running_sum(..., -1.0f, ...), then the token of
  // allowed_running_sum(..., __fmul_rn(u, M), ...) (lesson §13.3).
  return -1;  // placeholder: no token drawn
}

// ---------------------------------------------------------------------------------------------
// Exercise 6 — the pivot search for top-k and top-p, without sorting (lesson §13.2). For
// p >= 0 the float's bits, read as an unsigned integer, sort like the float. So the threshold
// is found 8 bits at a time, from the top, like one digit of a radix sort: a histogram of the
// next 8 bits among the elements that share the bits decided so far, weighted by 1 (top-k:
// counts) or by p (top-p: mass), then a scan of the 256 bins from the largest down finds the
// bin where the weight above reaches `target`. Four passes over the row, none of them a sort.
// Returns the threshold, or 0 (keep everything) when the whole row weighs less than `target`.
__device__ float pivot_search(const float* __restrict__ row, std::int64_t vocab, bool by_mass,
                              unsigned long long target, SampleStorage& storage) {
  // TODO(d08.6): the threshold 8 bits at a time from the top (lesson §13.2): per pass, a
  // shared histogram (bin_lo / bin_hi, 32-bit atomics with the carry) of the next 8 bits of
  // the elements that share the bits decided so far, weighted by 1 or by p * kMassScale; an
  // inclusive scan of the bins from the largest down (thread j holds bin 255 - j); the bin
  // where the weight reaches target extends the prefix, target -= the weight above it.
  // Return 0 when the whole row weighs less than target.
  return 0.0f;  // placeholder: keeps every token
}

// One block per row: the threshold of the filter, then the draw.
__global__ void __launch_bounds__(kSampleThreads)
    sample_1_pivot_kernel(const float* __restrict__ probs, std::int64_t vocab,
                          SamplingParams params, unsigned long long top_p_target,
                          std::uint64_t seed, std::uint64_t draw,
                          std::int32_t* __restrict__ tokens) {
  __shared__ SampleStorage storage;
  const std::int64_t r = blockIdx.x;
  const float* row = probs + r * vocab;
  float threshold = 0.0f;
  switch (params.filter) {
    case Filter::kMinP:
      threshold = __fmul_rn(params.min_p, row_max(row, vocab, storage));
      break;
    case Filter::kTopK:
      if (params.top_k < vocab)
        threshold =
            pivot_search(row, vocab, false, static_cast<unsigned long long>(params.top_k), storage);
      break;
    case Filter::kTopP:
      threshold = pivot_search(row, vocab, true, top_p_target, storage);
      break;
  }
  const float u = sampling_uniform(seed, static_cast<std::uint64_t>(r), draw);
  const int token = draw_token(row, vocab, threshold, u, storage);
  if (threadIdx.x == 0) tokens[r] = token;
}

// ---------------------------------------------------------------------------------------------
// Part 2 launchers.
namespace {
// Tiles of n elements, checked to fit a grid.
std::int64_t scan_tiles_of(std::int64_t n, const char* function) {
  const std::int64_t tiles = course::ceil_div<std::int64_t>(n, kScanTile);
  course::require(tiles <= std::numeric_limits<int>::max(),
                  std::string(function) + ": n is too large for one grid of tiles");
  return tiles;
}

void check_scan(const std::int32_t* x, const std::int32_t* y, std::int64_t n, const void* temp,
                std::size_t temp_bytes, const char* function) {
  const std::string f(function);
  course::require(n >= 0, f + ": n must be >= 0");
  if (n == 0) return;
  course::require(x != nullptr && y != nullptr && temp != nullptr, f + ": null pointer");
  course::require(temp_bytes >= scan_temp_bytes(n),
                  f + ": temp_bytes is smaller than scan_temp_bytes(n)");
  course::require(course::is_aligned(temp, 8), f + ": temp must be 8-byte aligned");
}
}  // namespace

void scan_tiles(const std::int32_t* x, std::int32_t* y, std::int32_t* tile_sums, std::int64_t n) {
  course::require(n >= 0, "scan_tiles: n must be >= 0");
  if (n == 0) return;
  course::require(x != nullptr && y != nullptr && tile_sums != nullptr, "scan_tiles: null pointer");
  const std::int64_t tiles = scan_tiles_of(n, "scan_tiles");
  scan_tiles_kernel<<<static_cast<unsigned>(tiles), kScanThreads>>>(x, y, tile_sums, n);
  COURSE_LAUNCH_CHECK();
}

// Given: scan_1 keeps the tile totals and their inclusive prefixes (4 bytes each per tile),
// scan_2 a ticket and one 8-byte status word per tile.
std::size_t scan_temp_bytes(std::int64_t n) {
  const std::int64_t tiles = n > 0 ? course::ceil_div<std::int64_t>(n, kScanTile) : 0;
  return static_cast<std::size_t>(8 * (tiles + 1));
}

void scan_1_reduce_then_scan(const std::int32_t* x, std::int32_t* y, std::int64_t n, void* temp,
                             std::size_t temp_bytes) {
  check_scan(x, y, n, temp, temp_bytes, "scan_1_reduce_then_scan");
  if (n == 0) return;
  const std::int64_t tiles = scan_tiles_of(n, "scan_1_reduce_then_scan");
  auto* tile_sums = static_cast<std::int32_t*>(temp);
  std::int32_t* prefixes = tile_sums + tiles;
  scan_1_reduce_kernel<<<static_cast<unsigned>(tiles), kScanThreads>>>(x, tile_sums, n);
  COURSE_LAUNCH_CHECK();
  scan_1_spine_kernel<<<1, kScanThreads>>>(tile_sums, prefixes, tiles);
  COURSE_LAUNCH_CHECK();
  scan_1_downsweep_kernel<<<static_cast<unsigned>(tiles), kScanThreads>>>(x, y, prefixes, n);
  COURSE_LAUNCH_CHECK();
}

void scan_2_decoupled_lookback(const std::int32_t* x, std::int32_t* y, std::int64_t n, void* temp,
                               std::size_t temp_bytes) {
  check_scan(x, y, n, temp, temp_bytes, "scan_2_decoupled_lookback");
  if (n == 0) return;
  const std::int64_t tiles = scan_tiles_of(n, "scan_2_decoupled_lookback");
  // Every status starts at X (0) and the ticket at 0: the memset is queued before the kernel,
  // so the kernel sees it done (stream order).
  auto* ticket = static_cast<unsigned long long*>(temp);
  COURSE_CUDA_CHECK(cudaMemsetAsync(temp, 0, scan_temp_bytes(n)));
  scan_2_decoupled_lookback_kernel<<<static_cast<unsigned>(tiles), kScanThreads>>>(x, y, n, ticket,
                                                                                   ticket + 1);
  COURSE_LAUNCH_CHECK();
}

void sample_1_pivot(const float* probs, std::int64_t batch, std::int64_t vocab,
                    const SamplingParams& params, std::uint64_t seed, std::uint64_t draw,
                    std::int32_t* tokens) {
  course::require(batch >= 0 && batch <= std::numeric_limits<int>::max(),
                  "sample_1_pivot: batch must be in [0, 2^31)");
  course::require(vocab >= 1 && vocab <= kMaxVocab, "sample_1_pivot: vocab must be in [1, 2^30]");
  course::require(params.filter != Filter::kTopK || params.top_k >= 1,
                  "sample_1_pivot: top_k must be >= 1");
  course::require(params.filter != Filter::kTopP || (params.top_p > 0.0f && params.top_p <= 1.0f),
                  "sample_1_pivot: top_p must be in (0, 1]");
  course::require(params.filter != Filter::kMinP || (params.min_p >= 0.0f && params.min_p <= 1.0f),
                  "sample_1_pivot: min_p must be in [0, 1]");
  if (batch == 0) return;
  course::require(probs != nullptr && tokens != nullptr, "sample_1_pivot: null pointer");
  const auto top_p_target =
      static_cast<unsigned long long>(std::llround(static_cast<double>(params.top_p) * kMassScale));
  sample_1_pivot_kernel<<<static_cast<unsigned>(batch), kSampleThreads>>>(
      probs, vocab, params, top_p_target, seed, draw, tokens);
  COURSE_LAUNCH_CHECK();
}

}  // namespace d08
