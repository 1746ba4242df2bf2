# The CLI's contract: --help everywhere; bad input gives a message naming the problem and exit 2.
set(ATTN_RUN_EXPECT "${CMAKE_CURRENT_SOURCE_DIR}/run_expect.cmake")

# attn_cli_case(NAME STATUS REGEX ARGS...): runs `attn ARGS`, expects exit STATUS and REGEX in the output.
function(attn_cli_case name status regex)
  string(REPLACE ";" "^^" args "${ARGN}")  # a list cannot pass through add_test's COMMAND
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} "-DPROGRAM=$<TARGET_FILE:attn>" "-DARGS=${args}" "-DSTATUS=${status}"
                   "-DREGEX=${regex}" -P "${ATTN_RUN_EXPECT}")
endfunction()

attn_cli_case(help 0 "tutorial" --help)
attn_cli_case(tutorial_help 0 "--sentences-file" tutorial --help)
attn_cli_case(no_command 2 "subcommand" )
attn_cli_case(unknown_command 2 "frobnicate" frobnicate)
attn_cli_case(unknown_flag 2 "--bogus" tutorial --bogus)
attn_cli_case(seed_too_big 2 "--seed expects an integer in \\[-2\\^63, 2\\^64\\)" tutorial --seed 18446744073709551616)
attn_cli_case(seed_junk 2 "--seed" tutorial --seed 12abc)
attn_cli_case(seed_max_ok 0 "1. INPUT" tutorial --seed 18446744073709551615)
attn_cli_case(seed_negative_ok 0 "1. INPUT" tutorial --seed -9223372036854775808)
attn_cli_case(d_model_odd 2 "even" tutorial --d-model 7)
attn_cli_case(d_model_zero 2 "--d-model expects an integer >= 1" tutorial --d-model 0)
attn_cli_case(d_model_negative 2 "--d-model" tutorial --d-model -6)
attn_cli_case(d_model_huge 2 "memory" tutorial --d-model 4000000 --max-len 4000000)
attn_cli_case(max_len_short 2 "max_len 2" tutorial --max-len 2)
attn_cli_case(mask_bad 2 "unknown mask 'diagonal'" tutorial --mask diagonal)
attn_cli_case(sentence_blank 2 "sentence 2 is empty" tutorial --sentence "a b" --sentence "　")
attn_cli_case(sentences_file_missing 2 "cannot read sentences file" tutorial --sentences-file /nonexistent/file.txt)
attn_cli_case(sentences_file_bad_utf8 2 "bad_utf8.txt:2: invalid UTF-8"
              tutorial --sentences-file "${CMAKE_CURRENT_SOURCE_DIR}/data/bad_utf8.txt")
attn_cli_case(sentences_file_and_sentence 2 "excludes" tutorial --sentence a --sentences-file x)
attn_cli_case(sentences_file_korean 0 "'고양이가', '잔다'"
              tutorial --sentences-file "${CMAKE_CURRENT_SOURCE_DIR}/data/korean.txt")
attn_cli_case(json_contract 0 "^\\{\"config\":\\{\"seed\":0,.*\"stages\":\\[\\{\"name\":\"token_ids\",\"shape\":\\[4,4\\],\"data\":\\[1,2,3,4,"
              tutorial --json)

