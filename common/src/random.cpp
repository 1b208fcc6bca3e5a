#include "course/random.h"

#include <chrono>
#include <cstdlib>
#include <random>

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

}  // namespace course
