// Files for the course tool: whole-file reads, atomic writes (so that an interrupted run
// never leaves a half-written result behind), content fingerprints and timestamps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace course::tool {

namespace fs = std::filesystem;

// The whole file, or nullopt with `error` saying why ("cannot open ...: No such file").
std::optional<std::string> read_file(const fs::path& path, std::string* error = nullptr);

// Writes `content` to a temporary file next to `path`, flushes it, then renames it over
// `path`: readers see the old file or the new one, never a part of it. Creates the parent
// folder. False (and `error`) on failure, leaving any earlier `path` untouched.
bool write_file_atomically(const fs::path& path, std::string_view content, std::string* error = nullptr);

// Moves `from` over `to` in one step (same file system); false and `error` on failure.
bool replace_file(const fs::path& from, const fs::path& to, std::string* error = nullptr);

// A temporary name next to `path` that no other process uses: "<path>.tmp.<pid>".
fs::path temporary_sibling(const fs::path& path);

// Deletes the temporaries that interrupted runs left in `dir` ("<name>.tmp.<pid>" whose
// process no longer exists); returns how many.
int remove_stale_temporaries(const fs::path& dir);

// FNV-1a 64-bit hash of the bytes, as 16 hex digits: tells whether kernel.cu changed.
std::string fingerprint(std::string_view bytes);

// The current UTC time, "2026-11-22T18:40:04Z".
std::string utc_now();

// `path` relative to `base` when it lies inside it ("labs/d01/kernel.cu"), else as given.
std::string display_path(const fs::path& path, const fs::path& base);

}  // namespace course::tool
