# attn bench's cases (bench.cpp), on the CLI helpers of attn_options: linked into `attn` natively, and built
# as attn-bench.js for node in WebAssembly (the same cases, compared with the native build).
add_library(attn_bench STATIC "${CMAKE_CURRENT_LIST_DIR}/bench.cpp")
target_link_libraries(attn_bench PUBLIC attn_options)
target_compile_definitions(attn_bench PRIVATE ATTN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
attn_target_defaults(attn_bench)
if(TARGET attn_backends)
  target_link_libraries(attn_bench PRIVATE attn_backends)
  target_compile_definitions(attn_bench PRIVATE ATTN_HAVE_BACKENDS)
endif()
if(EMSCRIPTEN)
  add_executable(attn-bench "${CMAKE_CURRENT_LIST_DIR}/bench_main.cpp")
  target_link_libraries(attn-bench PRIVATE attn_bench)
  attn_target_defaults(attn-bench)
  target_link_options(attn-bench PRIVATE -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sEXIT_RUNTIME=1 -sNODERAWFS=1
                                         -sWASM_ASYNC_COMPILATION=0)
  if(ATTN_WEB_THREADS)
    # main() on a Web Worker: node's own thread stays free to start the pool's workers.
    target_link_options(attn-bench PRIVATE -sPROXY_TO_PTHREAD=1)
    # The same cases in a web page (tests/ort/bench.html): AttnBench({arguments, print, onExit}).
    add_executable(attn-bench-web "${CMAKE_CURRENT_LIST_DIR}/bench_main.cpp")
    target_link_libraries(attn-bench-web PRIVATE attn_bench)
    attn_target_defaults(attn-bench-web)
    target_link_options(attn-bench-web PRIVATE -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sEXIT_RUNTIME=1
                        -sPROXY_TO_PTHREAD=1 -sENVIRONMENT=web,worker -sMODULARIZE=1 -sEXPORT_NAME=AttnBench)
  endif()
endif()
