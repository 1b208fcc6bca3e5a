// Day 2 benchmarks: every variant of the day on tensors far larger than the L2 (2^26 elements:
// 256 MiB of float32), next to a device-to-device cudaMemcpy of the same bytes in the same binary.
//
//   BM_copy_cudaMemcpy         the driver's copy: the ceiling the copies can approach
//   BM_copy_1_coalesced        one element per lane, consecutive lanes on consecutive elements
//   BM_copy_1_strided          the same copy column by column, over strides 1 .. 64
//   BM_copy_2_vectorized       16-byte accesses; offset:1 = pointers not 16-byte aligned
//   BM_gelu                    per dtype
//   BM_add_bias_gelu_unfused   two kernels through a temporary in DRAM ...
//   BM_add_bias_gelu_fused     ... and one kernel (the day's headline: float32, 8192 x 8192)
//   BM_silu_and_mul            per dtype
//
// Bytes are the fewest the OPERATION must move (inputs read once, outputs written once), so the
// unfused chain and the strided copy are charged the same bytes as their fast counterparts and
// show up with a lower GB/s. The unfused chain also reports chain_GB/s: the bytes it really
// moves (x read, tmp written and read back, y written) per second.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/check.h"
#include "course/random.h"
#include "course/reference/activation.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::half;
namespace ref = course::reference;

// Random inputs, drawn once per process and shape: 64 M random values take longer to draw than a
// benchmark takes to run. `salt` also names the range, so that one key always means one array;
// the values come from course::seed_for(salt), so from the run's seed (COURSE_SEED).
template <class T>
const std::vector<T>& random_input(std::size_t n, std::uint64_t salt, double lo, double hi) {
  static std::map<std::pair<std::size_t, std::uint64_t>, std::vector<T>> inputs;
  std::vector<T>& v = inputs[{n, salt}];
  if (v.size() != n) v = course::random_uniform<T>(n, course::seed_for(salt), lo, hi);
  return v;
}
template <class T>
const std::vector<T>& unit_input(std::size_t n) {  // [-1, 1): for copies and biases
  return random_input<T>(n, 1, -1.0, 1.0);
}
template <class T>
const std::vector<T>& activation_input(std::size_t n) {  // [-5, 5): GeLU's and SiLU's curved parts
  return random_input<T>(n, 2, -5.0, 5.0);
}

double bytes_of(std::int64_t elements, std::size_t element_bytes) {
  return static_cast<double>(elements) * static_cast<double>(element_bytes);
}

// Every benchmark below checks its output once before timing and again after (course::bench::
// Recheck): `poison` poisons the output(s), `check` downloads and compares them, the same
// lambda both times.

// ---------------------------------------------------------------- copies: range(0) = n

template <class T>
void BM_copy_cudaMemcpy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const std::vector<T>& host = unit_input<T>(static_cast<std::size_t>(n));
  DeviceBuffer<T> x(host), y(host.size());
  const auto copy = [&] {
    COURSE_CUDA_CHECK(cudaMemcpyAsync(y.data(), x.data(), x.bytes(), cudaMemcpyDeviceToDevice));
  };
  const auto poison = [&] { y.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        y.download(), [&](std::size_t i) { return course::to_double(host[i]); });
  };
  if (!course::bench::first_run_verified(state, poison, copy, check)) return;
  course::bench::measure(state, copy, {2.0 * bytes_of(n, sizeof(T)), 0.0}, {poison, check});
}

template <class T>
void BM_copy_1_coalesced(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const std::vector<T>& host = unit_input<T>(static_cast<std::size_t>(n));
  DeviceBuffer<T> x(host), y(host.size());
  const auto run = [&] { d02::copy_1_coalesced(x.data(), y.data(), n); };
  const auto poison = [&] { y.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        y.download(), [&](std::size_t i) { return course::to_double(host[i]); });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {2.0 * bytes_of(n, sizeof(T)), 0.0}, {poison, check});
}

// range(0) = n, range(1) = stride.
void BM_copy_1_strided(benchmark::State& state) {
  const std::int64_t n = state.range(0), stride = state.range(1);
  const std::vector<float>& host = unit_input<float>(static_cast<std::size_t>(n));
  DeviceBuffer<float> x(host), y(host.size());
  const auto run = [&] { d02::copy_1_strided(x.data(), y.data(), n, stride); };
  const auto poison = [&] { y.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        y.download(), [&](std::size_t i) { return static_cast<double>(host[i]); });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {2.0 * bytes_of(n, sizeof(float)), 0.0}, {poison, check});
}

// range(0) = n, range(1) = offset of both pointers in elements (1: not 16-byte aligned, so the
// launcher peels a head of 16 / sizeof(T) - 1 elements first).
template <class T>
void BM_copy_2_vectorized(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto offset = static_cast<std::size_t>(state.range(1));
  const std::vector<T>& host = unit_input<T>(static_cast<std::size_t>(n));
  DeviceBuffer<T> x(offset + host.size()), y(offset + host.size());
  x.upload(host, offset);
  const T* in = x.data() + offset;
  T* out = y.data() + offset;
  const auto run = [&] { d02::copy_2_vectorized(in, out, n); };
  const auto poison = [&] { y.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        y.download(offset), [&](std::size_t i) { return course::to_double(host[i]); });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {2.0 * bytes_of(n, sizeof(T)), 0.0}, {poison, check});
}

// ---------------------------------------------------------------- GeLU: range(0) = n

template <class T>
void BM_gelu(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const std::vector<T>& host = activation_input<T>(static_cast<std::size_t>(n));
  DeviceBuffer<T> x(host), y(host.size());
  const auto run = [&] { d02::gelu(x.data(), y.data(), n); };
  const auto poison = [&] { y.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        y.download(), [&](std::size_t i) { return ref::gelu_tanh(course::to_double(host[i])); });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {2.0 * bytes_of(n, sizeof(T)), 0.0}, {poison, check});
}

// ---------------------------------------------------------------- add-bias + GeLU: rows, cols

// The fewest bytes of y = gelu(x + bias): x read, y written, the bias read once.
template <class T>
course::bench::Traffic add_bias_gelu_traffic(std::int64_t rows, std::int64_t cols) {
  return {2.0 * bytes_of(rows * cols, sizeof(T)) + bytes_of(cols, sizeof(T)), 0.0};
}

template <class T>
course::Comparison check_add_bias_gelu(const std::vector<T>& got, const std::vector<T>& x,
                                       const std::vector<T>& bias, std::int64_t cols,
                                       bool round_sum) {
  return course::bench::compare_sampled(got, [&](std::size_t i) {
    const double sum =
        course::to_double(x[i]) + course::to_double(bias[i % static_cast<std::size_t>(cols)]);
    return ref::gelu_tanh(round_sum ? course::round_through<T>(sum) : sum);
  });
}

template <class T>
void BM_add_bias_gelu_unfused(benchmark::State& state) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const std::vector<T>& host_x = activation_input<T>(static_cast<std::size_t>(rows * cols));
  const std::vector<T>& host_bias = unit_input<T>(static_cast<std::size_t>(cols));
  DeviceBuffer<T> x(host_x), bias(host_bias), tmp(host_x.size()), y(host_x.size());
  const auto run = [&] {
    d02::add_bias_gelu_unfused(x.data(), bias.data(), tmp.data(), y.data(), rows, cols);
  };
  // tmp too: a chain that skipped its first kernel on later calls would otherwise find the
  // previous call's x + bias there, and its y would still be right.
  const auto poison = [&] {
    tmp.poison();
    y.poison();
  };
  // The chain rounds x + bias to T in tmp before GeLU reads it.
  const auto check = [&] {
    return check_add_bias_gelu(y.download(), host_x, host_bias, cols, /*round_sum=*/true);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, add_bias_gelu_traffic<T>(rows, cols), {poison, check});
  // What the chain really moves: x read, tmp written, tmp read, y written (and the bias).
  const double chain_bytes = 4.0 * bytes_of(rows * cols, sizeof(T)) + bytes_of(cols, sizeof(T));
  if (!state.error_occurred() && state.counters.count("median_us"))
    state.counters["chain_GB/s"] = chain_bytes / (state.counters["median_us"].value * 1e3);
}

template <class T>
void BM_add_bias_gelu_fused(benchmark::State& state) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const std::vector<T>& host_x = activation_input<T>(static_cast<std::size_t>(rows * cols));
  const std::vector<T>& host_bias = unit_input<T>(static_cast<std::size_t>(cols));
  DeviceBuffer<T> x(host_x), bias(host_bias), y(host_x.size());
  const auto run = [&] { d02::add_bias_gelu_fused(x.data(), bias.data(), y.data(), rows, cols); };
  const auto poison = [&] { y.poison(); };
  const auto check = [&] {
    return check_add_bias_gelu(y.download(), host_x, host_bias, cols, /*round_sum=*/false);
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, add_bias_gelu_traffic<T>(rows, cols), {poison, check});
  if (std::is_same_v<T, float> && rows == 8192 && cols == 8192) course::bench::mark_key(state);
}

// ---------------------------------------------------------------- SiLU-and-mul: rows, d

template <class T>
void BM_silu_and_mul(benchmark::State& state) {
  const std::int64_t rows = state.range(0), d = state.range(1);
  const std::vector<T>& host = activation_input<T>(static_cast<std::size_t>(rows * 2 * d));
  DeviceBuffer<T> input(host), out(static_cast<std::size_t>(rows * d));
  const auto run = [&] { d02::silu_and_mul(input.data(), out.data(), rows, d); };
  const auto poison = [&] { out.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(out.download(), [&](std::size_t i) {
      const std::size_t r = i / static_cast<std::size_t>(d), c = i % static_cast<std::size_t>(d);
      const std::size_t row = r * 2 * static_cast<std::size_t>(d);
      return ref::silu(course::to_double(host[row + c])) *
             course::to_double(host[row + static_cast<std::size_t>(d) + c]);
    });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {3.0 * bytes_of(rows * d, sizeof(T)), 0.0}, {poison, check});
}

// ---------------------------------------------------------------- registration

constexpr std::int64_t kSmall = 1 << 20;  // 4 MiB of float32: launch and latency costs show
constexpr std::int64_t kLarge = 1 << 26;  // 256 MiB of float32: DRAM bandwidth alone

void sizes(benchmark::internal::Benchmark* b) {
  course::bench::configure(b);
  b->ArgNames({"n"});
  b->Arg(kSmall)->Arg(kLarge);
}
void strides(benchmark::internal::Benchmark* b) {
  course::bench::configure(b);
  b->ArgNames({"n", "stride"});
  for (std::int64_t stride : {1, 2, 4, 8, 16, 32, 64}) b->Args({kLarge, stride});
}
void sizes_and_offsets(benchmark::internal::Benchmark* b) {
  course::bench::configure(b);
  b->ArgNames({"n", "offset"});
  b->Args({kSmall, 0})->Args({kLarge, 0})->Args({kLarge, 1})->Args({kLarge + 3, 0});
}
// 8192 x 8192 = 2^26 elements (the headline); a Llama-3-8B MLP width (14336) for 4096 tokens;
// and odd columns, which take the element-by-element kernel.
void matrices(benchmark::internal::Benchmark* b) {
  course::bench::configure(b);
  b->ArgNames({"rows", "cols"});
  b->Args({8192, 8192})->Args({4096, 14336})->Args({8191, 8191});
}
// [rows, 2d] -> [rows, d]: an input of 2^26 elements; Llama-3-8B's d = 14336 for 2048 tokens;
// an odd d.
void gated(benchmark::internal::Benchmark* b) {
  course::bench::configure(b);
  b->ArgNames({"rows", "d"});
  b->Args({8192, 4096})->Args({2048, 14336})->Args({8191, 4095});
}

BENCHMARK_TEMPLATE(BM_copy_cudaMemcpy, float)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_copy_1_coalesced, float)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_copy_1_coalesced, half)->Apply(sizes);
BENCHMARK(BM_copy_1_strided)->Apply(strides);
BENCHMARK_TEMPLATE(BM_copy_2_vectorized, float)->Apply(sizes_and_offsets);
BENCHMARK_TEMPLATE(BM_copy_2_vectorized, half)->Apply(sizes_and_offsets);

BENCHMARK_TEMPLATE(BM_gelu, float)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_gelu, half)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_gelu, bfloat16)->Apply(sizes);

BENCHMARK_TEMPLATE(BM_add_bias_gelu_unfused, float)->Apply(matrices);
BENCHMARK_TEMPLATE(BM_add_bias_gelu_fused, float)->Apply(matrices);
BENCHMARK_TEMPLATE(BM_add_bias_gelu_unfused, half)->Apply(matrices);
BENCHMARK_TEMPLATE(BM_add_bias_gelu_fused, half)->Apply(matrices);
BENCHMARK_TEMPLATE(BM_add_bias_gelu_unfused, bfloat16)->Apply(matrices);
BENCHMARK_TEMPLATE(BM_add_bias_gelu_fused, bfloat16)->Apply(matrices);

BENCHMARK_TEMPLATE(BM_silu_and_mul, float)->Apply(gated);
BENCHMARK_TEMPLATE(BM_silu_and_mul, half)->Apply(gated);
BENCHMARK_TEMPLATE(BM_silu_and_mul, bfloat16)->Apply(gated);

}  // namespace
