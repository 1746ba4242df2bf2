// An OpenGL 4.3 core context for compute only, current on the thread that creates it: a hidden GLFW
// window when a display is reachable, else an EGL device with no window system at all (headless
// servers; hardware devices before Mesa's software one).
#pragma once
#include <memory>
#include <string>

namespace attn::gl {

class Context {
 public:
  Context();  // throws InputError saying why each way failed
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  const std::string& description() const { return description_; }  // renderer, version, how
  bool software() const { return software_; }  // Mesa's CPU rasterisers (llvmpipe, softpipe)
  struct Impl;  // the window or the EGL display and context (gl_context.cpp)

 private:
  std::unique_ptr<Impl> impl_;
  std::string description_;
  bool software_ = false;
};

}  // namespace attn::gl
