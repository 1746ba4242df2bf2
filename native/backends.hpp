// Choosing a compute backend by name (--backend cpu|gl|cuda|auto).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.hpp"
#include "native/gl/gl_context.hpp"  // gl::ContextSource

namespace attn {

// "cpu" (with `threads` workers, 0 = every core), "gl", "cuda", or "auto": the fastest that works here,
// cuda > gl > cpu. `note` says which backend and device were chosen, and for auto why the faster ones
// were not. An explicitly named backend that cannot run here (not built in, no GL 4.3 context, no CUDA
// device or driver) or an unknown name throws InputError saying so. `gl_context` says where gl (alone
// or in auto) gets its context: its own, or the calling thread's current one (attn-gui's window).
std::unique_ptr<Backend> make_backend(const std::string& name, size_t threads, std::string& note,
                                      gl::ContextSource gl_context = gl::ContextSource::own);

// The names make_backend accepts in this build, "auto" first ("auto", "cpu", then gl/cuda if built in).
std::vector<std::string> backend_names();

}  // namespace attn
