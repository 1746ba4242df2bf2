#include "native/backends.hpp"

#include "core/base/error.hpp"
#include "core/base/threads.hpp"
#ifdef ATTN_HAVE_GL
#include "native/gl/gl_backend.hpp"
#endif
#ifdef ATTN_HAVE_CUDA
#include "native/cuda/cuda_backend.hpp"
#endif

namespace attn {
namespace {

struct Made {
  std::unique_ptr<Backend> backend;
  std::string device;     // what it runs on
  bool software = false;  // a GL driver that computes on the CPU (Mesa llvmpipe): slower than cpu
};

// One named backend, or InputError when it cannot run here.
Made make_named(const std::string& name, size_t threads, [[maybe_unused]] gl::ContextSource gl_context) {
  Made made;
  if (name == "cpu") {
    made.device = std::to_string(threads ? threads : hardware_threads()) + " threads";
    made.backend = make_cpu_backend(threads);
  } else if (name == "gl") {
#ifdef ATTN_HAVE_GL
    made.backend = make_gl_backend(made.device, made.software, gl_context);
#else
    throw InputError("gl backend unavailable: not built in (GLFW, OpenGL or EGL missing at build time)");
#endif
  } else if (name == "cuda") {
#ifdef ATTN_HAVE_CUDA
    made.backend = make_cuda_backend(made.device);
#else
    throw InputError("cuda backend unavailable: not built with CUDA (configure with -DATTN_WITH_CUDA=ON)");
#endif
  } else {
    throw InputError("unknown backend '" + name + "' (cpu, gl, cuda or auto)");
  }
  return made;
}

}  // namespace

std::vector<std::string> backend_names() {
  std::vector<std::string> names{"auto", "cpu"};
#ifdef ATTN_HAVE_GL
  names.push_back("gl");
#endif
#ifdef ATTN_HAVE_CUDA
  names.push_back("cuda");
#endif
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name, size_t threads, std::string& note,
                                      gl::ContextSource gl_context) {
  if (name != "auto") {
    Made made = make_named(name, threads, gl_context);
    note = name + " backend: " + made.device;
    return std::move(made.backend);
  }
  std::string passed_over;  // why each faster backend was not taken
  for (const char* candidate : {"cuda", "gl"}) {
    try {
      Made made = make_named(candidate, threads, gl_context);
      if (!made.software) {
        note = std::string("auto chose the ") + candidate + " backend: " + made.device + passed_over;
        return std::move(made.backend);
      }
      passed_over += std::string("; ") + candidate + " backend passed over: " + made.device +
                     " is a software renderer, slower than the cpu backend";
    } catch (const InputError& e) {
      passed_over += std::string("; ") + e.what();
    }
  }
  Made made = make_named("cpu", threads, gl_context);
  note = "auto fell back to the cpu backend: " + made.device + passed_over;
  return std::move(made.backend);
}

}  // namespace attn
