// Day 13 tests: the JIT's host side (cache key, cache entries, atomic writes raced by two
// processes, NVRTC, the kernel cache) runs without a GPU; the JIT-compiled kernels and the
// autotuner need one. Every test uses its own cache folder, so no test sees another's entries.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "course/reference/gemm.h"
#include "course/reference/norm.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::half;

COURSE_POINTS(CacheKey, 5);
COURSE_POINTS(CacheEntry, 10);
COURSE_POINTS(DiskCache, 15);
COURSE_POINTS(NvrtcCompile, 15);
COURSE_POINTS(KernelCache, 15);
COURSE_POINTS(RmsNormTemplate, 15);
COURSE_POINTS(GemmTemplate, 15);
COURSE_POINTS(Autotune, 10);

// A fresh, empty cache folder for one test, removed at the end.
class TempDir {
 public:
  TempDir() {
    const auto base = std::filesystem::temp_directory_path();
    for (int i = 0;; ++i) {
      path_ =
          (base / ("d13-test-" + std::to_string(::getpid()) + "-" + std::to_string(i))).string();
      if (std::filesystem::create_directory(path_)) break;
    }
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

int count_files(const std::string& dir, const std::string& ext) {
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    if (f.path().extension() == ext) ++n;
  return n;
}

const std::string kArch = "sm_90a";  // what the host tests compile for: no GPU needed

// ------------------------------------------------------------------------------------------
// Exercise 1 — CacheKey
// ------------------------------------------------------------------------------------------
TEST(CacheKey, IsTheSameForTheSameInputsAndA64DigitHash) {
  const std::vector<std::string> options = {"-std=c++17"};
  const std::string a = d13::cache_key("src", "k<1>", options, "sm_90a", 13000);
  const std::string b = d13::cache_key("src", "k<1>", options, "sm_90a", 13000);
  ASSERT_EQ(a.size(), 64u) << "cache_key must return SHA-256 as 64 hex digits (sha256_hex); got \""
                           << a << "\" (TODO d13.1)";
  EXPECT_EQ(a, b) << "the same inputs must give the same key: is something random or "
                     "time-dependent in it?";
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(CacheKey, ChangesWithEveryInput) {
  const std::vector<std::string> options = {"-std=c++17"};
  const std::string base = d13::cache_key("src", "k<1>", options, "sm_90a", 13000);
  ASSERT_EQ(base.size(), 64u) << "cache_key is not written yet (TODO d13.1)";
  EXPECT_NE(base, d13::cache_key("src2", "k<1>", options, "sm_90a", 13000))
      << "the source is not in the key: an edited template would load the old CUBIN";
  EXPECT_NE(base, d13::cache_key("src", "k<2>", options, "sm_90a", 13000))
      << "the name expression is not in the key: every specialisation would share one CUBIN";
  EXPECT_NE(base, d13::cache_key("src", "k<1>", {"-std=c++17", "-DX"}, "sm_90a", 13000))
      << "the options are not in the key";
  EXPECT_NE(base, d13::cache_key("src", "k<1>", {}, "sm_90a", 13000))
      << "the options are not in the key";
  EXPECT_NE(base, d13::cache_key("src", "k<1>", options, "sm_80", 13000))
      << "the architecture is not in the key: an sm_80 CUBIN would be loaded on sm_90";
  EXPECT_NE(base, d13::cache_key("src", "k<1>", options, "sm_90a", 12090))
      << "NVRTC's version is not in the key: a new compiler's fixes would never be picked up";
}

TEST(CacheKey, SeparatesItsFields) {
  // Plain concatenation would make these collide.
  EXPECT_NE(d13::cache_key("ab", "c", {}, "sm_90a", 13000),
            d13::cache_key("a", "bc", {}, "sm_90a", 13000))
      << "(\"ab\", \"c\") and (\"a\", \"bc\") give the same key: length-prefix each field";
  EXPECT_NE(d13::cache_key("s", "k", {"-a", "-b"}, "sm_90a", 13000),
            d13::cache_key("s", "k", {"-a-b"}, "sm_90a", 13000))
      << "the options {\"-a\", \"-b\"} and {\"-a-b\"} give the same key: length-prefix each";
  EXPECT_NE(d13::cache_key("s", "k", {"sm_90a"}, "", 13000),
            d13::cache_key("s", "k", {}, "sm_90a", 13000))
      << "an option can pass for the architecture: put the option count in the key";
}

// ------------------------------------------------------------------------------------------
// Exercise 2 — CacheEntry
// ------------------------------------------------------------------------------------------
std::string sample_payload() {
  std::string p = "_Z18d13_rmsnorm_kernel\n";
  for (int i = 0; i < 3000; ++i) p.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  return p;
}

TEST(CacheEntry, RoundTripsAndHasTheDocumentedHeader) {
  const std::string payload = sample_payload();
  const std::string entry = d13::encode_entry(payload);
  ASSERT_EQ(entry.size(), d13::kEntryHeaderBytes + payload.size())
      << "an entry is the 56-byte header then the payload (TODO d13.2)";
  EXPECT_EQ(entry.substr(0, 8), "D13KCACH") << "bytes 0-7 must be the magic";
  EXPECT_EQ(static_cast<unsigned char>(entry[8]), d13::kEntryVersion)
      << "bytes 8-11: the version, little-endian";
  EXPECT_EQ(static_cast<unsigned char>(entry[12]), d13::kEntryHeaderBytes)
      << "bytes 12-15: the header's size, little-endian";
  std::uint64_t size = 0;
  for (int i = 0; i < 8; ++i)
    size |= std::uint64_t{static_cast<unsigned char>(entry[16 + i])} << (8 * i);
  EXPECT_EQ(size, payload.size()) << "bytes 16-23: the payload's size, little-endian";
  const std::optional<std::string> back = d13::decode_entry(entry);
  ASSERT_TRUE(back.has_value()) << "decode_entry rejected what encode_entry wrote";
  EXPECT_EQ(*back, payload);
  const std::optional<std::string> empty = d13::decode_entry(d13::encode_entry(""));
  ASSERT_TRUE(empty.has_value()) << "an empty payload is a valid entry";
  EXPECT_EQ(*empty, "");
}

TEST(CacheEntry, RejectsTruncatedEntries) {
  const std::string entry = d13::encode_entry(sample_payload());
  ASSERT_GT(entry.size(), d13::kEntryHeaderBytes) << "encode_entry is not written (TODO d13.2)";
  ASSERT_TRUE(d13::decode_entry(entry).has_value()) << "decode_entry rejects a good entry";
  for (const std::size_t keep : {std::size_t{0}, std::size_t{7}, d13::kEntryHeaderBytes - 1,
                                 d13::kEntryHeaderBytes, entry.size() / 2, entry.size() - 1})
    EXPECT_FALSE(d13::decode_entry(entry.substr(0, keep)).has_value())
        << "an entry cut to " << keep << " of its " << entry.size()
        << " bytes was accepted: compare the payload size in the header with what is there";
  EXPECT_FALSE(d13::decode_entry(entry + "x").has_value())
      << "an entry with a byte too many was accepted: the size must match exactly";
}

TEST(CacheEntry, RejectsCorruptEntries) {
  const std::string entry = d13::encode_entry(sample_payload());
  ASSERT_GT(entry.size(), d13::kEntryHeaderBytes) << "encode_entry is not written (TODO d13.2)";
  ASSERT_TRUE(d13::decode_entry(entry).has_value()) << "decode_entry rejects a good entry";
  struct Flip {
    std::size_t at;
    const char* what;
  };
  for (const Flip flip :
       {Flip{0, "the magic"}, Flip{8, "the version"}, Flip{12, "the header size"},
        Flip{30, "the checksum"}, Flip{d13::kEntryHeaderBytes + 5, "a payload byte"},
        Flip{entry.size() - 1, "the last payload byte"}}) {
    std::string bad = entry;
    bad[flip.at] = static_cast<char>(bad[flip.at] ^ 0x10);
    EXPECT_FALSE(d13::decode_entry(bad).has_value())
        << "an entry with a bit flipped in " << flip.what << " (byte " << flip.at
        << ") was accepted";
  }
}

// ------------------------------------------------------------------------------------------
// Exercise 3 — DiskCache
// ------------------------------------------------------------------------------------------
TEST(DiskCache, StoresLoadsAndClears) {
  TempDir dir;
  d13::DiskCache cache(dir.path());
  const std::string payload = sample_payload();
  try {
    cache.store("abc", "cubin", payload);
  } catch (const std::exception& e) {
    FAIL() << "DiskCache::store threw: " << e.what() << " (TODO d13.3)";
  }
  const std::optional<std::string> back = cache.load("abc", "cubin");
  ASSERT_TRUE(back.has_value()) << "load() did not find what store() wrote (TODO d13.3)";
  EXPECT_EQ(*back, payload);
  EXPECT_EQ(read_file(cache.path_for("abc", "cubin")), d13::encode_entry(payload))
      << "the file must hold the entry of Exercise 2";
  EXPECT_FALSE(cache.load("abd", "cubin").has_value()) << "a missing key was found";
  EXPECT_FALSE(cache.load("abc", "tune").has_value()) << "another extension was found";
  for (const auto& f : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos)
        << "a temporary file was left behind: " << f.path();
  cache.clear();
  EXPECT_FALSE(cache.load("abc", "cubin").has_value()) << "clear() left an entry";
}

TEST(DiskCache, DetectsDeletesAndCountsCorruptEntries) {
  TempDir dir;
  d13::DiskCache cache(dir.path());
  const std::string entry = d13::encode_entry(sample_payload());
  ASSERT_GT(entry.size(), d13::kEntryHeaderBytes) << "encode_entry is not written (TODO d13.2)";
  write_file(cache.path_for("trunc", "cubin"), entry.substr(0, entry.size() - 100));
  std::string flipped = entry;
  flipped[entry.size() / 2] ^= 1;
  write_file(cache.path_for("flip", "cubin"), flipped);
  write_file(cache.path_for("good", "cubin"), entry);
  EXPECT_FALSE(cache.load("trunc", "cubin").has_value()) << "a truncated entry was loaded";
  EXPECT_FALSE(cache.load("flip", "cubin").has_value()) << "a corrupt entry was loaded";
  EXPECT_EQ(cache.corrupt_entries(), 2) << "each broken entry found must be counted";
  EXPECT_FALSE(std::filesystem::exists(cache.path_for("trunc", "cubin")))
      << "a broken entry must be deleted, so that it is rebuilt";
  EXPECT_TRUE(cache.load("good", "cubin").has_value())
      << "a good entry written by someone else must load (TODO d13.3)";
}

// Two PROCESSES store the same key, each with its own payload, kRaceWrites times, while this
// process reads it over and over: every read must be a whole entry of one of the two.
TEST(DiskCache, TwoProcessesWritingTheSameKeyNeverLeaveAPartialFile) {
  constexpr int kRaceWrites = 100;
  constexpr int kMaxReads = 3000;  // each read verifies a SHA-256: bounded, so the test stays short
  TempDir dir;
  const std::string key = "race";
  std::string payloads[2];
  for (int p = 0; p < 2; ++p) {
    payloads[p] = std::string(16 * 1024, static_cast<char>('a' + p));
    payloads[p] += "writer " + std::to_string(p);
  }
  pid_t children[2];
  for (int p = 0; p < 2; ++p) {
    children[p] = ::fork();
    ASSERT_GE(children[p], 0) << "fork failed";
    if (children[p] == 0) {  // the child: write, and leave without running any test code
      int status = 0;
      try {
        d13::DiskCache cache(dir.path());
        for (int i = 0; i < kRaceWrites; ++i) cache.store(key, "cubin", payloads[p]);
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
  }
  int reads = 0, whole = 0, partial = 0;
  const std::string path = dir.path() + "/" + key + ".cubin";
  int status[2] = {0, 0};
  bool reaped[2] = {false, false};
  // A child is done when waitpid returns it (or fails for a reason other than a signal, so that
  // the loop can never spin forever).
  const auto reap = [&](int p, int flags) {
    if (reaped[p]) return;
    const pid_t r = ::waitpid(children[p], &status[p], flags);
    reaped[p] = r == children[p] || (r < 0 && errno != EINTR);
  };
  while (!(reaped[0] && reaped[1])) {
    for (int p = 0; p < 2; ++p) reap(p, WNOHANG);
    if (reads >= kMaxReads) {  // enough evidence: wait for the writers to finish
      for (int p = 0; p < 2; ++p)
        while (!reaped[p]) reap(p, 0);
      break;
    }
    if (!std::filesystem::exists(path)) continue;  // not created yet
    // Once created, the name must always hold a whole entry: an empty file (a writer that
    // truncates in place) counts as partial.
    const std::string bytes = read_file(path);
    ++reads;
    const std::optional<std::string> payload = d13::decode_entry(bytes);
    if (payload && (*payload == payloads[0] || *payload == payloads[1]))
      ++whole;
    else
      ++partial;
  }
  for (int p = 0; p < 2; ++p)
    EXPECT_TRUE(WIFEXITED(status[p]) && WEXITSTATUS(status[p]) == 0)
        << "writer process " << p << " failed: store() or write_file_atomically() threw "
        << "(TODO d13.3)";
  EXPECT_EQ(partial, 0) << partial << " of " << reads << " reads saw a partial or mixed file: "
                        << "write to a temporary file in the same folder, fsync, then rename";
  EXPECT_GT(whole, 0) << "no read saw a whole entry: does store() write the file (TODO d13.3)?";
  const std::optional<std::string> last = d13::decode_entry(read_file(path));
  EXPECT_TRUE(last && (*last == payloads[0] || *last == payloads[1]))
      << "the file left at the end is not a whole entry";
  for (const auto& f : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos)
        << "a temporary file was left behind: " << f.path();
}

// ------------------------------------------------------------------------------------------
// Exercise 4 — NvrtcCompile
// ------------------------------------------------------------------------------------------
TEST(NvrtcCompile, CompilesARealTemplateToACubinForSm90a) {
  const d13::KernelSpec spec = d13::rmsnorm_spec("bfloat16", 4096, {256, 8});
  d13::Cubin cubin;
  try {
    cubin = d13::compile_cubin(spec.source, spec.name_expression, spec.options, kArch);
  } catch (const std::exception& e) {
    FAIL() << "compile_cubin threw: " << e.what();
  }
  ASSERT_GE(cubin.image.size(), 4u) << "no CUBIN came back";
  EXPECT_EQ(cubin.image.substr(0, 4),
            "\x7f"
            "ELF")
      << "a CUBIN is an ELF image: ask NVRTC for "
         "the CUBIN (nvrtcGetCUBIN), not the PTX";
  EXPECT_EQ(cubin.lowered_name.rfind("_Z", 0), 0u)
      << "the lowered name must be the mangled symbol (nvrtcGetLoweredName), got \""
      << cubin.lowered_name << "\"";
  EXPECT_NE(cubin.lowered_name.find("d13_rmsnorm_kernel"), std::string::npos);
  EXPECT_NE(cubin.image.find(cubin.lowered_name), std::string::npos)
      << "the CUBIN does not hold the kernel's symbol";
  const d13::KernelSpec gemm = d13::gemm_spec(d13::kGemmCandidates[1]);
  try {
    const d13::Cubin g = d13::compile_cubin(gemm.source, gemm.name_expression, gemm.options, kArch);
    EXPECT_NE(g.lowered_name, cubin.lowered_name);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "compiling the GEMM template threw: " << e.what();
  }
}

TEST(NvrtcCompile, ACompileErrorCarriesTheLogAndTheLine) {
  const std::string source =
      "template <int N>\n"                                            // line 1
      "__global__ void broken_kernel(float* y) {\n"                   // line 2
      "  y[threadIdx.x] = N * undefined_variable_in_the_template;\n"  // line 3
      "}\n";                                                          // line 4
  try {
    d13::compile_cubin(source, "broken_kernel<4>", {"-std=c++17"}, kArch);
    FAIL() << "a source with an undefined name compiled";
  } catch (const d13::CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(e.log().find("undefined_variable_in_the_template"), std::string::npos)
        << "CompileError::log() must hold NVRTC's log; it is:\n"
        << e.log();
    EXPECT_NE(what.find("error"), std::string::npos)
        << "what() must hold NVRTC's error text; it is:\n"
        << what;
    EXPECT_NE(what.find("(3)"), std::string::npos)
        << "what() must name the line of the error, as NVRTC's log does (\"(3)\"):\n"
        << what;
    EXPECT_NE(what.find("3 | "), std::string::npos)
        << "what() must show the generated source's line 3, numbered (\"3 | ...\"):\n"
        << what;
    EXPECT_NE(what.find("N * undefined_variable_in_the_template"), std::string::npos)
        << "what() must show the source line itself:\n"
        << what;
  } catch (const std::exception& e) {
    FAIL() << "compile_cubin threw something other than d13::CompileError: " << e.what()
           << " (TODO d13.4)";
  }
}

// ------------------------------------------------------------------------------------------
// Exercise 5 — KernelCache (host: CUBINs only)
// ------------------------------------------------------------------------------------------
TEST(KernelCache, CompilesOnceThenHitsMemoryThenDisk) {
  TempDir dir;
  const d13::KernelSpec spec = d13::rmsnorm_spec("float32", 1000, {128, 4});
  std::string image;
  {
    d13::KernelCache cache(dir.path(), kArch);
    EXPECT_EQ(cache.stats().compiles, 0) << "a new cache compiled something: compile lazily";
    try {
      image = cache.get_cubin(spec).image;
    } catch (const std::exception& e) {
      FAIL() << "get_cubin threw: " << e.what();
    }
    EXPECT_EQ(cache.stats().compiles, 1) << "the first get must compile";
    EXPECT_EQ(cache.get_cubin(spec).image, image);
    EXPECT_EQ(cache.stats().compiles, 1) << "the second get compiled again: keep it in memory";
    EXPECT_EQ(cache.stats().memory_hits, 1);
    EXPECT_EQ(count_files(dir.path(), ".cubin"), 1) << "the CUBIN must be stored on disk";
  }
  d13::KernelCache again(dir.path(), kArch);  // a new process, in effect
  EXPECT_EQ(again.get_cubin(spec).image, image);
  EXPECT_EQ(again.stats().compiles, 0) << "a new cache on the same folder compiled: load the "
                                          "CUBIN stored on disk";
  EXPECT_EQ(again.stats().disk_hits, 1);
  const d13::KernelSpec other = d13::rmsnorm_spec("float32", 1000, {256, 4});
  again.get_cubin(other);
  EXPECT_EQ(again.stats().compiles, 1) << "another specialisation must be compiled";
  d13::KernelCache other_arch(dir.path(), "sm_80");
  other_arch.get_cubin(spec);
  EXPECT_EQ(other_arch.stats().compiles, 1) << "an sm_80 cache loaded the sm_90a CUBIN";
}

TEST(KernelCache, RebuildsACorruptOrTruncatedEntry) {
  TempDir dir;
  const d13::KernelSpec spec = d13::gemm_spec(d13::kGemmCandidates[0]);
  std::string image;
  {
    d13::KernelCache cache(dir.path(), kArch);
    try {
      image = cache.get_cubin(spec).image;
    } catch (const std::exception& e) {
      FAIL() << "get_cubin threw: " << e.what();
    }
  }
  std::string path;
  for (const auto& f : std::filesystem::directory_iterator(dir.path()))
    if (f.path().extension() == ".cubin") path = f.path().string();
  ASSERT_FALSE(path.empty()) << "no CUBIN was stored on disk";
  for (const bool truncate : {true, false}) {
    std::string bytes = read_file(path);
    if (truncate)
      bytes.resize(bytes.size() / 2);
    else
      bytes[bytes.size() - 10] ^= 0x40;
    write_file(path, bytes);
    d13::KernelCache cache(dir.path(), kArch);
    EXPECT_EQ(cache.get_cubin(spec).image, image);
    const char* what = truncate ? "truncated" : "corrupt";
    EXPECT_EQ(cache.stats().corrupt_entries, 1) << "the " << what << " entry was not detected";
    EXPECT_EQ(cache.stats().compiles, 1) << "the " << what << " entry was not rebuilt";
    EXPECT_TRUE(d13::decode_entry(read_file(path)).has_value())
        << "the rebuilt entry on disk is not whole";
  }
}

// ------------------------------------------------------------------------------------------
// GPU tests: the JIT-compiled kernels against float64 references.
// ------------------------------------------------------------------------------------------
class JitGpuTest : public course::GpuTest {
 protected:
  void SetUp() override {
    course::GpuTest::SetUp();
    if (IsSkipped()) return;
    cache_ = std::make_unique<d13::KernelCache>(dir_.path());
  }
  TempDir dir_;
  std::unique_ptr<d13::KernelCache> cache_;
};

template <class T>
void check_rmsnorm(d13::KernelCache& cache, std::int64_t rows, int hidden, d13::RmsNormConfig c,
                   std::size_t offset) {
  constexpr float kEps = 1e-6f;
  const auto x = course::random_uniform<T>(rows * hidden, course::seed_for(1));
  const auto w = course::random_uniform<T>(hidden, course::seed_for(2));
  course::Guarded<T> dx(x, offset), dw(w, offset), dy(rows * hidden, offset);
  SCOPED_TRACE(std::string(course::DType<T>::name) + " rows=" + std::to_string(rows) +
               " hidden=" + std::to_string(hidden) + " " + d13::describe(c));
  d13::rmsnorm(dx.data(), dw.data(), dy.data(), rows, hidden, kEps, c, &cache);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto ref =
      course::reference::rmsnorm(course::as_doubles(x), course::as_doubles(w), rows, hidden, kEps);
  course::CompareOptions options;
  options.cols = hidden;
  options.what = "y (TODO d13.6: the RMSNorm template in kRmsNormSource)";
  COURSE_EXPECT_MATCH(dy.read_back(), ref, options);
  course::expect_guards_untouched(dy, "y");
}

class RmsNormTemplate : public JitGpuTest {};

TEST_F(RmsNormTemplate, MatchesTheReferenceForEveryDtype) {
  // hidden 4096: 16-byte vectors; 1000 = 8 * 125: vectors of 8 halves, 4 floats.
  check_rmsnorm<float>(*cache_, 7, 4096, {256, 4}, 0);
  check_rmsnorm<half>(*cache_, 7, 4096, {256, 8}, 0);
  check_rmsnorm<bfloat16>(*cache_, 7, 4096, {512, 8}, 0);
  check_rmsnorm<bfloat16>(*cache_, 3, 1000, {64, 8}, 0);
}

TEST_F(RmsNormTemplate, HandlesOddSizesAndUnalignedPointers) {
  check_rmsnorm<float>(*cache_, 1, 1, {32, 1}, 0);  // one element
  check_rmsnorm<half>(*cache_, 5, 33, {32, 1}, 1);  // 33 = 32 + 1: the second item's tail
  check_rmsnorm<bfloat16>(*cache_, 13, 257, {64, 1}, 1);
  check_rmsnorm<float>(*cache_, 3, 8190, {1024, 2}, 0);  // kItems = 4, the last one partial
  check_rmsnorm<half>(*cache_, 2, 16384, {1024, 8}, 0);  // the largest hidden size
}

TEST_F(RmsNormTemplate, ChoosesAConfigurationWhenGivenNone) {
  check_rmsnorm<half>(*cache_, 9, 2048, {}, 0);
  check_rmsnorm<float>(*cache_, 9, 2047, {}, 1);  // odd: only vec = 1 is possible
}

class GemmTemplate : public JitGpuTest {};

void check_gemm(d13::KernelCache& cache, std::int64_t M, std::int64_t N, std::int64_t K,
                d13::GemmConfig c) {
  const auto A = course::random_uniform<float>(M * K, course::seed_for(3));
  const auto B = course::random_uniform<float>(K * N, course::seed_for(4));
  course::Guarded<float> dA(A, 0), dB(B, 0), dC(M * N, 0);
  SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
               " " + d13::describe(c));
  d13::gemm(dA.data(), dB.data(), dC.data(), M, N, K, c, &cache);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto ref = course::reference::gemm(A, B, M, N, K, course::reference::BLayout::kRowMajor,
                                           [](float v) { return static_cast<double>(v); });
  course::CompareOptions options;
  options.cols = N;
  options.what = "C (TODO d13.7: the GEMM template in kGemmSource)";
  COURSE_EXPECT_MATCH(dC.read_back(), ref, options);
  course::expect_guards_untouched(dC, "C");
}

TEST_F(GemmTemplate, MatchesTheReferenceForEveryCandidateTile) {
  for (const d13::GemmConfig& c : d13::kGemmCandidates) check_gemm(*cache_, 131, 67, 45, c);
}

TEST_F(GemmTemplate, HandlesOddShapes) {
  check_gemm(*cache_, 1, 1, 1, d13::kGemmCandidates[1]);
  check_gemm(*cache_, 257, 129, 300, d13::kGemmCandidates[5]);  // every edge partial
  check_gemm(*cache_, 64, 64, 16, d13::kGemmCandidates[2]);     // exact tiles
  check_gemm(*cache_, 3, 1000, 7, d13::kGemmCandidates[3]);
}

// ------------------------------------------------------------------------------------------
// Exercise 5 on the GPU — lazy loading
// ------------------------------------------------------------------------------------------
class KernelCacheLazy : public JitGpuTest {};

TEST_F(KernelCacheLazy, CompilesAndLoadsNothingBeforeTheFirstLaunch) {
  EXPECT_EQ(cache_->stats().compiles + cache_->stats().disk_hits + cache_->stats().modules_loaded,
            0)
      << "a new cache compiled or loaded something before any launch";
  check_rmsnorm<float>(*cache_, 2, 512, {128, 4}, 0);
  EXPECT_EQ(cache_->stats().compiles, 1) << "the first launch must compile exactly one kernel";
  EXPECT_EQ(cache_->stats().modules_loaded, 1) << "the first launch must load one module";
  check_rmsnorm<float>(*cache_, 2, 512, {128, 4}, 0);
  EXPECT_EQ(cache_->stats().compiles, 1) << "the second launch compiled again";
  EXPECT_EQ(cache_->stats().modules_loaded, 1) << "the second launch loaded the module again";
  cache_->clear_memory();
  check_rmsnorm<float>(*cache_, 2, 512, {128, 4}, 0);
  EXPECT_EQ(cache_->stats().disk_hits, 1) << "after clear_memory() the CUBIN must come from disk";
  EXPECT_EQ(cache_->stats().modules_loaded, 2);
}

// ------------------------------------------------------------------------------------------
// Exercise 8 — Autotune
// ------------------------------------------------------------------------------------------
class Autotune : public JitGpuTest {};

TEST_F(Autotune, TimesTheCandidatesOnceThenUsesTheRecordedWinner) {
  constexpr std::int64_t M = 192, N = 160, K = 96;
  const auto A = course::random_uniform<float>(M * K, course::seed_for(5));
  const auto B = course::random_uniform<float>(K * N, course::seed_for(6));
  course::DeviceBuffer<float> dA(A), dB(B), dC(M * N);
  const d13::Tuned<d13::GemmConfig> first =
      d13::autotune_gemm(dA.data(), dB.data(), dC.data(), M, N, K, cache_.get());
  EXPECT_FALSE(first.from_cache) << "the first tuning of a shape cannot come from the cache";
  EXPECT_EQ(first.candidates_timed, static_cast<int>(std::size(d13::kGemmCandidates)))
      << "every candidate must be timed (TODO d13.8)";
  EXPECT_GT(first.best_us, 0.0) << "the winner's median time was not reported";
  EXPECT_EQ(cache_->stats().tuning_runs, 1);
  const d13::Tuned<d13::GemmConfig> second =
      d13::autotune_gemm(dA.data(), dB.data(), dC.data(), M, N, K, cache_.get());
  EXPECT_TRUE(second.from_cache) << "the second tuning of the same shape timed again: keep the "
                                    "winner (TODO d13.8)";
  EXPECT_EQ(second.candidates_timed, 0);
  EXPECT_EQ(d13::describe(second.config), d13::describe(first.config));
  EXPECT_EQ(cache_->stats().tuning_runs, 1);
  EXPECT_EQ(count_files(dir_.path(), ".tune"), 1) << "the winner must be recorded on disk";

  d13::KernelCache fresh(dir_.path());  // a new process, in effect
  const d13::Tuned<d13::GemmConfig> third =
      d13::autotune_gemm(dA.data(), dB.data(), dC.data(), M, N, K, &fresh);
  EXPECT_TRUE(third.from_cache) << "a new cache on the same folder timed again: read the record";
  EXPECT_EQ(d13::describe(third.config), d13::describe(first.config));
  EXPECT_EQ(fresh.stats().tuning_runs, 0);
  EXPECT_EQ(fresh.stats().compiles, 0) << "reading the record must not compile anything";

  const d13::Tuned<d13::GemmConfig> other =
      d13::autotune_gemm(dA.data(), dB.data(), dC.data(), M - 1, N, K, &fresh);
  EXPECT_FALSE(other.from_cache) << "another shape must be tuned on its own";
  // The tuned launch (config {}) is correct.
  check_gemm(*cache_, M, N, K, {});
}

TEST_F(Autotune, RecordsOneWinnerPerDtypeAndHiddenSize) {
  constexpr std::int64_t kRows = 33;
  constexpr int kHidden = 3072;
  const auto x = course::random_uniform<half>(kRows * kHidden, course::seed_for(7));
  const auto w = course::random_uniform<half>(kHidden, course::seed_for(8));
  course::DeviceBuffer<half> dx(x), dw(w), dy(kRows * kHidden);
  const auto first =
      d13::autotune_rmsnorm(dx.data(), dw.data(), dy.data(), kRows, kHidden, 1e-6f, cache_.get());
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(first.candidates_timed, static_cast<int>(d13::rmsnorm_candidates(2, kHidden, 8).size()))
      << "every candidate must be timed (TODO d13.8)";
  const auto second =
      d13::autotune_rmsnorm(dx.data(), dw.data(), dy.data(), kRows, kHidden, 1e-6f, cache_.get());
  EXPECT_TRUE(second.from_cache) << "the second tuning timed again (TODO d13.8)";
  EXPECT_EQ(d13::describe(second.config), d13::describe(first.config));
  const auto other = d13::autotune_rmsnorm(dx.data(), dw.data(), dy.data(), kRows, kHidden / 2,
                                           1e-6f, cache_.get());
  EXPECT_FALSE(other.from_cache) << "another hidden size must be tuned on its own";
  EXPECT_EQ(cache_->stats().tuning_runs, 2);
}

}  // namespace
