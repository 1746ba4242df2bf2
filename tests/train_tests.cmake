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
attn_cli_case(train_task_vocab 2 "--task brings its own vocabulary" train --task places --vocab "${data}/vocab.json")
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

# Language models (docs/training-lm.md): GPT-2 trained against PyTorch through the files it writes
# (train_lm_check.py), and the bad inputs.
# Under the sanitizers the induction run is short: the learning is checked natively.
set(lm_check_mode "")
if(ATTN_SANITIZE)
  set(lm_check_mode quick)
endif()
add_test(NAME cli.train_lm
         COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/train_lm_check.py" $<TARGET_FILE:attn> ${lm_check_mode})
set(lm_config "${data}/lm_gpt2_config.json")
attn_cli_case(train_lm_blank 2 "lm_blank.txt: no usable token" train --config "${lm_config}" --data "${data}/lm_blank.txt")
attn_cli_case(train_lm_seq_len 2 "--seq-len 64 is more than the model's 8 positions" train --config "${lm_config}" --data "${data}/lm_text.txt" --seq-len 64)
attn_cli_case(train_lm_bert 2 "attn train trains GPT-2 language models \\(model_type \"gpt2\"\\), not bert" train --config "${pre}/bert_tiny/config.json" --data "${data}/lm_text.txt")
attn_cli_case(train_lm_bert_dir 2 "fine-tunes GPT-2 language models, not bert" train --model-dir "${pre}/bert_tiny" --data "${data}/lm_text.txt")
attn_cli_case(train_lm_classifier_flag 2 "--d-model is an option of the tutorial's classifier" train --task induction --d-model 8)
attn_cli_case(train_lm_task_and_data 2 "--task korean and --task text also take --data" train --task induction --data "${data}/lm_text.txt")
attn_cli_case(train_lm_seq_len_classifier 2 "--seq-len, --save-merges and --save-model-dir belong to language models" train --task places --seq-len 8)
attn_cli_case(train_lm_vocab_alone 2 "needs both --vocab vocab.json and --merges merges.txt" train --config "${lm_config}" --data "${data}/lm_text.txt" --vocab "${pre}/gpt2_tiny/vocab.json")
attn_cli_case(train_lm_diverges 2 "the loss became .* at step" train --config "${lm_config}" --data "${data}/lm_text.txt" --lr 1e30 --steps 5)
attn_cli_case(train_lm_text 0 "trained 2 steps" train --config "${lm_config}" --data "${data}/lm_text.txt" --steps 2)
attn_cli_case(train_lm_memory 2 "a training step of 100000000000 windows of 8 tokens needs about .* GiB, more than" train --config "${lm_config}" --data "${data}/lm_text.txt" --batch-size 100000000000)
attn_cli_case(train_lm_text_without_data 2 "--task text trains a character language model of a text: give it with --data FILE" train --task text)
attn_cli_case(train_lm_task_text 0 "trained 3 steps.*validation loss" train --task text --data "${data}/lm_text.txt" --steps 3 --seq-len 8 --val-fraction 0.25)
