# cmake -DPROGRAM=… -DARGS=… -DSTATUS=… -DREGEX=… -P run_expect.cmake
# Runs PROGRAM ARGS (joined by ^^); fails unless it exits with STATUS and stdout+stderr matches REGEX.
string(REPLACE "^^" ";" ARGS "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
set(all "${out}${err}")
if(NOT "${status}" STREQUAL "${STATUS}")
  message(FATAL_ERROR "expected exit ${STATUS}, got ${status}\n${all}")
endif()
if(NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match '${REGEX}':\n${all}")
endif()
