// Day 8, part 1 — reference solution: a caching device memory pool (lesson 8 §1-§6).
// One mutex guards everything; blocks are cut from segments, kept in per-pool free lists
// ordered by (stream, size, address) so that best fit is one lower_bound, and merged with
// their cached neighbours when they come back.
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
  // Rounding to 512 bytes keeps every block 512-byte aligned (segments are) and makes blocks
  // of nearly equal requests interchangeable, so a freed block fits the next request.
  if (bytes == 0) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

std::size_t segment_size(std::size_t size) {
  // Small blocks share 2 MiB segments (one cudaMalloc serves thousands of small tensors); a
  // large block gets a segment of its own, rounded to 2 MiB so that it can be reused for a
  // slightly larger request later.
  if (size <= kSmallSize) return kSmallSegmentSize;
  return (size + kLargeSegmentRound - 1) / kLargeSegmentRound * kLargeSegmentRound;
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
  // Events first: a block another stream has finished with is as good as any cached block.
  const std::size_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  process_events();
  Block* block = find_cached(small, stream, size);
  if (block != nullptr) {
    take_from_cache(block);
  } else {
    block = new_segment(small, stream, bytes, size);
  }
  split(block, size);
  block->allocated = true;
  allocated.emplace(block->ptr, block);
  stats.allocated_bytes += block->size;
  ++stats.allocated_blocks;
  stats.peak_allocated_bytes = std::max(stats.peak_allocated_bytes, stats.allocated_bytes);
  return block->ptr;
}

Block* CachingPool::Impl::find_cached(bool small, cudaStream_t stream, std::size_t size) {
  // The key {stream, size, null} sorts before every block of that stream and size, so
  // lower_bound lands on the smallest block >= size (the lowest address among equals); if
  // that block belongs to another stream, this stream has none large enough.
  Block key;
  key.stream = stream;
  key.size = size;
  FreeList& list = free_list(small);
  const auto it = list.lower_bound(&key);
  if (it == list.end() || (*it)->stream != stream) return nullptr;
  return *it;
}

Block* CachingPool::Impl::new_segment(bool small, cudaStream_t stream, std::size_t bytes,
                                      std::size_t size) {
  // Cached segments are memory nobody uses: giving them back can make room for the request,
  // and costs only future cudaMallocs. One retry, not a loop: after it nothing else can change.
  const std::size_t segment = segment_size(size);
  void* ptr = backend.allocate(segment);
  if (ptr == nullptr) {
    release_cached_segments();
    ptr = backend.allocate(segment);
  }
  if (ptr == nullptr) throw OutOfMemory(out_of_memory_message(bytes, segment));
  Block* block = new Block;
  block->ptr = static_cast<char*>(ptr);
  block->size = segment;
  block->stream = stream;
  block->small = small;
  stats.reserved_bytes += segment;
  ++stats.segments;
  return block;
}

std::string CachingPool::Impl::out_of_memory_message(std::size_t bytes, std::size_t segment) {
  // Everything a reader needs to tell "the model does not fit" (allocated near the total) from
  // "the cache is fragmented" (much cached) from "another process holds it" (little free).
  const DeviceMemory::Info info = backend.info();
  std::ostringstream msg;
  msg << "CachingPool: out of memory: tried to allocate " << bytes << " bytes (a " << segment
      << "-byte segment); the pool has " << stats.reserved_bytes << " bytes reserved ("
      << stats.allocated_bytes << " allocated, " << stats.pending_bytes << " pending, "
      << stats.cached_bytes << " cached); the device has " << info.free_bytes << " of "
      << info.total_bytes << " bytes free";
  return msg.str();
}

// ---------------------------------------------------------------------------------------------
// Step 3 — splitting and coalescing (lesson §3.3).
void CachingPool::Impl::split(Block* block, std::size_t size) {
  // A large remainder of 1 MiB or less is not split off: it could only serve a large request,
  // which it is too small for, so it would sit in the cache as dust.
  const std::size_t rest = block->size - size;
  const bool worth_it = block->small ? rest >= kMinBlockSize : rest > kSmallSize;
  if (!worth_it) return;
  Block* remainder = new Block;
  remainder->ptr = block->ptr + size;
  remainder->size = rest;
  remainder->stream = block->stream;
  remainder->small = block->small;
  remainder->prev = block;
  remainder->next = block->next;
  if (block->next != nullptr) block->next->prev = remainder;
  block->next = remainder;
  block->size = size;
  put_in_cache(remainder);
}

void CachingPool::free(void* ptr) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->free(ptr);
}

void CachingPool::Impl::free(void* ptr) {
  // A block another stream still uses waits for events recorded on those streams NOW: they
  // complete once everything queued on them so far (the work that reads this block) has run.
  const auto it = allocated.find(ptr);
  if (it == allocated.end())
    throw std::invalid_argument(
        "CachingPool::free: this pointer was not handed out by the pool, or was freed twice");
  Block* block = it->second;
  allocated.erase(it);
  block->allocated = false;
  stats.allocated_bytes -= block->size;
  --stats.allocated_blocks;
  if (block->stream_uses.empty()) {
    cache(block);
    return;
  }
  for (cudaStream_t s : block->stream_uses) block->events.push_back(backend.record_event(s));
  block->stream_uses.clear();
  pending.push_back(block);
  stats.pending_bytes += block->size;
}

void CachingPool::Impl::cache(Block* block) {
  // Without merging, a segment cut into pieces stays in pieces forever: a 1 MiB request would
  // never fit again in 1 MiB of freed 512-byte blocks.
  if (Block* prev = block->prev; prev != nullptr && prev->cached()) {
    take_from_cache(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next != nullptr) block->next->prev = prev;
    delete block;
    block = prev;
  }
  if (Block* next = block->next; next != nullptr && next->cached()) {
    take_from_cache(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next != nullptr) next->next->prev = block;
    delete next;
  }
  put_in_cache(block);
}

// ---------------------------------------------------------------------------------------------
// Step 4 — streams (lesson §4).
void CachingPool::record_stream(void* ptr, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->record_stream(ptr, stream);
}

void CachingPool::Impl::record_stream(void* ptr, cudaStream_t stream) {
  // The block's own stream needs no event: whatever it queues after the free runs after the
  // work queued before it.
  const auto it = allocated.find(ptr);
  if (it == allocated.end())
    throw std::invalid_argument("CachingPool::record_stream: this pointer is not allocated");
  Block* block = it->second;
  if (stream == block->stream) return;
  if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) ==
      block->stream_uses.end())
    block->stream_uses.push_back(stream);
}

void CachingPool::Impl::process_events() {
  // All events, not the first: the block is free only when every stream is done with it.
  std::vector<Block*> still_pending;
  for (Block* block : pending) {
    const bool done =
        std::all_of(block->events.begin(), block->events.end(),
                    [&](DeviceMemory::Event e) { return backend.event_completed(e); });
    if (!done) {
      still_pending.push_back(block);
      continue;
    }
    for (DeviceMemory::Event event : block->events) backend.release_event(event);
    block->events.clear();
    stats.pending_bytes -= block->size;
    cache(block);
  }
  pending.swap(still_pending);
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
  // The counters are kept up to date on the way; the largest cached block is looked for
  // here, as only stats() needs it.
  process_events();
  PoolStats s = stats;
  s.largest_cached_block = 0;
  for (const FreeList* list : {&small_free, &large_free})
    for (const Block* block : *list)
      s.largest_cached_block = std::max(s.largest_cached_block, block->size);
  s.fragmentation = s.cached_bytes == 0 ? 0.0
                                        : 1.0 - static_cast<double>(s.largest_cached_block) /
                                                    static_cast<double>(s.cached_bytes);
  return s;
}

std::size_t CachingPool::empty_cache() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->process_events();
  return impl_->release_cached_segments();
}

std::size_t CachingPool::Impl::release_cached_segments() {
  // Coalescing made this test cheap: a wholly free segment is one block with no neighbours.
  std::vector<Block*> whole;
  for (FreeList* list : {&small_free, &large_free})
    for (Block* block : *list)
      if (block->prev == nullptr && block->next == nullptr) whole.push_back(block);
  std::size_t released = 0;
  for (Block* block : whole) {
    take_from_cache(block);
    backend.free(block->ptr);
    stats.reserved_bytes -= block->size;
    --stats.segments;
    released += block->size;
    delete block;
  }
  return released;
}

}  // namespace d08
