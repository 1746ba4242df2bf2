// The texture half of Platform, shared by both shells: these GL calls are the same in OpenGL 3 and
// OpenGL ES 3 (WebGL2). Include the shell's GL header (through GLFW) before this one.
#pragma once
#include <cstdint>

#include "ui/app.hpp"

namespace attn::ui {

class GlPlatform : public Platform {
 public:
  ImTextureID upload_texture(ImTextureID existing, int width, int height, const uint8_t* rgba) override {
    GLuint id = GLuint(reinterpret_cast<intptr_t>(existing));
    if (!id) glGenTextures(1, &id);
    glBindTexture(GL_TEXTURE_2D, id);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
    return reinterpret_cast<ImTextureID>(intptr_t(id));
  }
  void delete_texture(ImTextureID texture) override {
    const GLuint id = GLuint(reinterpret_cast<intptr_t>(texture));
    glDeleteTextures(1, &id);
  }
};

}  // namespace attn::ui
