// main() of every lab's benchmark: says which GPU and which ceiling the numbers are against,
// where the inputs' seed came from, and on a machine without a GPU says so and succeeds (there
// is nothing to time).
//
// The seed (course/random.h): every benchmark draws its inputs from course::seed_for(salt),
// which mixes the salt with the run seed: COURSE_SEED when it is set, otherwise a fresh seed
// drawn from the OS for this process. A fresh seed is printed and written into the JSON's
// context (course_run_seed), so that COURSE_SEED=<it> repeats the run's inputs. A seed given in
// COURSE_SEED is never shown: a grader sets it to a secret value, so that no kernel can be
// written for inputs known in advance. The context says which it was: course_seed_source is
// "COURSE_SEED" or "fresh".
//
// Without a GPU the program prints "SKIPPED: <why>; ..." and exits 0, and when
// --benchmark_out=<file> was given it still writes that file, as Google Benchmark's JSON with no
// benchmarks and the reason in the context (course_skipped), so that a tool reading it never
// finds it missing.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "course/device.h"
#include "course/json.h"
#include "course/random.h"

namespace {

// What a run without a GPU needs of Google Benchmark's own flags, read before
// benchmark::Initialize() consumes them. Like Google Benchmark: the environment variable
// (BENCHMARK_OUT, ...) is the default, the last --flag=value on the command line wins.
struct OutputFlags {
  std::string out;            // --benchmark_out
  std::string format;         // --benchmark_out_format (Google Benchmark's default: json)
  std::string context_pairs;  // --benchmark_context: key=value,key=value
};

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

OutputFlags output_flags(int argc, char** argv) {
  OutputFlags flags{env_or("BENCHMARK_OUT", ""), env_or("BENCHMARK_OUT_FORMAT", "json"),
                    env_or("BENCHMARK_CONTEXT", "")};
  const auto value_of = [](const char* arg, const char* flag, std::string* value) {
    const std::size_t n = std::strlen(flag);
    if (std::strncmp(arg, flag, n) == 0) *value = arg + n;
  };
  for (int i = 1; i < argc; ++i) {
    value_of(argv[i], "--benchmark_out=", &flags.out);
    value_of(argv[i], "--benchmark_out_format=", &flags.format);
    value_of(argv[i], "--benchmark_context=", &flags.context_pairs);
  }
  return flags;
}

using course::json_string;

// Local time as Google Benchmark writes it into its context: 2026-11-23T10:00:00+01:00.
std::string local_date() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[64];
  if (std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S%z", &local) == 0) return "";
  std::string date = text;  // ...+0100: the offset needs its colon
  if (date.size() >= 5) date.insert(date.size() - 2, ":");
  return date;
}

// Writes the JSON of a run that timed nothing: Google Benchmark's shape (a "context" object and
// an empty "benchmarks" list), with `why` as course_skipped. Another output format (console,
// csv) gets the SKIPPED line itself. Returns false, having said why, if the file cannot be
// written.
bool write_skipped_output(const OutputFlags& flags, const std::string& why, const char* exe) {
  std::ofstream file(flags.out);
  if (!file) {
    std::fprintf(stderr, "could not write --benchmark_out=%s\n", flags.out.c_str());
    return false;
  }
  if (flags.format != "json") {
    file << "SKIPPED: " << why << "; the benchmarks need a CUDA GPU.\n";
    return static_cast<bool>(file.flush());
  }
  // As in Google Benchmark, the --benchmark_context pairs come first and a key given twice
  // keeps its first value.
  std::map<std::string, std::string> context;
  std::string pairs = flags.context_pairs;
  while (!pairs.empty()) {
    const std::size_t comma = pairs.find(',');
    const std::string pair = pairs.substr(0, comma);
    pairs = comma == std::string::npos ? "" : pairs.substr(comma + 1);
    const std::size_t eq = pair.find('=');
    if (eq != std::string::npos) context.emplace(pair.substr(0, eq), pair.substr(eq + 1));
  }
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  context.emplace("course_skipped", why);
  file << "{\n  \"context\": {\n";
  file << "    \"date\": " << json_string(local_date()) << ",\n";
  file << "    \"host_name\": " << json_string(host) << ",\n";
  file << "    \"executable\": " << json_string(exe) << ",\n";
  file << "    \"num_cpus\": " << std::thread::hardware_concurrency();
  for (const auto& [key, value] : context)
    file << ",\n    " << json_string(key) << ": " << json_string(value);
  file << "\n  },\n  \"benchmarks\": [\n  ]\n}\n";
  if (!file.flush()) {
    std::fprintf(stderr, "could not write --benchmark_out=%s\n", flags.out.c_str());
    return false;
  }
  return true;
}

// Where the inputs' seed came from, into the context and onto the console; the seed itself only
// when it is not the grader's secret. COURSE_SEED counts as set as run_seed() reads it: present
// and not empty.
void report_seed() {
  const char* env = std::getenv("COURSE_SEED");
  if (env != nullptr && *env != '\0') {
    benchmark::AddCustomContext("course_seed_source", "COURSE_SEED");
    std::printf("inputs: drawn from COURSE_SEED (not shown)\n");
    return;
  }
  const std::string seed = std::to_string(course::run_seed());
  benchmark::AddCustomContext("course_seed_source", "fresh");
  benchmark::AddCustomContext("course_run_seed", seed);
  std::printf("inputs: drawn from a fresh seed, %s (COURSE_SEED=%s draws the same again)\n",
              seed.c_str(), seed.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const OutputFlags flags = output_flags(argc, argv);  // before Initialize removes them
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::string why;
  if (!course::gpu_available(&why)) {
    std::printf("SKIPPED: %s; the benchmarks need a CUDA GPU.\n", why.c_str());
    // Still 0 if the file cannot be written: nothing was to be timed, and stderr says so.
    if (!flags.out.empty()) write_skipped_output(flags, why, argv[0]);
    return 0;
  }
  const course::DeviceFacts& facts = course::device_facts();
  const double ceiling = course::measured_copy_bandwidth_gbs();  // before any timing
  benchmark::AddCustomContext("device", course::describe(facts));
  benchmark::AddCustomContext("copy_ceiling_GBps", std::to_string(ceiling));
  std::printf("device: %s\nmeasured copy ceiling: %.0f GB/s (bytes read + written)\n",
              course::describe(facts).c_str(), ceiling);
  report_seed();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
