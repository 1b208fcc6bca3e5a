#include "files.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <system_error>

namespace course::tool {

std::optional<std::string> read_file(const fs::path& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (error) *error = "cannot open " + path.string() + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    if (error) *error = "cannot read " + path.string();
    return std::nullopt;
  }
  return buffer.str();
}

fs::path temporary_sibling(const fs::path& path) {
  return path.string() + ".tmp." + std::to_string(static_cast<long>(::getpid()));
}

bool replace_file(const fs::path& from, const fs::path& to, std::string* error) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    if (error) *error = "cannot move " + from.string() + " to " + to.string() + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool write_file_atomically(const fs::path& path, std::string_view content, std::string* error) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec) {
    if (error) *error = "cannot create " + path.parent_path().string() + ": " + ec.message();
    return false;
  }
  const fs::path tmp = temporary_sibling(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = "cannot write " + tmp.string() + ": " + std::strerror(errno);
    return false;
  }
  std::size_t done = 0;
  bool ok = true;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  const std::string why = ok ? "" : std::strerror(errno);
  ok = ok && ::fsync(fd) == 0;  // the data is on disk before the rename makes it visible
  ::close(fd);
  if (!ok) {
    if (error) *error = "cannot write " + tmp.string() + (why.empty() ? "" : ": " + why);
    ::unlink(tmp.c_str());
    return false;
  }
  if (!replace_file(tmp, path, error)) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

int remove_stale_temporaries(const fs::path& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::size_t mark = name.rfind(".tmp.");
    if (mark == std::string::npos) continue;
    const std::string pid_text = name.substr(mark + 5);
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
    const bool alive = ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
    if (!alive && fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

std::string fingerprint(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string display_path(const fs::path& path, const fs::path& base) {
  const fs::path p = path.lexically_normal();
  const fs::path b = base.lexically_normal();
  const fs::path rel = p.lexically_relative(b);
  if (!rel.empty() && rel.native().rfind("..", 0) != 0 && p.is_absolute() == b.is_absolute()) return rel.string();
  return path.string();
}

}  // namespace course::tool
