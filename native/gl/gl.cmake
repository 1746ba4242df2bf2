# attn_gl: the OpenGL compute backend (included from native/CMakeLists.txt). Needs GLFW 3, OpenGL and
# EGL (GLVND); without them the gl backend is simply not built in.
find_package(glfw3 3.3 QUIET)
set(OpenGL_GL_PREFERENCE GLVND)
find_package(OpenGL QUIET COMPONENTS OpenGL EGL)
if(NOT glfw3_FOUND OR NOT TARGET OpenGL::OpenGL OR NOT TARGET OpenGL::EGL)
  message(STATUS "gl backend not built: GLFW 3 (libglfw3-dev) or OpenGL/EGL (libgl-dev, libegl-dev) not found")
  return()
endif()

# The shaders, embedded into a generated header at build time (rebuilt when one changes).
file(GLOB ATTN_SHADERS CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/shaders/*.comp")
set(ATTN_SHADER_HEADER "${CMAKE_CURRENT_BINARY_DIR}/gl_generated/attn_gl_shaders.hpp")
add_custom_command(OUTPUT "${ATTN_SHADER_HEADER}"
                   COMMAND ${CMAKE_COMMAND} "-DOUTPUT=${ATTN_SHADER_HEADER}" "-DSHADERS=${ATTN_SHADERS}"
                           -P "${CMAKE_CURRENT_LIST_DIR}/embed_shaders.cmake"
                   DEPENDS ${ATTN_SHADERS} "${CMAKE_CURRENT_LIST_DIR}/embed_shaders.cmake"
                   COMMENT "Embedding shaders/*.comp" VERBATIM)

add_library(attn_gl STATIC "${CMAKE_CURRENT_LIST_DIR}/gl_context.cpp" "${CMAKE_CURRENT_LIST_DIR}/gl_shaders.cpp"
                           "${CMAKE_CURRENT_LIST_DIR}/gl_backend.cpp" "${ATTN_SHADER_HEADER}")
target_include_directories(attn_gl PRIVATE "${CMAKE_CURRENT_BINARY_DIR}/gl_generated")
target_link_libraries(attn_gl PUBLIC attn_core PRIVATE glfw OpenGL::OpenGL OpenGL::EGL)
# Debug builds read the shaders from the source tree, so an edited shader needs no rebuild.
target_compile_definitions(attn_gl PRIVATE
  "$<$<CONFIG:Debug>:ATTN_SHADER_SOURCE_DIR=\"${PROJECT_SOURCE_DIR}/shaders\">")
attn_target_defaults(attn_gl)
