#include "native/gl/gl_context.hpp"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#define GL_GLEXT_PROTOTYPES
#include <GL/glcorearb.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/base/error.hpp"

namespace attn::gl {

struct Context::Impl {
  GLFWwindow* window = nullptr;
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
};

namespace {

std::string glfw_error;  // GLFW reports errors through a callback only
void record_glfw_error(int, const char* text) { glfw_error = text; }

bool open_glfw(Context::Impl& impl, std::string& why) {
  glfwSetErrorCallback(record_glfw_error);
  if (!glfwInit()) {
    why = "GLFW: " + glfw_error;
    return false;
  }
  glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  impl.window = glfwCreateWindow(1, 1, "attn gl backend", nullptr, nullptr);
  if (!impl.window) {
    why = "GLFW: " + glfw_error;
    glfwTerminate();
    return false;
  }
  glfwMakeContextCurrent(impl.window);
  return true;
}

template <typename F>
F egl_function(const char* name) {
  return reinterpret_cast<F>(eglGetProcAddress(name));
}

// EGL devices (EGL_EXT_device_enumeration), hardware ones first.
std::vector<EGLDeviceEXT> egl_devices() {
  auto query_devices = egl_function<PFNEGLQUERYDEVICESEXTPROC>("eglQueryDevicesEXT");
  auto query_string = egl_function<PFNEGLQUERYDEVICESTRINGEXTPROC>("eglQueryDeviceStringEXT");
  EGLint count = 0;
  if (!query_devices || !query_string || !query_devices(0, nullptr, &count) || count <= 0) return {};
  std::vector<EGLDeviceEXT> devices(static_cast<size_t>(count));
  query_devices(count, devices.data(), &count);
  auto software = [&](EGLDeviceEXT device) {
    const char* extensions = query_string(device, EGL_EXTENSIONS);
    return extensions && std::strstr(extensions, "EGL_MESA_device_software");
  };
  std::stable_partition(devices.begin(), devices.end(), [&](EGLDeviceEXT d) { return !software(d); });
  return devices;
}

// A surfaceless 4.3 core context on one device (EGL_KHR_surfaceless_context, configless).
bool open_egl_device(Context::Impl& impl, EGLDeviceEXT device) {
  auto platform_display = egl_function<PFNEGLGETPLATFORMDISPLAYEXTPROC>("eglGetPlatformDisplayEXT");
  if (!platform_display) return false;
  EGLDisplay display = platform_display(EGL_PLATFORM_DEVICE_EXT, device, nullptr);
  if (display == EGL_NO_DISPLAY || !eglInitialize(display, nullptr, nullptr)) return false;
  const EGLint attributes[] = {EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 3,
                               EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
  EGLContext context = EGL_NO_CONTEXT;
  if (eglBindAPI(EGL_OPENGL_API))
    context = eglCreateContext(display, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, attributes);
  if (context == EGL_NO_CONTEXT || !eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context)) {
    if (context != EGL_NO_CONTEXT) eglDestroyContext(display, context);
    eglTerminate(display);
    return false;
  }
  impl.display = display;
  impl.context = context;
  return true;
}

bool open_egl(Context::Impl& impl, std::string& why) {
  std::vector<EGLDeviceEXT> devices = egl_devices();
  for (EGLDeviceEXT device : devices)
    if (open_egl_device(impl, device)) return true;
  why = devices.empty() ? "EGL: no devices (EGL_EXT_device_enumeration)"
                        : "EGL: no device gave a 4.3 core context";
  return false;
}

std::string gl_string(GLenum name) {
  const GLubyte* text = glGetString(name);
  return text ? reinterpret_cast<const char*>(text) : "?";
}

// Makes a context of our own current: a hidden GLFW window, else an EGL device; returns how.
const char* open_own(Context::Impl& impl) {
  std::string glfw_why, egl_why;
  if (open_glfw(impl, glfw_why)) return "hidden GLFW window";
  if (open_egl(impl, egl_why)) return "EGL device, no window system";
  throw InputError("gl backend unavailable: no OpenGL 4.3 core context (" + glfw_why + "; " + egl_why + ")");
}

// The calling thread's current context, if there is one and it has compute shaders (4.3).
void check_current() {
  if (!glGetString(GL_VERSION))  // GLVND's dispatch answers null when no context is current
    throw InputError("gl backend unavailable: no OpenGL context is current on this thread");
  GLint major = 0, minor = 0;  // stay 0 before 3.0, which has no GL_MAJOR_VERSION
  glGetIntegerv(GL_MAJOR_VERSION, &major);
  glGetIntegerv(GL_MINOR_VERSION, &minor);
  if (major < 4 || (major == 4 && minor < 3))
    throw InputError("gl backend unavailable: the current OpenGL context is version " + gl_string(GL_VERSION) +
                     "; compute shaders need 4.3");
}

}  // namespace

Context::Context(ContextSource source) : impl_(std::make_unique<Impl>()) {
  const char* how = "the calling thread's context, borrowed";
  if (source == ContextSource::own) how = open_own(*impl_);
  else check_current();
  std::string renderer = gl_string(GL_RENDERER);
  description_ = renderer + ", OpenGL " + gl_string(GL_VERSION) + ", " + how;
  software_ = renderer.find("llvmpipe") != std::string::npos || renderer.find("softpipe") != std::string::npos;
}

Context::~Context() {
  if (impl_->window) {
    glfwDestroyWindow(impl_->window);
    glfwTerminate();
  } else if (impl_->context != EGL_NO_CONTEXT) {
    eglMakeCurrent(impl_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(impl_->display, impl_->context);
    eglTerminate(impl_->display);
  }
}

}  // namespace attn::gl
