# The GPU backends against the cpu backend (attn-backend-check: every op on awkward shapes, then the
# whole model stage by stage). gl runs wherever Mesa does: llvmpipe under Xvfb (a hidden GLFW window),
# and with no display at all (an EGL device). CUDA needs a device, so CI only builds it;
# tests/gpu/check.sh runs it on a machine with one.
if(TARGET attn_gl AND EXISTS /usr/bin/xvfb-run)
  # Under the sanitizers the checks are for memory errors in the host code: the quick set covers it.
  set(ATTN_GL_CHECK_SIZE "")
  if(ATTN_SANITIZE)
    set(ATTN_GL_CHECK_SIZE --quick)
  endif()
  add_test(NAME gpu.gl_ops
           COMMAND /usr/bin/xvfb-run -a -s "-screen 0 640x480x24" "$<TARGET_FILE:attn-backend-check>" --backend gl
                   ${ATTN_GL_CHECK_SIZE})
  add_test(NAME gpu.gl_ops_headless
           COMMAND env -u DISPLAY -u WAYLAND_DISPLAY "$<TARGET_FILE:attn-backend-check>" --backend gl --quick)
  set_tests_properties(gpu.gl_ops gpu.gl_ops_headless PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE
                       ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()
