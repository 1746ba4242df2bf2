// The OpenGL compute backend: buffers are shader storage buffers, each operation one dispatch of a
// shader in shaders/ (GLSL 4.30). Checked op by op against the CPU backend by attn-backend-check.
#pragma once
#include <memory>
#include <string>

#include "core/backend/backend.hpp"
#include "native/gl/gl_context.hpp"

namespace attn {

// Makes a GL 4.3 core context current on this thread, or borrows the current one (gl_context.hpp), and
// returns the backend that computes in it; `device` receives the renderer and where the context came
// from, `software` whether the renderer is a CPU rasteriser (Mesa's llvmpipe/softpipe). Throws
// InputError when there is no such context. Use it from this thread only, and release its buffers before it.
std::unique_ptr<Backend> make_gl_backend(std::string& device, bool& software, gl::ContextSource source);

}  // namespace attn
