// Day 13 tests: the JIT's host side (cache key, cache entries, atomic writes raced by two
// processes and by two threads, NVRTC, the kernel cache) runs without a GPU; the JIT-compiled
// kernels and the autotuner need one. Every test uses its own cache folder, so no test sees
// another's entries.
//
// What the grader sees (course/observe.h): every value the code under test hands back (keys,
// entries, optionals, CUBINs, statistics, tuning results, exceptions) and every file it left in
// a cache folder reaches an assertion through course::observed(...) or course::observed_throw,
// so that the grader can replay the student's values in the reference program. Values a test
// passes back into the code under test (an entry to decode, a spec to look up) are kept raw.
//
// What a kernel (or the host code) of this day can get wrong, and the test that sees it:
//   cache_key without one of its fields (source, name, options, arch, NVRTC version)
//                                      CacheKey.ChangesWithEveryInput
//   cache_key random, time-dependent, or not 64 lowercase hex digits
//                                      CacheKey.IsTheSameForTheSameInputsAndA64DigitHash
//   fields concatenated without lengths ("ab" + "c" == "a" + "bc"), no option count
//                                      CacheKey.SeparatesItsFields
//   options sorted (-DX=1 -UX is not -UX -DX=1), joined by spaces ({"-DS=a b"} against
//   {"-DS=a", "b"}), stripped of their spaces, or hashed by name only (lab.h: "the options
//   (in order)")                       CacheKey.KeepsTheOptionsInOrderAndAsWritten
//   an entry's header fields misplaced, big-endian or missing
//                                      CacheEntry.RoundTripsAndHasTheDocumentedHeader
//   decode_entry accepts a truncated or extended entry, or a size field that disagrees with
//   the payload (the size unchecked, or only bounded)
//                                      CacheEntry.RejectsTruncatedEntries
//   decode_entry accepts a flipped bit (magic, version, header size, hash)
//                                      CacheEntry.RejectsCorruptEntries
//   load() keeps, or does not count, a corrupt entry
//                                      DiskCache.DetectsDeletesAndCountsCorruptEntries
//   store() writes the final name in place (a reader sees a partial file)
//                                      DiskCache.TwoProcessesWritingTheSameKeyNever...,
//                                      DiskCache.WritesTheTemporaryFileInTheCacheFolder...
//   the temporary file made outside the cache folder (/tmp: rename is atomic only within one
//   file system)                       DiskCache.WritesTheTemporaryFileInTheCacheFolder...
//   a temporary name without a per-call counter (two threads of one pid collide)
//                                      DiskCache.TwoThreadsWritingTheSameKeyDoNotCollide
//   a temporary file left behind       DiskCache.StoresLoadsAndClears, both race tests,
//                                      DiskCache.AWriteThatFailsPartWayLeavesNothing
//   a short write taken for the whole file, a write error ignored
//                                      DiskCache.AWriteThatFailsPartWayLeavesNothing
//   no fsync before the rename, or of the folder
//                                      not testable short of a power cut: read in review (§5)
//   compile_cubin returns PTX, or not the lowered name
//                                      NvrtcCompile.CompilesARealTemplateToACubinForSm90a
//   a compile error without NVRTC's log, the line, or the numbered source line
//                                      NvrtcCompile.ACompileErrorCarriesTheLogAndTheLine
//   the kernel cache compiles again instead of answering from memory or disk
//                                      KernelCache.CompilesOnceThenHitsMemoryThenDisk
//   the memory key without the options, a memory hit without comparing the source, the disk
//   key without the spec's options     KernelCache.KeepsSpecsThatDifferInOptionsOrSourceApart
//   a corrupt or truncated entry loaded, or not rebuilt
//                                      KernelCache.RebuildsACorruptOrTruncatedEntry
//   compiling or loading before the first launch; loading a module twice
//                                      KernelCacheLazy.CompilesAndLoadsNothingBeforeTheFirst...
//   RMSNorm: a wrong dtype conversion, vector width or block reduction
//                                      RmsNormTemplate.MatchesTheReferenceForEveryDtype
//   RMSNorm: a thread's last, partial item; unaligned pointers; hidden 1 and 16384; a store
//   past the row                       RmsNormTemplate.HandlesOddSizesAndUnalignedPointers
//   RMSNorm: eps left out, or added outside the square root
//                                      RmsNormTemplate.UsesEpsInsideTheSquareRoot
//   RMSNorm: the row offset row * kHidden in 32 bits
//                                      RmsNormTemplateLargeIndex (2^31 + elements)
//   RMSNorm or GEMM: a barrier missing around shared memory
//                                      racecheck, and the template tests
//   GEMM: tile edges not zero-filled, a thread's tile mapped wrong, K not a multiple of BK
//                                      GemmTemplate.MatchesTheReferenceForEveryCandidateTile,
//                                      GemmTemplate.HandlesOddShapes
//   GEMM: A's index gm * K + gk in 32 bits
//                                      GemmTemplateLargeIndex (2^31 + elements of A)
//   autotuning that times nothing or times again, forgets the record on disk, or keys it
//   without the shape or the hidden size
//                                      Autotune.TimesTheCandidatesOnceThenUsesTheRecordedWinner,
//                                      Autotune.RecordsOneWinnerPerDtypeAndHiddenSize
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "course/large.h"
#include "course/reference/gemm.h"
#include "course/reference/norm.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::half;
using course::observed;

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

// The names of the files in `dir`, sorted: what the code under test left there.
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    names.push_back(f.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(nothing)" : out;
}

int count_files(const std::string& dir, const std::string& ext) {
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    if (f.path().extension() == ext) ++n;
  return n;
}

// The cache's counters as the code under test left them (CacheStats is plain data).
d13::CacheStats stats_of(d13::KernelCache& cache, const char* what = "KernelCache::stats()") {
  return observed(cache.stats(), what);
}

// Runs `call` (code under test), observed: false, with a failure naming `what` and the
// exception, when it threw.
// `hint` ends the message (the TODO to look at).
bool runs(const char* what, const std::function<void()>& call, const char* hint = "") {
  // Any exception counts (runtime_error or another: threw or threw_other).
  const course::Thrown t = course::observed_throw<std::runtime_error>(call, what);
  if (t.threw || t.threw_other) ADD_FAILURE() << what << " threw: " << t.what << hint;
  return !t.threw && !t.threw_other;
}

const std::string kArch = "sm_90a";  // what the host tests compile for: no GPU needed

// ------------------------------------------------------------------------------------------
// Exercise 1 — CacheKey
// ------------------------------------------------------------------------------------------
std::string key(const std::string& source, const std::string& name,
                const std::vector<std::string>& options, const std::string& arch, int version) {
  return observed(d13::cache_key(source, name, options, arch, version), "cache_key");
}

TEST(CacheKey, IsTheSameForTheSameInputsAndA64DigitHash) {
  const std::vector<std::string> options = {"-std=c++17"};
  const std::string a = key("src", "k<1>", options, "sm_90a", 13000);
  const std::string b = key("src", "k<1>", options, "sm_90a", 13000);
  ASSERT_EQ(a.size(), 64u) << "cache_key must return SHA-256 as 64 hex digits (sha256_hex); got \""
                           << a << "\" (TODO d13.1)";
  EXPECT_EQ(a, b) << "the same inputs must give the same key: is something random or "
                     "time-dependent in it?";
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(CacheKey, ChangesWithEveryInput) {
  const std::vector<std::string> options = {"-std=c++17"};
  const std::string base = key("src", "k<1>", options, "sm_90a", 13000);
  ASSERT_EQ(base.size(), 64u) << "cache_key is not written yet (TODO d13.1)";
  EXPECT_NE(base, key("src2", "k<1>", options, "sm_90a", 13000))
      << "the source is not in the key: an edited template would load the old CUBIN";
  EXPECT_NE(base, key("src", "k<2>", options, "sm_90a", 13000))
      << "the name expression is not in the key: every specialisation would share one CUBIN";
  EXPECT_NE(base, key("src", "k<1>", {"-std=c++17", "-DX"}, "sm_90a", 13000))
      << "the options are not in the key";
  EXPECT_NE(base, key("src", "k<1>", {}, "sm_90a", 13000)) << "the options are not in the key";
  EXPECT_NE(base, key("src", "k<1>", options, "sm_80", 13000))
      << "the architecture is not in the key: an sm_80 CUBIN would be loaded on sm_90";
  EXPECT_NE(base, key("src", "k<1>", options, "sm_90a", 12090))
      << "NVRTC's version is not in the key: a new compiler's fixes would never be picked up";
}

TEST(CacheKey, SeparatesItsFields) {
  // Plain concatenation would make these collide.
  EXPECT_NE(key("ab", "c", {}, "sm_90a", 13000), key("a", "bc", {}, "sm_90a", 13000))
      << "(\"ab\", \"c\") and (\"a\", \"bc\") give the same key: length-prefix each field";
  EXPECT_NE(key("s", "k", {"-a", "-b"}, "sm_90a", 13000), key("s", "k", {"-a-b"}, "sm_90a", 13000))
      << "the options {\"-a\", \"-b\"} and {\"-a-b\"} give the same key: length-prefix each";
  EXPECT_NE(key("s", "k", {"sm_90a"}, "", 13000), key("s", "k", {}, "sm_90a", 13000))
      << "an option can pass for the architecture: put the option count in the key";
}

// lab.h promises a key over "the options (in order)", each option a field of its own, and no
// normalisation: so options that compile differently must give different keys, however close
// their spelling. Each pair below means two different things to NVRTC.
TEST(CacheKey, KeepsTheOptionsInOrderAndAsWritten) {
  struct Pair {
    std::vector<std::string> a, b;
    const char* why;
  };
  const Pair pairs[] = {
      {{"-DX=1", "-UX"},
       {"-UX", "-DX=1"},
       "the same two options in the other order give the same key, but they mean different "
       "things (the later -D / -U of a macro wins: X is undefined after the first, 1 after the "
       "second). Keep the options in their order (lab.h: \"the options (in order)\"); do not "
       "sort them"},
      {{"-DS=a b"},
       {"-DS=a", "b"},
       "one option holding a space and two options give the same key: joining the options with "
       "spaces loses where one ends. Length-prefix each option as a field of its own"},
      {{"-DS=a b"},
       {"-DS=ab"},
       "options that differ only in a space give the same key, but S expands to two tokens in "
       "one and one token in the other: hash every option exactly as written"},
      {{"-DX=1"},
       {"-DX=2"},
       "options that differ only in a macro's value give the same key: hash the whole option, "
       "not its name"},
  };
  for (const Pair& p : pairs) {
    const std::string a = key("s", "k<1>", p.a, "sm_90a", 13000);
    ASSERT_EQ(a.size(), 64u) << "cache_key is not written yet (TODO d13.1)";
    EXPECT_NE(a, key("s", "k<1>", p.b, "sm_90a", 13000))
        << "{" << joined(p.a) << "} and {" << joined(p.b) << "}: " << p.why << " (lesson §3)";
  }
}

// ------------------------------------------------------------------------------------------
// Exercise 2 — CacheEntry
// ------------------------------------------------------------------------------------------
std::string sample_payload() {
  std::string p = "_Z18d13_rmsnorm_kernel\n";
  for (int i = 0; i < 3000; ++i) p.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  return p;
}

// Whether decode_entry accepted `bytes` (observed).
bool decodes(const std::string& bytes, const char* what) {
  return observed(d13::decode_entry(bytes).has_value(), what);
}

TEST(CacheEntry, RoundTripsAndHasTheDocumentedHeader) {
  const std::string payload = sample_payload();
  const std::string entry = observed(d13::encode_entry(payload), "encode_entry");
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
  EXPECT_EQ(entry.substr(d13::kEntryHeaderBytes), payload) << "the payload follows the header";
  // decode_entry gets encode_entry's own bytes, not the observed copy (course/observe.h).
  const std::optional<std::string> back =
      observed(d13::decode_entry(d13::encode_entry(payload)), "decode_entry(encode_entry(p))");
  ASSERT_TRUE(back.has_value()) << "decode_entry rejected what encode_entry wrote";
  EXPECT_EQ(*back, payload);
  const std::optional<std::string> empty =
      observed(d13::decode_entry(d13::encode_entry("")), "decode_entry(encode_entry(\"\"))");
  ASSERT_TRUE(empty.has_value()) << "an empty payload is a valid entry";
  EXPECT_EQ(*empty, "");
}

TEST(CacheEntry, RejectsTruncatedEntries) {
  const std::string entry = d13::encode_entry(sample_payload());
  ASSERT_GT(observed(entry.size(), "encode_entry's size"), d13::kEntryHeaderBytes)
      << "encode_entry is not written (TODO d13.2)";
  ASSERT_TRUE(decodes(entry, "a whole entry")) << "decode_entry rejects a good entry";
  for (const std::size_t keep : {std::size_t{0}, std::size_t{7}, d13::kEntryHeaderBytes - 1,
                                 d13::kEntryHeaderBytes, entry.size() / 2, entry.size() - 1})
    EXPECT_FALSE(decodes(entry.substr(0, keep), "a truncated entry"))
        << "an entry cut to " << keep << " of its " << entry.size()
        << " bytes was accepted: compare the payload size in the header with what is there";
  EXPECT_FALSE(decodes(entry + "x", "an extended entry"))
      << "an entry with a byte too many was accepted: the size must match exactly";
  // The size field against what follows the header, with the checksum left whole: a field one
  // smaller or one larger than the payload it stands before is another file, not this entry.
  for (const int delta : {-1, 1}) {
    std::string bad = entry;
    std::uint64_t size = 0;
    for (int i = 0; i < 8; ++i)
      size |= std::uint64_t{static_cast<unsigned char>(bad[16 + i])} << (8 * i);
    size += static_cast<std::uint64_t>(static_cast<std::int64_t>(delta));
    for (int i = 0; i < 8; ++i) bad[16 + i] = static_cast<char>((size >> (8 * i)) & 0xff);
    EXPECT_FALSE(decodes(bad, "an entry whose size field is off by one"))
        << "an entry whose size field says " << size << " before a payload of "
        << entry.size() - d13::kEntryHeaderBytes << " bytes (checksum intact) was accepted: "
        << "the size field must equal what follows the header exactly (lab.h)";
  }
}

TEST(CacheEntry, RejectsCorruptEntries) {
  const std::string entry = d13::encode_entry(sample_payload());
  ASSERT_GT(observed(entry.size(), "encode_entry's size"), d13::kEntryHeaderBytes)
      << "encode_entry is not written (TODO d13.2)";
  ASSERT_TRUE(decodes(entry, "a whole entry")) << "decode_entry rejects a good entry";
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
    EXPECT_FALSE(decodes(bad, "an entry with a flipped bit"))
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
  if (!runs(
          "DiskCache::store", [&] { cache.store("abc", "cubin", payload); }, " (TODO d13.3)"))
    return;
  const std::optional<std::string> back = observed(cache.load("abc", "cubin"), "load(abc)");
  ASSERT_TRUE(back.has_value()) << "load() did not find what store() wrote (TODO d13.3)";
  EXPECT_EQ(*back, payload);
  // lab.h: one file per key, <dir>/<key>.<ext>, holding the entry of Exercise 2.
  EXPECT_EQ(observed(read_file(dir.path() + "/abc.cubin"), "the file store() wrote"),
            d13::encode_entry(payload))
      << "<dir>/abc.cubin must hold the entry of Exercise 2";
  EXPECT_FALSE(observed(cache.load("abd", "cubin").has_value(), "load(abd)"))
      << "a missing key was found";
  EXPECT_FALSE(observed(cache.load("abc", "tune").has_value(), "load(abc, tune)"))
      << "another extension was found";
  const std::vector<std::string> left = observed(files_in(dir.path()), "the cache folder");
  EXPECT_EQ(left, std::vector<std::string>{"abc.cubin"})
      << "the cache folder must hold abc.cubin and nothing else after one store(); it holds: "
      << joined(left) << " (a temporary file left behind?)";
  cache.clear();
  EXPECT_FALSE(observed(cache.load("abc", "cubin").has_value(), "load after clear"))
      << "clear() left an entry";
}

TEST(DiskCache, DetectsDeletesAndCountsCorruptEntries) {
  TempDir dir;
  d13::DiskCache cache(dir.path());
  const std::string entry = d13::encode_entry(sample_payload());
  ASSERT_GT(observed(entry.size(), "encode_entry's size"), d13::kEntryHeaderBytes)
      << "encode_entry is not written (TODO d13.2)";
  const auto path = [&](const std::string& key) { return dir.path() + "/" + key + ".cubin"; };
  write_file(path("trunc"), entry.substr(0, entry.size() - 100));
  std::string flipped = entry;
  flipped[entry.size() / 2] ^= 1;
  write_file(path("flip"), flipped);
  write_file(path("good"), entry);
  EXPECT_FALSE(observed(cache.load("trunc", "cubin").has_value(), "load(trunc)"))
      << "a truncated entry was loaded";
  EXPECT_FALSE(observed(cache.load("flip", "cubin").has_value(), "load(flip)"))
      << "a corrupt entry was loaded";
  EXPECT_EQ(observed(cache.corrupt_entries(), "corrupt_entries()"), 2)
      << "each broken entry found must be counted";
  EXPECT_FALSE(observed(std::filesystem::exists(path("trunc")), "trunc.cubin exists"))
      << "a broken entry must be deleted, so that it is rebuilt";
  EXPECT_FALSE(observed(std::filesystem::exists(path("flip")), "flip.cubin exists"))
      << "a broken entry must be deleted, so that it is rebuilt";
  EXPECT_TRUE(observed(cache.load("good", "cubin").has_value(), "load(good)"))
      << "a good entry written by someone else must load (TODO d13.3)";
}

// Two PROCESSES store the same key, each with its own payload, kRaceWrites times, while this
// process reads it over and over: every read must be a whole entry of one of the two. The reads
// are timed by the scheduler, so only their counts are observed, once, at the end.
TEST(DiskCache, TwoProcessesWritingTheSameKeyNeverLeaveAPartialFile) {
  constexpr int kRaceWrites = 100;
  constexpr int kMaxReads = 3000;  // each read compares 16 kB: bounded, so the test stays short
  TempDir dir;
  const std::string key = "race";
  std::string payloads[2], entries[2];
  for (int p = 0; p < 2; ++p) {
    payloads[p] = std::string(16 * 1024, static_cast<char>('a' + p));
    payloads[p] += "writer " + std::to_string(p);
    entries[p] = d13::encode_entry(payloads[p]);  // what a whole file of writer p holds
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
    if (bytes == entries[0] || bytes == entries[1])
      ++whole;
    else
      ++partial;
  }
  for (int p = 0; p < 2; ++p)
    EXPECT_TRUE(observed(WIFEXITED(status[p]) && WEXITSTATUS(status[p]) == 0, "writer exited 0"))
        << "writer process " << p << " failed: store() or write_file_atomically() threw "
        << "(TODO d13.3)";
  reads = observed(reads, "reads");
  EXPECT_EQ(observed(partial, "partial reads"), 0)
      << partial << " of " << reads << " reads saw a partial or mixed file: "
      << "write to a temporary file in the same folder, fsync, then rename";
  EXPECT_GT(observed(whole, "whole reads"), 0)
      << "no read saw a whole entry: does store() write the file (TODO d13.3)?";
  const std::string last = observed(read_file(path), "the file left at the end");
  EXPECT_TRUE(last == entries[0] || last == entries[1])
      << "the file left at the end is not a whole entry of either writer";
  const std::vector<std::string> left = observed(files_in(dir.path()), "the cache folder");
  EXPECT_EQ(left, std::vector<std::string>{key + ".cubin"})
      << "the cache folder must hold " << key
      << ".cubin and nothing else; it holds: " << joined(left)
      << " (a temporary file left behind?)";
}

// Two THREADS of one process store the same key at once, kWrites times each: they share the pid,
// so the temporary file's name needs more than the pid to be unique (lesson §5: a counter). A
// shared name makes one thread's open fail (O_EXCL), its rename fail (the other renamed the file
// away) or the two interleave in one file. The threads only count; what they counted is observed
// after they are joined, in a fixed order.
TEST(DiskCache, TwoThreadsWritingTheSameKeyDoNotCollide) {
  constexpr int kWrites = 100;
  TempDir dir;
  std::string payloads[2], entries[2], first_error[2];
  int failures[2] = {0, 0};
  for (int t = 0; t < 2; ++t) {
    payloads[t] = std::string(16 * 1024, static_cast<char>('p' + t));
    entries[t] = d13::encode_entry(payloads[t]);
  }
  std::atomic<int> ready{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t)
    writers.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < 2) {  // start together, so that the writes overlap
      }
      for (int i = 0; i < kWrites; ++i) {
        try {  // nothing may escape a thread: std::terminate would end every test
          d13::DiskCache cache(dir.path());
          cache.store("race", "cubin", payloads[t]);
        } catch (const std::exception& e) {
          if (failures[t]++ == 0) first_error[t] = e.what();
        } catch (...) {
          if (failures[t]++ == 0) first_error[t] = "an exception that is not a std::exception";
        }
      }
    });
  for (std::thread& w : writers) w.join();
  for (int t = 0; t < 2; ++t) {
    const int failed = observed(failures[t], "failed stores of a thread");
    const std::string error = observed(first_error[t], "the first error of a thread");
    EXPECT_EQ(failed, 0) << "thread " << t << ": " << failed << " of " << kWrites
                         << " stores threw while another thread stored the same key, the first: "
                         << error
                         << ". Do the two threads use the same temporary file? Its name needs "
                            "the pid AND a per-call counter (an std::atomic), lesson §5";
  }
  const std::string last = observed(read_file(dir.path() + "/race.cubin"), "the last file");
  EXPECT_TRUE(last == entries[0] || last == entries[1])
      << "after two threads stored race.cubin, the file is not a whole entry of either (TODO "
         "d13.3)";
  const std::vector<std::string> left = observed(files_in(dir.path()), "the cache folder");
  EXPECT_EQ(left, std::vector<std::string>{"race.cubin"})
      << "the cache folder must hold race.cubin and nothing else; it holds: " << joined(left);
}

// What a folder saw, from inotify(7): the kernel queues a watched folder's events as the calls
// that cause them return, so once the code under test has returned, all of its events are there.
// A rename within the folder queues IN_MOVED_FROM (the old name) and IN_MOVED_TO (the new one)
// with the same cookie; a file renamed INTO the folder from elsewhere only IN_MOVED_TO.
class FolderWatch {
 public:
  explicit FolderWatch(const std::string& dir) {
    fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ >= 0 &&
        ::inotify_add_watch(fd_, dir.c_str(),
                            IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO) < 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (fd_ < 0) error_ = std::strerror(errno);
  }
  ~FolderWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  FolderWatch(const FolderWatch&) = delete;
  FolderWatch& operator=(const FolderWatch&) = delete;
  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

  struct Event {
    std::uint32_t mask = 0, cookie = 0;
    std::string name;
  };
  // The events queued so far.
  std::vector<Event> drain() {
    std::vector<Event> events;
    alignas(inotify_event) char buffer[64 * 1024];
    for (;;) {
      const ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n <= 0) break;  // EAGAIN: nothing more
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
        events.push_back({e->mask, e->cookie, e->len > 0 ? std::string(e->name) : ""});
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
    return events;
  }

 private:
  int fd_ = -1;
  std::string error_;
};

// What the writes of one file did to its folder: plain data, observed as one value.
struct WriteTrace {
  int renamed_onto = 0;         // IN_MOVED_TO of the final name
  int renamed_from_folder = 0;  // ... whose IN_MOVED_FROM was in the same folder
  int written_in_place = 0;     // IN_CREATE or IN_CLOSE_WRITE of the final name itself
};

WriteTrace trace_of(const std::vector<FolderWatch::Event>& events, const std::string& name,
                    std::string* text) {
  WriteTrace t;
  for (const auto& e : events) {
    const bool final_name = e.name == name;
    if ((e.mask & IN_MOVED_TO) && final_name) {
      ++t.renamed_onto;
      for (const auto& from : events)
        if ((from.mask & IN_MOVED_FROM) && from.cookie == e.cookie) ++t.renamed_from_folder;
    }
    if ((e.mask & (IN_CREATE | IN_CLOSE_WRITE)) && final_name) ++t.written_in_place;
    const char* kind = (e.mask & IN_CREATE)        ? "created"
                       : (e.mask & IN_CLOSE_WRITE) ? "written"
                       : (e.mask & IN_MOVED_FROM)  ? "renamed away"
                       : (e.mask & IN_MOVED_TO)    ? "renamed onto"
                                                   : "other event on";
    *text += std::string(text->empty() ? "" : "; ") + kind + " " + e.name;
  }
  if (text->empty()) *text = "(nothing)";
  return t;
}

// write_file_atomically writes a temporary file in the SAME folder and renames it over the final
// name (lab.h): rename(2) replaces a name atomically only within one file system, and the system's
// temporary folder is often another one (the rename then fails with EXDEV, or a copy makes the
// final name appear piece by piece). The test watches the cache folder while the file is written
// twice (created, then replaced): each write must end in a rename onto the final name from a file
// of the same folder, and the final name must never be written in place.
TEST(DiskCache, WritesTheTemporaryFileInTheCacheFolderAndRenamesIt) {
  TempDir dir;
  const std::string name = "entry.cubin", path = dir.path() + "/" + name;
  FolderWatch watch(dir.path());
  if (!watch.ok()) GTEST_SKIP() << "inotify is not available here: " << watch.error();
  // The events are read after each write: inotify merges an event with an identical one still
  // unread, which would make two renames onto the same name look like one.
  std::vector<FolderWatch::Event> events;
  for (const char* bytes : {"first", "second"}) {
    if (!runs(
            "write_file_atomically", [&] { d13::write_file_atomically(path, bytes); },
            " (TODO d13.3)"))
      return;
    for (FolderWatch::Event& e : watch.drain()) events.push_back(std::move(e));
  }
  std::string text;
  const WriteTrace t = observed(trace_of(events, name, &text), "what the folder saw");
  text = observed(text, "what the folder saw, in words");
  EXPECT_EQ(t.renamed_onto, 2) << "two writes of " << name
                               << " must end in two renames onto it (temporary file, fsync, "
                               << "rename: lesson §5); the cache folder saw: " << text;
  EXPECT_EQ(t.renamed_from_folder, t.renamed_onto)
      << "the file renamed onto " << name << " was not made in the cache's folder: a temporary "
      << "file elsewhere (std::filesystem::temp_directory_path(), /tmp) is renamed across file "
      << "systems, which is not atomic and often fails (EXDEV). Make it next to the final file: "
      << "path + \".tmp.\" + pid + counter (lesson §5). The cache folder saw: " << text;
  EXPECT_EQ(t.written_in_place, 0)
      << name << " itself was created or written: a reader can see it half written. Write a "
      << "temporary file and rename it (lesson §5). The cache folder saw: " << text;
  EXPECT_EQ(observed(read_file(path), "the file after two writes"), "second")
      << "the second write must replace the first";
  const std::vector<std::string> left = observed(files_in(dir.path()), "the cache folder");
  EXPECT_EQ(left, std::vector<std::string>{name})
      << "the folder must hold " << name << " and nothing else; it holds: " << joined(left);
}

// write() may write fewer bytes than asked (a full disk, a file-size limit, a signal): the rest
// must be written too, or the call must fail and leave nothing. A child process sets a file-size
// limit below the file's size (RLIMIT_FSIZE, SIGXFSZ ignored: write() then writes what fits and
// fails with EFBIG), so that a loop that stops after one short write renames a truncated file
// onto the final name, and a failure that keeps its temporary file leaves it in the folder.
TEST(DiskCache, AWriteThatFailsPartWayLeavesNothing) {
  TempDir dir;
  const std::string path = dir.path() + "/entry.cubin";
  const std::string bytes(64 * 1024, 'x');
  constexpr rlim_t kLimit = 4096;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0) << "fork failed";
  if (child == 0) {  // the child: write under the limit, and leave without running test code
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{};
    int status = 3;  // 3: the limit could not be set
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0) {
      limit.rlim_cur = kLimit;
      if (::setrlimit(RLIMIT_FSIZE, &limit) == 0) {
        try {
          d13::write_file_atomically(path, bytes);
          status = 0;
        } catch (const std::runtime_error&) {
          status = 1;
        } catch (...) {
          status = 2;
        }
      }
    }
    ::_exit(status);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = observed(WIFEXITED(status) ? WEXITSTATUS(status) : 100, "the writer's exit");
  if (code == 3) GTEST_SKIP() << "this machine does not let a process lower RLIMIT_FSIZE";
  EXPECT_NE(code, 0) << "write_file_atomically returned although only " << kLimit << " of its "
                     << bytes.size() << " bytes could be written (a file-size limit): write "
                     << "until every byte is written, and throw when write() fails (lesson §5)";
  EXPECT_NE(code, 2) << "write_file_atomically threw something other than std::runtime_error "
                     << "(TODO d13.3)";
  EXPECT_NE(code, 100) << "the writer process died (a signal): SIGXFSZ was ignored, so a write "
                       << "past the limit fails with EFBIG instead";
  EXPECT_FALSE(observed(std::filesystem::exists(path), "the final name exists"))
      << "a file was renamed onto " << path << " although the write failed part-way";
  const std::vector<std::string> left = observed(files_in(dir.path()), "the cache folder");
  EXPECT_TRUE(left.empty()) << "a write that fails must remove its temporary file; the folder "
                            << "holds: " << joined(left);
}

// ------------------------------------------------------------------------------------------
// Exercise 4 — NvrtcCompile
// ------------------------------------------------------------------------------------------
TEST(NvrtcCompile, CompilesARealTemplateToACubinForSm90a) {
  const d13::KernelSpec spec = d13::rmsnorm_spec("bfloat16", 4096, {256, 8});
  d13::Cubin cubin;
  const auto compile = [&] {
    cubin = d13::compile_cubin(spec.source, spec.name_expression, spec.options, kArch);
  };
  if (!runs("compile_cubin", compile, " (TODO d13.4)")) return;
  EXPECT_EQ(observed(cubin.image.substr(0, 4), "the CUBIN's first 4 bytes"),
            "\x7f"
            "ELF")
      << "a CUBIN is an ELF image: ask NVRTC for "
         "the CUBIN (nvrtcGetCUBIN), not the PTX";
  const std::string lowered = observed(cubin.lowered_name, "lowered name");
  EXPECT_EQ(lowered.rfind("_Z", 0), 0u)
      << "the lowered name must be the mangled symbol (nvrtcGetLoweredName), got \"" << lowered
      << "\"";
  EXPECT_NE(lowered.find("d13_rmsnorm_kernel"), std::string::npos);
  EXPECT_TRUE(observed(
      !cubin.lowered_name.empty() && cubin.image.find(cubin.lowered_name) != std::string::npos,
      "the CUBIN holds the lowered name"))
      << "the CUBIN does not hold the kernel's symbol";
  const d13::KernelSpec gemm = d13::gemm_spec(d13::kGemmCandidates[1]);
  d13::Cubin g;
  if (runs("compile_cubin(the GEMM template)",
           [&] { g = d13::compile_cubin(gemm.source, gemm.name_expression, gemm.options, kArch); }))
    EXPECT_NE(observed(g.lowered_name, "the GEMM's lowered name"), lowered);
}

TEST(NvrtcCompile, ACompileErrorCarriesTheLogAndTheLine) {
  const std::string source =
      "template <int N>\n"                                            // line 1
      "__global__ void broken_kernel(float* y) {\n"                   // line 2
      "  y[threadIdx.x] = N * undefined_variable_in_the_template;\n"  // line 3
      "}\n";                                                          // line 4
  std::string log;
  const course::Thrown t = course::observed_throw<d13::CompileError>(
      [&] {
        try {
          d13::compile_cubin(source, "broken_kernel<4>", {"-std=c++17"}, kArch);
        } catch (const d13::CompileError& e) {
          log = e.log();
          throw;
        }
      },
      "compile_cubin(a broken source)");
  log = observed(log, "CompileError::log()");
  ASSERT_FALSE(t.threw_other) << "compile_cubin threw something other than d13::CompileError: "
                              << t.what << " (TODO d13.4)";
  ASSERT_TRUE(t.threw) << "a source with an undefined name compiled";
  const std::string& what = t.what;
  EXPECT_NE(log.find("undefined_variable_in_the_template"), std::string::npos)
      << "CompileError::log() must hold NVRTC's log; it is:\n"
      << log;
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
}

// ------------------------------------------------------------------------------------------
// Exercise 5 — KernelCache (host: CUBINs only)
// ------------------------------------------------------------------------------------------
// get_cubin(spec)'s image into *image (raw: only comparisons of it are observed); false, with a
// failure, when it threw.
bool get_image(d13::KernelCache& cache, const d13::KernelSpec& spec, std::string* image,
               const char* what = "KernelCache::get_cubin") {
  return runs(
      what, [&] { *image = cache.get_cubin(spec).image; }, " (TODO d13.5)");
}

TEST(KernelCache, CompilesOnceThenHitsMemoryThenDisk) {
  TempDir dir;
  const d13::KernelSpec spec = d13::rmsnorm_spec("float32", 1000, {128, 4});
  std::string image, again;
  {
    d13::KernelCache cache(dir.path(), kArch);
    EXPECT_EQ(stats_of(cache).compiles, 0) << "a new cache compiled something: compile lazily";
    if (!get_image(cache, spec, &image)) return;
    EXPECT_EQ(stats_of(cache).compiles, 1) << "the first get must compile";
    if (!get_image(cache, spec, &again)) return;
    EXPECT_TRUE(observed(again == image, "the second get's CUBIN is the first's"));
    const d13::CacheStats s = stats_of(cache);
    EXPECT_EQ(s.compiles, 1) << "the second get compiled again: keep it in memory";
    EXPECT_EQ(s.memory_hits, 1);
    EXPECT_EQ(observed(count_files(dir.path(), ".cubin"), "CUBINs on disk"), 1)
        << "the CUBIN must be stored on disk";
  }
  d13::KernelCache fresh(dir.path(), kArch);  // a new process, in effect
  if (!get_image(fresh, spec, &again)) return;
  EXPECT_TRUE(observed(again == image, "the disk's CUBIN is the compiled one"));
  const d13::CacheStats s = stats_of(fresh);
  EXPECT_EQ(s.compiles, 0) << "a new cache on the same folder compiled: load the CUBIN stored on "
                              "disk";
  EXPECT_EQ(s.disk_hits, 1);
  const d13::KernelSpec other = d13::rmsnorm_spec("float32", 1000, {256, 4});
  if (!get_image(fresh, other, &again)) return;
  EXPECT_EQ(stats_of(fresh).compiles, 1) << "another specialisation must be compiled";
  d13::KernelCache other_arch(dir.path(), "sm_80");
  if (!get_image(other_arch, spec, &again)) return;
  EXPECT_EQ(stats_of(other_arch).compiles, 1) << "an sm_80 cache loaded the sm_90a CUBIN";
}

// A kernel whose code depends on a macro that only the options define: two specs of this source
// and name expression with different -DD13_SCALE options compile to different CUBINs (the
// constant is an immediate operand of the multiply), and so does the edited source.
constexpr const char* kScaleSource =
    "template <int N>\n"
    "__global__ void d13_scale_kernel(float* y) { y[threadIdx.x] *= N * D13_SCALE; }\n";
constexpr const char* kScaleSourceEdited =
    "template <int N>\n"
    "__global__ void d13_scale_kernel(float* y) { y[threadIdx.x] += N * D13_SCALE; }\n";

// Which level answered a get, from the statistics before and after it: for the messages.
std::string answered_by(const d13::CacheStats& before, const d13::CacheStats& after) {
  if (after.memory_hits > before.memory_hits) return "it was answered from memory";
  if (after.disk_hits > before.disk_hits) return "it was answered from disk";
  return "it was not compiled";
}

TEST(KernelCache, KeepsSpecsThatDifferInOptionsOrSourceApart) {
  TempDir dir;
  const d13::KernelSpec a{
      "d13_scale", kScaleSource, "d13_scale_kernel<1>", {"-std=c++17", "-DD13_SCALE=2.0f"}};
  d13::KernelSpec b = a;
  b.options[1] = "-DD13_SCALE=3.0f";
  d13::KernelSpec c = a;
  c.source = kScaleSourceEdited;
  std::string image_a, image_b, image_c, again;
  d13::KernelCache cache(dir.path(), kArch);
  if (!get_image(cache, a, &image_a, "get_cubin(a)")) return;
  const d13::CacheStats after_a = stats_of(cache);
  if (!get_image(cache, b, &image_b, "get_cubin(b)")) return;
  const d13::CacheStats after_b = stats_of(cache);
  EXPECT_EQ(after_b.compiles, after_a.compiles + 1)
      << "b has a's source and name expression but other options (-DD13_SCALE=3.0f, not 2.0f), "
      << "and " << answered_by(after_a, after_b) << ": the memory key must hold the options "
      << "(the name expression and every option), and the disk key is cache_key of the spec's "
      << "own options (lesson §7.1)";
  EXPECT_FALSE(observed(image_b == image_a, "b's CUBIN is a's"))
      << "b got a's CUBIN: its -DD13_SCALE=3.0f was never compiled";
  if (!get_image(cache, a, &again, "get_cubin(a) again")) return;
  const d13::CacheStats after_a2 = stats_of(cache);
  EXPECT_EQ(after_a2.memory_hits, after_b.memory_hits + 1)
      << "a, asked again, must come from memory";
  EXPECT_TRUE(observed(again == image_a, "a's CUBIN, asked again"))
      << "a, asked again, did not get its own CUBIN";
  if (!get_image(cache, c, &image_c, "get_cubin(c)")) return;
  const d13::CacheStats after_c = stats_of(cache);
  EXPECT_EQ(after_c.compiles, after_a2.compiles + 1)
      << "c has a's name expression and options but an edited source, and "
      << answered_by(after_a2, after_c) << ": a memory hit needs the stored source to equal the "
      << "spec's (lesson §7.1)";
  EXPECT_FALSE(observed(image_c == image_a, "c's CUBIN is a's"))
      << "c got a's CUBIN: an edited template would run yesterday's code";
  d13::KernelCache fresh(dir.path(), kArch);  // a new process, in effect
  if (!get_image(fresh, b, &again, "get_cubin(b) in a new cache")) return;
  EXPECT_TRUE(observed(again == image_b, "b's CUBIN from disk"))
      << "a new cache on the same folder did not load b's own CUBIN from disk";
  EXPECT_EQ(stats_of(fresh).disk_hits, 1) << "b was stored on disk: a new cache must load it";
}

TEST(KernelCache, RebuildsACorruptOrTruncatedEntry) {
  TempDir dir;
  const d13::KernelSpec spec = d13::gemm_spec(d13::kGemmCandidates[0]);
  std::string image, again;
  {
    d13::KernelCache cache(dir.path(), kArch);
    if (!get_image(cache, spec, &image)) return;
  }
  std::string path;
  for (const auto& f : std::filesystem::directory_iterator(dir.path()))
    if (f.path().extension() == ".cubin") path = f.path().string();
  ASSERT_FALSE(observed(path.empty(), "no CUBIN on disk")) << "no CUBIN was stored on disk";
  const std::string original = read_file(path);
  for (const bool truncate : {true, false}) {
    std::string bytes = original;
    if (truncate)
      bytes.resize(bytes.size() / 2);
    else
      bytes[bytes.size() - 10] ^= 0x40;
    write_file(path, bytes);
    d13::KernelCache cache(dir.path(), kArch);
    const char* what = truncate ? "truncated" : "corrupt";
    if (!get_image(cache, spec, &again)) return;
    EXPECT_TRUE(observed(again == image, "the rebuilt CUBIN"))
        << "after the " << what << " entry, get_cubin returned another CUBIN";
    const d13::CacheStats s = stats_of(cache);
    EXPECT_EQ(s.corrupt_entries, 1) << "the " << what << " entry was not detected";
    EXPECT_EQ(s.compiles, 1) << "the " << what << " entry was not rebuilt";
    // The rebuilt file must be the entry that was there before it was damaged (the compile is
    // deterministic).
    EXPECT_TRUE(observed(read_file(path) == original, "the rebuilt entry is whole"))
        << "the rebuilt entry on disk is not the whole entry that was there before";
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

struct RmsNormInputs {
  double lo = -1.0, hi = 1.0;  // x uniform in [lo, hi)
  float eps = 1e-6f;
};

template <class T>
void check_rmsnorm(d13::KernelCache& cache, std::int64_t rows, int hidden, d13::RmsNormConfig c,
                   std::size_t offset, RmsNormInputs in = {}) {
  const auto x = course::random_uniform<T>(rows * hidden, course::seed_for(1), in.lo, in.hi);
  const auto w = course::random_uniform<T>(hidden, course::seed_for(2));
  course::Guarded<T> dx(x, offset), dw(w, offset), dy(rows * hidden, offset);
  SCOPED_TRACE(std::string(course::DType<T>::name) + " rows=" + std::to_string(rows) + " hidden=" +
               std::to_string(hidden) + " eps=" + std::to_string(in.eps) + " " + d13::describe(c));
  if (!runs("d13::rmsnorm", [&] {
        d13::rmsnorm(dx.data(), dw.data(), dy.data(), rows, hidden, in.eps, c, &cache);
        COURSE_CUDA_CHECK(cudaDeviceSynchronize());
      }))
    return;
  const auto ref = course::reference::rmsnorm(course::as_doubles(x), course::as_doubles(w), rows,
                                              hidden, in.eps);
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

// Rows of values around 1e-3: their mean square (~3e-7) is far below eps = 1e-4, so a kernel
// that leaves eps out (or adds it after the square root) is off by a factor of ~20.
TEST_F(RmsNormTemplate, UsesEpsInsideTheSquareRoot) {
  check_rmsnorm<float>(*cache_, 4, 1024, {128, 4}, 0, {-1e-3, 1e-3, 1e-4f});
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
  if (!runs("d13::gemm", [&] {
        d13::gemm(dA.data(), dB.data(), dC.data(), M, N, K, c, &cache);
        COURSE_CUDA_CHECK(cudaDeviceSynchronize());
      }))
    return;
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
// 64-bit indices: just over 2^31 elements, filled on the GPU with a pattern the host recomputes
// at any index (course/large.h), checked on whole rows at the start, around 2^31 and at the end.
// They run alone on the GPU (lab.json's serial_suites) and are left out of the sanitizer runs.
// ------------------------------------------------------------------------------------------
std::vector<double> pattern_row(const course::Pattern& p, std::int64_t row, std::int64_t cols,
                                bool as_half) {
  std::vector<double> out(static_cast<std::size_t>(cols));
  for (std::int64_t c = 0; c < cols; ++c)
    out[static_cast<std::size_t>(c)] = as_half
                                           ? course::pattern_double_value<half>(p, row * cols + c)
                                           : course::pattern_double_value<float>(p, row * cols + c);
  return out;
}

class RmsNormTemplateLargeIndex : public JitGpuTest {};

// half rows of the largest hidden size, 16384: row * hidden passes 2^31 at row 131072.
TEST_F(RmsNormTemplateLargeIndex, NormalisesRowsPastTwoToThe31) {
  constexpr int kHidden = d13::kMaxHidden;
  constexpr float kEps = 1e-6f;
  const std::int64_t rows = course::large_rows(kHidden), n = rows * kHidden;
  COURSE_SKIP_UNLESS_GPU_MEMORY(2 * static_cast<std::size_t>(n) * sizeof(half));  // 8.6 GB
  const course::Pattern px{course::seed_for(91), -1.0, 1.0}, pw{course::seed_for(92), 0.5, 1.5};
  course::DeviceBuffer<half> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n)),
      w(kHidden);
  course::fill_pattern(x.data(), n, px);
  course::fill_pattern(w.data(), kHidden, pw);
  course::poison_on_device(y.data(), n);
  if (!runs("d13::rmsnorm", [&] {
        d13::rmsnorm(x.data(), w.data(), y.data(), rows, kHidden, kEps, {1024, 8}, cache_.get());
        COURSE_CUDA_CHECK(cudaDeviceSynchronize());
      }))
    return;
  const auto sampled = course::large_sample_rows(rows, kHidden, course::seed_for(93));
  const auto at = course::indices_of_rows(sampled, kHidden);
  const auto got = course::gather(y.data(), n, at);  // observed
  const auto weights = pattern_row(pw, 0, kHidden, true);
  std::vector<double> want;
  for (const std::int64_t r : sampled) {
    const auto row =
        course::reference::rmsnorm(pattern_row(px, r, kHidden, true), weights, 1, kHidden, kEps);
    want.insert(want.end(), row.begin(), row.end());
  }
  course::CompareOptions options;
  options.what = "y of float16 [" + std::to_string(rows) + ", 16384] (2^31 + " +
                 std::to_string(n - course::kTwoTo31) +
                 " elements; TODO d13.6: the row's offset row * kHidden in 64 bits)";
  COURSE_EXPECT_SAMPLES_MATCH(got, want, at, options);
}

class GemmTemplateLargeIndex : public JitGpuTest {};

// A [M, K] with M * K just over 2^31 floats and N = 32: A's index gm * K + gk wraps in 32 bits
// from row 2^31 / K on. (C's index m * N + n stays below 2^31: A is what this test is about.)
TEST_F(GemmTemplateLargeIndex, ReadsRowsOfAPastTwoToThe31) {
  constexpr std::int64_t K = 1024, N = 32;
  const std::int64_t M = course::large_rows(K);  // 2^21 + 2^14 + 1 rows
  const std::int64_t a_elems = M * K;
  COURSE_SKIP_UNLESS_GPU_MEMORY(static_cast<std::size_t>(a_elems + M * N + K * N) * 4);  // 8.7 GB
  const course::Pattern pa{course::seed_for(94), -1.0, 1.0}, pb{course::seed_for(95), -1.0, 1.0};
  course::DeviceBuffer<float> A(static_cast<std::size_t>(a_elems)), B(K * N),
      C(static_cast<std::size_t>(M * N));
  course::fill_pattern(A.data(), a_elems, pa);
  course::fill_pattern(B.data(), K * N, pb);
  course::poison_on_device(C.data(), M * N);
  if (!runs("d13::gemm", [&] {
        d13::gemm(A.data(), B.data(), C.data(), M, N, K, d13::kGemmCandidates[1], cache_.get());
        COURSE_CUDA_CHECK(cudaDeviceSynchronize());
      }))
    return;
  // The rows of C whose row of A starts around 2^31, and the first and last rows.
  const auto sampled = course::large_sample_rows(M, K, course::seed_for(96));
  const auto at = course::indices_of_rows(sampled, N);
  const auto got = course::gather(C.data(), M * N, at);  // observed
  std::vector<double> b(static_cast<std::size_t>(K * N));
  for (std::int64_t i = 0; i < K * N; ++i)
    b[static_cast<std::size_t>(i)] = course::pattern_double_value<float>(pb, i);
  std::vector<double> want;
  for (const std::int64_t m : sampled) {
    const auto a_row = pattern_row(pa, m, K, false);
    const auto c_row = course::reference::gemm(
        a_row, b, 1, N, K, course::reference::BLayout::kRowMajor, [](double v) { return v; });
    want.insert(want.end(), c_row.begin(), c_row.end());
  }
  course::CompareOptions options;
  options.what = "C of A [" + std::to_string(M) + ", 1024] (2^31 + " +
                 std::to_string(a_elems - course::kTwoTo31) +
                 " elements) times B [1024, 32] (TODO d13.7: A's index gm * K + gk in 64 bits)";
  COURSE_EXPECT_SAMPLES_MATCH(got, want, at, options);
}

// ------------------------------------------------------------------------------------------
// Exercise 5 on the GPU — lazy loading
// ------------------------------------------------------------------------------------------
class KernelCacheLazy : public JitGpuTest {};

TEST_F(KernelCacheLazy, CompilesAndLoadsNothingBeforeTheFirstLaunch) {
  const d13::CacheStats before = stats_of(*cache_);
  EXPECT_EQ(before.compiles + before.disk_hits + before.modules_loaded, 0)
      << "a new cache compiled or loaded something before any launch";
  check_rmsnorm<float>(*cache_, 2, 512, {128, 4}, 0);
  d13::CacheStats s = stats_of(*cache_);
  EXPECT_EQ(s.compiles, 1) << "the first launch must compile exactly one kernel";
  EXPECT_EQ(s.modules_loaded, 1) << "the first launch must load one module";
  check_rmsnorm<float>(*cache_, 2, 512, {128, 4}, 0);
  s = stats_of(*cache_);
  EXPECT_EQ(s.compiles, 1) << "the second launch compiled again";
  EXPECT_EQ(s.modules_loaded, 1) << "the second launch loaded the module again";
  cache_->clear_memory();
  check_rmsnorm<float>(*cache_, 2, 512, {128, 4}, 0);
  s = stats_of(*cache_);
  EXPECT_EQ(s.disk_hits, 1) << "after clear_memory() the CUBIN must come from disk";
  EXPECT_EQ(s.modules_loaded, 2);
}

// ------------------------------------------------------------------------------------------
// Exercise 8 — Autotune
// ------------------------------------------------------------------------------------------
class Autotune : public JitGpuTest {};

bool same(const d13::GemmConfig& a, const d13::GemmConfig& b) {
  return a.bm == b.bm && a.bn == b.bn && a.bk == b.bk && a.tm == b.tm && a.tn == b.tn;
}
bool same(const d13::RmsNormConfig& a, const d13::RmsNormConfig& b) {
  return a.threads == b.threads && a.vec == b.vec;
}

// autotune_gemm / autotune_rmsnorm's result, observed (Tuned is plain data); a failure, and a
// default result, when it threw.
template <class Config>
d13::Tuned<Config> tuned(const char* what, const std::function<d13::Tuned<Config>()>& call) {
  d13::Tuned<Config> result;
  runs(what, [&] { result = call(); });
  return observed(result, what);
}

TEST_F(Autotune, TimesTheCandidatesOnceThenUsesTheRecordedWinner) {
  constexpr std::int64_t M = 192, N = 160, K = 96;
  const auto A = course::random_uniform<float>(M * K, course::seed_for(5));
  const auto B = course::random_uniform<float>(K * N, course::seed_for(6));
  course::DeviceBuffer<float> dA(A), dB(B), dC(M * N);
  const auto tune = [&](std::int64_t m, d13::KernelCache* cache, const char* what) {
    return tuned<d13::GemmConfig>(
        what, [&] { return d13::autotune_gemm(dA.data(), dB.data(), dC.data(), m, N, K, cache); });
  };
  const d13::Tuned<d13::GemmConfig> first = tune(M, cache_.get(), "autotune_gemm, first");
  EXPECT_FALSE(first.from_cache) << "the first tuning of a shape cannot come from the cache";
  EXPECT_EQ(first.candidates_timed, static_cast<int>(std::size(d13::kGemmCandidates)))
      << "every candidate must be timed (TODO d13.8)";
  EXPECT_GT(first.best_us, 0.0) << "the winner's median time was not reported";
  EXPECT_EQ(stats_of(*cache_).tuning_runs, 1);
  const d13::Tuned<d13::GemmConfig> second = tune(M, cache_.get(), "autotune_gemm, second");
  EXPECT_TRUE(second.from_cache) << "the second tuning of the same shape timed again: keep the "
                                    "winner (TODO d13.8)";
  EXPECT_EQ(second.candidates_timed, 0);
  EXPECT_TRUE(same(second.config, first.config))
      << "the second tuning did not return the first's winner";
  EXPECT_EQ(stats_of(*cache_).tuning_runs, 1);
  EXPECT_EQ(observed(count_files(dir_.path(), ".tune"), "tuning records on disk"), 1)
      << "the winner must be recorded on disk";

  d13::KernelCache fresh(dir_.path());  // a new process, in effect
  const d13::Tuned<d13::GemmConfig> third = tune(M, &fresh, "autotune_gemm, a new cache");
  EXPECT_TRUE(third.from_cache) << "a new cache on the same folder timed again: read the record";
  EXPECT_TRUE(same(third.config, first.config)) << "the record on disk is not the winner";
  const d13::CacheStats s = stats_of(fresh);
  EXPECT_EQ(s.tuning_runs, 0);
  EXPECT_EQ(s.compiles, 0) << "reading the record must not compile anything";

  const d13::Tuned<d13::GemmConfig> other = tune(M - 1, &fresh, "autotune_gemm, another shape");
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
  const auto tune = [&](int hidden, const char* what) {
    return tuned<d13::RmsNormConfig>(what, [&] {
      return d13::autotune_rmsnorm(dx.data(), dw.data(), dy.data(), kRows, hidden, 1e-6f,
                                   cache_.get());
    });
  };
  const auto first = tune(kHidden, "autotune_rmsnorm, first");
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(first.candidates_timed, static_cast<int>(d13::rmsnorm_candidates(2, kHidden, 8).size()))
      << "every candidate must be timed (TODO d13.8)";
  const auto second = tune(kHidden, "autotune_rmsnorm, second");
  EXPECT_TRUE(second.from_cache) << "the second tuning timed again (TODO d13.8)";
  EXPECT_TRUE(same(second.config, first.config));
  const auto other = tune(kHidden / 2, "autotune_rmsnorm, another hidden size");
  EXPECT_FALSE(other.from_cache) << "another hidden size must be tuned on its own";
  EXPECT_EQ(stats_of(*cache_).tuning_runs, 2);
}

}  // namespace
