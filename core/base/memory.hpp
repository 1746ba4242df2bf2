// Refuses sizes that would not fit in memory before anything is allocated.
#pragma once
#include <string>

namespace attn {

// Bytes the engine may use: physical memory natively, the heap's maximum in WebAssembly (2 GiB, the
// Emscripten default the web builds keep).
double memory_limit_bytes();
// Throws InputError naming `what` when `bytes` exceeds the limit.
void check_fits_in_memory(double bytes, const std::string& what);
// A line of /proc/self/status in bytes ("VmRSS:" now, "VmHWM:" the peak); 0 where there is none (node).
double process_status_bytes(const char* field);

}  // namespace attn
