# cmake -DOUTPUT=header -DSHADERS="a.comp;b.comp" -P embed_shaders.cmake: writes every shader into a C++
# header as a raw string literal, so a release binary needs no shader files next to it.
set(text "// Generated from shaders/*.comp by native/gl/embed_shaders.cmake at build time; do not edit.\n")
string(APPEND text "#pragma once\n\nnamespace attn::gl {\n\nstruct EmbeddedShader {\n  const char* name;\n")
string(APPEND text "  const char* source;\n};\n\ninline constexpr EmbeddedShader embedded_shaders[] = {\n")
foreach(path ${SHADERS})
  get_filename_component(name "${path}" NAME_WE)
  file(READ "${path}" source)
  string(APPEND text "    {\"${name}\", R\"attn_glsl(${source})attn_glsl\"},\n")
endforeach()
string(APPEND text "};\n\n}  // namespace attn::gl\n")
file(WRITE "${OUTPUT}" "${text}")
