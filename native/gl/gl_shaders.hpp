// The compute shaders (shaders/*.comp, GLSL 4.30): their text, and programs built from it.
#pragma once
#define GL_GLEXT_PROTOTYPES
#include <GL/glcorearb.h>

#include <string>

namespace attn::gl {

// shaders/<name>.comp, read from $ATTN_SHADER_DIR when set, else from the source tree in development
// builds (edit a shader, rerun, no rebuild), else the copy embedded at build time (release builds).
std::string shader_source(const std::string& name);
// A linked compute program from shader `name` with `defines` ("#define X 1\n"…) inserted after its
// #version line. A driver that refuses it is a bug here: std::runtime_error with the driver's log.
GLuint build_program(const std::string& name, const std::string& defines);

}  // namespace attn::gl
