// Day 1 benchmarks: vector add and SAXPY over arrays far larger than the L2, in GB/s and as a
// percentage of the copy ceiling; SAXPY also over grid sizes, to see how many blocks it takes
// to fill the GPU.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "course/bench.h"
#include "course/buffer.h"
#include "course/random.h"
#include "course/reference/elementwise.h"
#include "lab.h"

namespace {

using course::DeviceBuffer;

void BM_vector_add(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(1));
  const auto b = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(2));
  DeviceBuffer<float> da(a), db(b), dc(static_cast<std::size_t>(n));
  const auto run = [&] { d01::vector_add(da.data(), db.data(), dc.data(), n); };
  const auto poison = [&] { dc.poison(); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        dc.download(), [&](std::size_t i) { return double(a[i]) + double(b[i]); });
  };
  if (!course::bench::first_run_verified(state, poison, run, check)) return;
  course::bench::measure(state, run, {3.0 * 4.0 * static_cast<double>(n), static_cast<double>(n)},
                         {poison, check});
  if (n == (1 << 26)) course::bench::mark_key(state);  // 768 MiB moved: far past the L2
}
BENCHMARK(BM_vector_add)->Apply(course::bench::configure)->Arg(1 << 20)->Arg(1 << 26);

// range(0): n, range(1): blocks in the grid (0 = the launcher's choice).
// SAXPY updates y in place, so every timed call moves y further from the checked output. The
// re-check cannot poison y: before every timed call it copies the original y back (a copy on the
// GPU, y0), so that every call, audited or not, must produce 2 x + y from the same y.
void BM_saxpy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const int blocks = static_cast<int>(state.range(1));
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(3));
  const auto y = course::random_uniform<float>(static_cast<std::size_t>(n), course::seed_for(4));
  DeviceBuffer<float> dx(x), dy(y), dy0(y);
  const auto run = [&] { d01::saxpy(2.0f, dx.data(), dy.data(), n, blocks); };
  const auto check = [&] {
    return course::bench::compare_sampled(
        dy.download(), [&](std::size_t i) { return 2.0 * double(x[i]) + double(y[i]); });
  };
  run();
  if (!course::bench::verified(state, check())) return;
  course::bench::measure(
      state, run, {3.0 * 4.0 * static_cast<double>(n), 2.0 * static_cast<double>(n)},
      {[&] {
         COURSE_CUDA_CHECK(cudaMemcpy(dy.data(), dy0.data(), dy.bytes(), cudaMemcpyDeviceToDevice));
       },
       check});
}
BENCHMARK(BM_saxpy)
    ->Apply(course::bench::configure)
    ->ArgNames({"n", "blocks"})
    ->Args({1 << 26, 0})
    ->Args({1 << 26, 1})
    ->Args({1 << 26, 66})
    ->Args({1 << 26, 132})
    ->Args({1 << 26, 1056});

}  // namespace
