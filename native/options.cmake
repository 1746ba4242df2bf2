# attn's option layer without its commands: strict number parsing (cli.cpp), the model options
# (model_options.cpp) and attn train's run setup (train_setup.cpp). The CLI, attn bench, the fuzz
# targets and the playground's Train tab (native and WebAssembly) link it, so an option means the
# same thing everywhere.
add_library(attn_options STATIC "${CMAKE_CURRENT_LIST_DIR}/cli.cpp" "${CMAKE_CURRENT_LIST_DIR}/model_options.cpp"
                                "${CMAKE_CURRENT_LIST_DIR}/train_setup.cpp")
target_link_libraries(attn_options PUBLIC attn_core)
attn_target_defaults(attn_options)
attn_precompile_headers(attn_options <CLI/CLI.hpp>)
