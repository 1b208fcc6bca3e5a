// Honest GPU timing for Google Benchmark.
//
// A kernel launch returns before the kernel runs, so a host clock around it measures the
// launch, not the work. course::bench::measure() times each iteration with CUDA events
// recorded on the stream, after a warm-up, with the L2 cache flushed so that no iteration
// finds its inputs in cache, and with every byte the work writes counted (lesson 1, §5.5):
//
//   flush(B)  | start | flush(A) | mid | work, flush(B) | stop
//              <-- the flush alone --> <-- work + writing back its dirty lines -->
//
//   time = (stop - mid) - (mid - start)
//
// A flush READS a scratch buffer twice the size of the L2, so afterwards the L2 holds only
// clean lines of that buffer. The work therefore starts on a cold, clean L2 (it pays for no
// one else's writes, which a memset-based flush would leave dirty for it to write back), and
// the flush after it writes back what the work left dirty in the L2 (output that has not
// reached DRAM yet when the kernel ends), so those bytes are paid for too. The flush's own cost
// is measured in the same iteration and subtracted. The work is queued behind a running flush,
// so the host's launch latency is never inside the measurement.
//
// Each such iteration is one sample (SamplePlan says how many); the MEDIAN sample, which a
// stray slow one cannot move, is the row's time for Google Benchmark (manual time) and the
// counters come from it:
//   median_us   the median time of one sample, in microseconds
//   samples     how many samples were taken
//   GB/s        traffic.bytes / median time (1e9 bytes per second)
//   %copy       GB/s as a percentage of this GPU's measured copy ceiling (device.h)
//   TFLOP/s     traffic.flops / median time, when flops are given
//   spread_%    (p90 - p10) / median: how noisy the measurement was (the subtraction adds
//               about 2-3 us of jitter, which matters only to the shortest kernels)
//   floor_us    the physical floor, in microseconds: the larger of traffic.bytes / (kFloorMargin
//               = 1.25 x the measured copy ceiling) and traffic.flops / (kComputeMargin = 1.1 x
//               the card's peak rate for traffic.math, device.h). No kernel moves its bytes
//               faster than the device's copy rate (a read-only kernel legitimately reaches
//               ~103% of a read + write copy's rate, hence the margin), nor computes faster
//               than its tensor cores or CUDA cores can. A median below the floor is reported
//               as an error ("impossible time"), never as a speed: the work was not done on
//               every call (skipped, cached, or a launch that failed silently), or the timing
//               is broken. The grader judges a student's times against the REFERENCE
//               program's floor_us, never the student's (tools/course/grade.py).
//   recheck     1 when the outputs of TIMED iterations were compared with the reference and
//               matched (measure() with a Recheck); absent when there was no re-check. A wrong
//               timed output is reported as an error, never as a speed.
// Register every GPU benchmark through course::bench::configure(), which sets manual time.
//
// Why re-check: the check before timing sees only the first call. A kernel that computes the
// right answer once and then does nothing (or something cheaper and wrong) on the later calls
// would be timed doing nothing. So measure() poisons the outputs before EVERY timed call (so
// that no call can be told from another by what it finds in its output) and compares the
// output of timed calls chosen at random, after they ran, kAuditsPerRow of them on average
// over the whole loop: a kernel that skips its work on some calls is caught with a
// probability that grows with how many it skips, and one that skips enough of them to move
// the median (more than half) is caught in all but about e^-(kAuditsPerRow / 2) of the rows.
// A kernel that caches its result and copies it back is faster than the floor above on any
// operation where copying the result is cheaper than computing it.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/compare.h"
#include "course/device.h"

namespace course::bench {

// The fewest bytes the operation must move through DRAM (each input read once, each output
// written once), the floating-point operations it must do, and on what (the compute floor).
struct Traffic {
  double bytes = 0.0;
  double flops = 0.0;
  Math math = Math::kAny;
};

// Empties the L2 of everything useful by reading scratch buffer `which` (0 or 1), twice the
// size of the L2: afterwards every line the L2 holds is a clean line of that buffer, and every
// dirty line it held before has been written back to DRAM. Reading the other buffer next
// time guarantees that flush misses in L2 as well.
class L2Flusher {
 public:
  L2Flusher();
  void flush(int which, cudaStream_t stream = nullptr);

 private:
  DeviceBuffer<char> scratch_[2];
  DeviceBuffer<float> sink_;
  int grid_ = 0;
};

// The flush's kernel (l2_flush.cu): reads `bytes` of `scratch` with `grid` blocks, writes
// nothing unless the scratch holds a value it never does.
void read_through_l2(const void* scratch, std::size_t bytes, float* sink, int grid,
                     cudaStream_t stream);

// One iteration of the bracket above: time(work) returns the seconds `work` took, flushes
// subtracted. Negative or zero for work shorter than the flushes' jitter (a few us): keep
// such samples for the median rather than clamping them, which would bias it upward.
class BracketedTimer {
 public:
  explicit BracketedTimer(cudaStream_t stream = nullptr);
  ~BracketedTimer();
  BracketedTimer(const BracketedTimer&) = delete;
  BracketedTimer& operator=(const BracketedTimer&) = delete;

  double time(const std::function<void()>& work);
  // The flush alone (start to mid) in the last time() call, in seconds.
  double last_flush_seconds() const { return last_flush_seconds_; }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, mid_ = nullptr, stop_ = nullptr;
  double last_flush_seconds_ = 0.0;
};

// The p-quantile (0 <= p <= 1) of `v`, by rank: the lower of the two middle values for the
// median of an even count. `v` must not be empty.
double percentile(std::vector<double> v, double p);

// No kernel moves bytes faster than this multiple of the measured copy ceiling (floor_us) ...
constexpr double kFloorMargin = 1.25;
// ... nor computes faster than this multiple of the card's peak rate (a clock above the one the
// card reports).
constexpr double kComputeMargin = 1.1;
// How many timed calls of a row measure() checks, on average (see "Why re-check").
constexpr double kAuditsPerRow = 8.0;

// The floor of `traffic` on this GPU in seconds (floor_us above); 0 when it has neither bytes
// nor flops.
double floor_seconds(const Traffic& traffic);

// The re-check of timed outputs (see "Why re-check" above).
struct Recheck {
  // Run before EVERY timed iteration, outside its bracket (before the flush that precedes
  // `start`), so its own writes are never timed. It poisons every output (DeviceBuffer::poison(),
  // a fill on the GPU), so that an output a timed call leaves untouched fails the check; where
  // the work is in place (the output is also an input, as SAXPY's y), it restores the input
  // (from a device copy: it runs hundreds of times), so that one application of the work gives
  // the reference's output. Any scratch the work reads back (an intermediate buffer) is
  // poisoned too.
  std::function<void()> poison;
  // Downloads the output(s) and compares them with the reference: the very check made before
  // timing (one lambda, used for both).
  std::function<Comparison()> check;
};

// Times `work` (which enqueues GPU work on `stream`) with a BracketedTimer, as many samples as
// SamplePlan asks in each Google Benchmark iteration, and sets the counters above (all but
// recheck).
void measure(benchmark::State& state, const std::function<void()>& work, Traffic traffic,
             cudaStream_t stream = nullptr);
// The same, with recheck.poison() before every timed call and recheck.check() after the
// audited ones (chosen at random, "Why re-check"). A failed check is reported as an error
// ("the timed output is wrong (re-checked after timing): ..."); when every audit passed the
// counter recheck = 1 (and audits = how many there were).
void measure(benchmark::State& state, const std::function<void()>& work, Traffic traffic,
             const Recheck& recheck, cudaStream_t stream = nullptr);

// Times HOST calls (an allocator, a launch's cost to the caller), not GPU work: each sample
// runs `call` `calls` times back to back between two std::chrono::steady_clock readings, then
// `between` untimed (e.g. draining the work the calls queued); a sample's time is that of one
// call. Samples as SamplePlan says and sets median_us, samples and spread_% like measure(); no
// L2 flush, no bytes, no floor (the caller re-checks what the timed calls left behind and sets
// recheck itself).
void measure_host(benchmark::State& state, const std::function<void()>& call, int calls,
                  const std::function<void()>& between = {});

// The median time of `vendor_work` (a vendor baseline: cuBLAS, cuBLASLt), in microseconds,
// timed once per `shape_key` and process (first used on Day 9): one untimed warm-up call (the
// library picks its kernel and loads it), then `samples` calls, each bracketed by a
// BracketedTimer, on the buffers of the row that asks first (the same shape and kind of data).
// The key names everything the time depends on ("fp32/4096x4096x4096"). 0 when the vendor
// refused the shape (it threw): then the row gets no %vendor.
double vendor_median_us(const std::string& shape_key, const std::function<void()>& vendor_work,
                        int samples);

// After measure(): the counter %vendor = 100 * the vendor's median (vendor_median_us) / this
// row's median_us, so that 100 is the vendor's speed and more is faster than the vendor. No
// counter when either time is 0 (the row failed, or the vendor refused the shape).
void report_vendor_ratio(benchmark::State& state, const std::string& shape_key,
                         const std::function<void()>& vendor_work, int samples);

// Mark the benchmark whose figure is the day's headline (the GPU check script's table).
inline void mark_key(benchmark::State& state) { state.counters["key"] = 1; }

// How many samples measure() and measure_host() take. They sample inside ONE Google Benchmark
// iteration, so that the benchmark function, and with it the set-up of its inputs (random
// tensors of hundreds of MB, their float64 copies for the reference), runs once per row:
// Google Benchmark's own search for an iteration count called the function four to five
// times (1, 10, 100, ... iterations), repeating that set-up each time, and the set-up, not
// the GPU, was most of a benchmark program's run time.
// Sampling stops once `min_samples` samples add up to `min_timed_seconds` of timed work (a
// 200 us kernel: 250 samples), at `max_samples` (microsecond kernels), or, for a very slow
// kernel (a student's first try), once `max_wall_seconds` have passed with at least
// `min_samples_when_slow` samples.
struct SamplePlan {
  int min_samples = 20;
  int max_samples = 2000;
  double min_timed_seconds = 0.05;
  double max_wall_seconds = 4.0;
  int min_samples_when_slow = 3;
  bool enough(int samples, double timed_seconds, double wall_seconds) const;
};

// Manual time, microseconds, one Google Benchmark iteration per row (measure() samples inside
// it, as SamplePlan says); the row's reported time is the median sample, and the counter
// `samples` says how many there were.
void configure(benchmark::internal::Benchmark* b);

// Benchmarks time only correct kernels: when `check` failed, the benchmark is reported as an
// error ("output does not match the reference: ...") instead of a speed.
bool verified(benchmark::State& state, const Comparison& check);

// The first run of a row, before anything is timed: `prepare` (poison the outputs, or restore the
// inputs), `run` once, `check` (then verified()). False, with the row reported as an error and
// the reason, when any of them throws (a launcher's argument check, a CUDA error) or the output
// is wrong: the caller returns without timing.
bool first_run_verified(benchmark::State& state, const std::function<void()>& prepare,
                        const std::function<void()>& run, const std::function<Comparison()>& check);

// Sample up to `samples` evenly spaced elements of a large output and compare them with the
// reference computed only at those indices: a full float64 reference of a 256 MiB tensor
// would take longer than the benchmark. `options` as for compare() (a kernel built on
// approximate hardware math passes its own tolerance there).
template <class T, class RefAt>
Comparison compare_sampled(const std::vector<T>& got, RefAt&& ref_at, CompareOptions options = {},
                           std::size_t samples = 1 << 16) {
  const std::size_t n = got.size();
  const std::size_t step = n > samples ? n / samples : 1;
  std::vector<T> picked;
  std::vector<double> ref;
  for (std::size_t i = 0; i < n; i += step) {
    picked.push_back(got[i]);
    ref.push_back(ref_at(i));
  }
  if (n > 0 && (n - 1) % step != 0) {  // always include the last element: the tail
    picked.push_back(got[n - 1]);
    ref.push_back(ref_at(n - 1));
  }
  if (options.what == CompareOptions{}.what) options.what = "sampled output";
  return compare(picked, ref, options);
}

}  // namespace course::bench
