# attn train at the CLI: bad input (exit 2, a message naming the problem) here; a PyTorch loop, kill +
# --resume, and the built-in tasks' accuracy and attention in train_check.py (one CTest test per section).
set(data "${CMAKE_CURRENT_SOURCE_DIR}/data")
attn_cli_case(train_help 0 "--checkpoint-every" train --help)
attn_cli_case(train_no_data 2 "give --task NAME or --data FILE" train)
attn_cli_case(train_unknown_task 2 "unknown task 'bogus' \\(tasks: duplicate" train --task bogus)
attn_cli_case(train_lr_zero 2 "invalid learning rate 0 \\(must be positive and finite\\)" train --task places --lr 0)
attn_cli_case(train_lr_nan 2 "--lr expects a finite number, got 'nan'" train --task places --lr nan)
attn_cli_case(train_label_range 2 "line 2: label 7" train --data "${data}/train_bad_label.jsonl" --num-classes 3)
attn_cli_case(train_empty_data 2 "train_empty.jsonl': the file is empty" train --data "${data}/train_empty.jsonl")
attn_cli_case(train_bad_utf8 2 "line 2: invalid UTF-8" train --data "${data}/train_bad_utf8.tsv")
attn_cli_case(train_missing_data 2 "cannot read data file '/nonexistent.jsonl'" train --data /nonexistent.jsonl)
attn_cli_case(train_weights_mismatch 2 "weights do not match the model"
              train --task places --weights "${CMAKE_CURRENT_SOURCE_DIR}/fixtures/safetensors/encoder_f32.safetensors")
attn_cli_case(train_resume_needs_checkpoint 2 "--resume needs --checkpoint DIR" train --task places --resume)
attn_cli_case(train_task_val 2 "--task brings its own validation items" train --task places --val-fraction 0.1)
attn_cli_case(train_betas 2 "--betas expects two numbers" train --task places --optimizer adam --betas 0.9)
attn_cli_case(train_warmup_long 2 "warmup \\(400 steps\\) is longer than the run" train --task places --warmup 400)
attn_cli_case(train_schedule 2 "cosine" train --task places --schedule linear)
attn_cli_case(train_places 0 "trained 300 steps in .*validation loss" train --task places)
attn_cli_case(train_places_fast 0 "trained 300 steps in .*validation loss" train --task places --backend cpu --threads 2)
attn_cli_case(train_backend_gl 2 "attn train computes on the CPU: --backend exact .* not 'gl'" train --task places --backend gl)
attn_cli_case(train_threads_zero 2 "--threads" train --task places --threads 0)

# The tasks train for their documented steps: seconds here, minutes under the sanitizers (skipped there).
set(sections torch resume)
if(NOT ATTN_SANITIZE)
  list(APPEND sections tasks)
endif()
foreach(section ${sections})
  add_test(NAME cli.train_${section}
           COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/train_check.py" $<TARGET_FILE:attn> ${section})
  set_tests_properties(cli.train_${section} PROPERTIES TIMEOUT 600)
endforeach()
