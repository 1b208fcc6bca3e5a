// Day 8, part 1 — your caching memory pool. Read lessons/d08_cub_sampling_pool.md first;
// README.md in this folder lists the steps. Replace each TODO block; keep lab.h's interface
// (the tests call it). The data structures below are a suggestion that the TODOs follow; you
// may change them. Check with:  course check d08
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "course/check.h"
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
  // TODO(d08.1): round `bytes` up to a multiple of kMinBlockSize, as lab.h says (lesson §2).
  return 0;  // placeholder: no size yet
}

std::size_t segment_size(std::size_t size) {
  // TODO(d08.1): kSmallSegmentSize for a small block (size <= kSmallSize), else size rounded
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
  // TODO(d08.2): the allocation path (lesson §3). size = round_size(bytes), small = size <=
  // kSmallSize; process_events() first (a block other streams are done with is reusable);
  // block = find_cached(small, stream, size), taken out of its list with take_from_cache(),
  // or else new_segment(...); split(block, size); mark it allocated, put it in `allocated`,
  // and update stats.allocated_bytes (the block's full size), allocated_blocks and
  // peak_allocated_bytes. Return block->ptr.
  throw std::logic_error("TODO(d08.2): CachingPool::allocate is not written yet (lesson 8 §3)");
}

Block* CachingPool::Impl::find_cached(bool small, cudaStream_t stream, std::size_t size) {
  // TODO(d08.2): best fit among this stream's cached blocks of the pool (lesson §3.2): the
  // smallest block of `stream` with size >= `size`, the lowest address among equal sizes.
  // BlockOrder sorts the free lists by exactly that key: one lower_bound finds it.
  return nullptr;  // placeholder: nothing is ever reused
}

Block* CachingPool::Impl::new_segment(bool small, cudaStream_t stream, std::size_t bytes,
                                      std::size_t size) {
  // TODO(d08.7): a new segment of segment_size(size) bytes from backend.allocate() (lesson
  // §6). When it returns nullptr, release_cached_segments() and try once more; when that fails
  // too, throw OutOfMemory(out_of_memory_message(bytes, segment)). Otherwise a new Block that
  // spans the segment (no neighbours); reserved_bytes and segments grow.
  throw std::logic_error("TODO(d08.7): CachingPool has no new_segment yet (lesson 8 §6)");
}

std::string CachingPool::Impl::out_of_memory_message(std::size_t bytes, std::size_t segment) {
  // TODO(d08.7): the message of OutOfMemory, word for word as lab.h writes it (lesson §6),
  // with backend.info() for the device's free and total bytes.
  return "TODO(d08.7): the out-of-memory message";
}

// ---------------------------------------------------------------------------------------------
// Step 3 — splitting and coalescing (lesson §3.3).
void CachingPool::Impl::split(Block* block, std::size_t size) {
  // TODO(d08.3): split `block` (in no list) into [size | rest] when the rest is worth keeping:
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
  // TODO(d08.3): take the block back (lesson §3.3, §4). Find it in `allocated` (throw
  // std::invalid_argument when it is not there), erase it, update allocated_bytes and
  // allocated_blocks. With no stream_uses: cache(block). Otherwise record one event per
  // stream in stream_uses (backend.record_event), clear stream_uses, add the block to
  // `pending` and its size to pending_bytes (step 4).
  throw std::logic_error("TODO(d08.3): CachingPool::free is not written yet (lesson 8 §3.3)");
}

void CachingPool::Impl::cache(Block* block) {
  // TODO(d08.3): merge `block` (free, in no list) with the neighbours prev and next when they
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
  // TODO(d08.4): find the block in `allocated` (std::invalid_argument if it is not there) and
  // add `stream` to its stream_uses, unless it is the block's own stream or already listed
  // (lesson §4).
  throw std::logic_error(
      "TODO(d08.4): CachingPool::record_stream is not written yet (lesson 8 §4)");
}

void CachingPool::Impl::process_events() {
  // TODO(d08.4): every pending block whose events have ALL completed
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
  // TODO(d08.5): process_events(), then a copy of `stats` with largest_cached_block (the
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
  // TODO(d08.6): every cached block with no neighbours (prev and next null) is a whole segment:
  // take it from the cache, backend.free() it, update reserved_bytes and segments, delete it.
  // Return the bytes released (lesson §5.2).
  return 0;  // placeholder: releases nothing
}

}  // namespace d08
