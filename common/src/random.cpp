#include "course/random.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

namespace course {

std::uint64_t run_seed() {
  static const std::uint64_t seed = [] {
    if (const char* s = std::getenv("COURSE_SEED"); s != nullptr && *s != '\0')
      return static_cast<std::uint64_t>(std::strtoull(s, nullptr, 0));
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
           static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  return seed;
}

std::uint64_t seed_for(std::uint64_t salt) { return detail::random_word(run_seed(), salt); }

namespace detail {

void parallel_chunks(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body) {
  constexpr std::size_t kMinChunk = std::size_t{1} << 20;  // below this a thread costs more
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers = std::min(cores, std::max<std::size_t>(1, n / kMinChunk));
  if (workers <= 1) {
    body(0, n);
    return;
  }
  const std::size_t chunk = (n + workers - 1) / workers;
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (std::size_t w = 1; w < workers; ++w) {
    const std::size_t begin = std::min(n, w * chunk);
    threads.emplace_back(body, begin, std::min(n, begin + chunk));
  }
  body(0, std::min(n, chunk));
  for (auto& t : threads) t.join();
}

}  // namespace detail

}  // namespace course
