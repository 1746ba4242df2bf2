#include "core/base/memory.hpp"

#include <cstdio>
#include <fstream>
#include <string>

#include "core/base/error.hpp"

#if defined(__EMSCRIPTEN__)
#include <emscripten/heap.h>
#else
#include <unistd.h>
#endif

namespace attn {

double memory_limit_bytes() {
#if defined(__EMSCRIPTEN__)
  return double(emscripten_get_heap_max());  // MAXIMUM_MEMORY: what the heap may grow to
#else
  return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
#endif
}

void check_fits_in_memory(double bytes, const std::string& what) {
  const double limit = memory_limit_bytes();
  if (bytes <= limit) return;
  char text[160];
  std::snprintf(text, sizeof text, "%s needs about %.3g GiB, more than the %.3g GiB of memory available",
                what.c_str(), bytes / (1u << 30), limit / (1u << 30));
  throw InputError(text);
}

double process_status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(std::string(field).size())) * 1024.0;
  return 0.0;
}

}  // namespace attn
