// An OpenGL 4.3 core context for compute, current on the thread that creates it. Either its own: a
// hidden GLFW window when a display is reachable, else an EGL device with no window system at all
// (headless servers; hardware devices before Mesa's software one). Or the context already current on
// that thread, borrowed (attn-gui's window): a second GLFW window would replace it, and glfwTerminate
// would close it.
#pragma once
#include <memory>
#include <string>

namespace attn::gl {

// Where the context comes from: made here, or the calling thread's current one (4.3 or newer).
enum class ContextSource { own, current };

class Context {
 public:
  explicit Context(ContextSource source = ContextSource::own);  // throws InputError saying why it failed
  ~Context();  // releases a context of its own; a borrowed one is left as it is
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  const std::string& description() const { return description_; }  // renderer, version, how
  bool software() const { return software_; }  // Mesa's CPU rasterisers (llvmpipe, softpipe)
  struct Impl;  // the window or the EGL display and context (gl_context.cpp); none when borrowed

 private:
  std::unique_ptr<Impl> impl_;
  std::string description_;
  bool software_ = false;
};

}  // namespace attn::gl
