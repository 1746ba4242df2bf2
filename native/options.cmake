# attn's option layer: the sentence options and checked printing (cli.cpp) and the model options
# registration with CLI11 (model_options.cpp); what the options mean lives in core
# (core/model/model_options.hpp, core/train/train_run.hpp), which the playground uses too. The CLI,
# attn bench and the fuzz targets link it.
add_library(attn_options STATIC "${CMAKE_CURRENT_LIST_DIR}/cli.cpp" "${CMAKE_CURRENT_LIST_DIR}/model_options.cpp")
target_link_libraries(attn_options PUBLIC attn_core)
attn_target_defaults(attn_options)
attn_precompile_headers(attn_options <CLI/CLI.hpp>)
