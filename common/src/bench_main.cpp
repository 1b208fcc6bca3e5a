// main() of every lab's benchmark: says which GPU and which ceiling the numbers are against,
// and on a machine without a GPU says so and succeeds (there is nothing to time).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "course/device.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::string why;
  if (!course::gpu_available(&why)) {
    std::printf("SKIPPED: %s; the benchmarks need a CUDA GPU.\n", why.c_str());
    return 0;
  }
  const course::DeviceFacts& facts = course::device_facts();
  const double ceiling = course::measured_copy_bandwidth_gbs();  // before any timing
  benchmark::AddCustomContext("device", course::describe(facts));
  benchmark::AddCustomContext("copy_ceiling_GBps", std::to_string(ceiling));
  std::printf("device: %s\nmeasured copy ceiling: %.0f GB/s (bytes read + written)\n",
              course::describe(facts).c_str(), ceiling);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
