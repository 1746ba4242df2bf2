# attn batch / attn merge at the CLI: option errors (exit 2) here; files, bad items (exit 3), threads
# and batch-size independence, kill + --resume, shards + merge and PyTorch's logits in batch_check.py.
set(bat batch --d-model 16 --num-heads 2 --num-layers 2 --num-classes 3 --quiet)
attn_cli_case(batch_help 0 "--batch-size" batch --help)
attn_cli_case(merge_help 0 "SHARD_OUTPUTS" merge --help)
attn_cli_case(batch_no_input 2 "INPUT is required" batch)
attn_cli_case(batch_missing_input 2 "cannot read input '/nonexistent.txt'"
              ${bat} --vocab "${CMAKE_CURRENT_SOURCE_DIR}/data/vocab.json" /nonexistent.txt)
attn_cli_case(batch_no_vocab 2 "needs the vocabulary up front" ${bat} "${CMAKE_CURRENT_SOURCE_DIR}/data/korean.txt")
attn_cli_case(batch_text_needs_vocab 2 "a text input needs --vocab"
              ${bat} --vocab-size 8 "${CMAKE_CURRENT_SOURCE_DIR}/data/korean.txt")
attn_cli_case(batch_train 2 "--train is not meaningful" ${bat} --train --vocab-size 8 -)
attn_cli_case(batch_unknown_stage 2 "unknown stage 'bogus'.*layers.0.self_attn.attention_weights"
              ${bat} --vocab-size 8 --stages bogus -)
attn_cli_case(batch_bad_layer 2 "layer 5 does not exist" ${bat} --vocab-size 8 --layers 5 -)
attn_cli_case(batch_bad_shard 2 "--shard expects K/N" ${bat} --vocab-size 8 --shard 3/2 -)
attn_cli_case(batch_bad_threads 2 "--threads expects an integer >= 1" ${bat} --vocab-size 8 --threads 0 -)
attn_cli_case(batch_resume_stdout 2 "--resume needs an output file" ${bat} --vocab-size 8 --resume -)
attn_cli_case(batch_format 2 "--format npy-dir is not supported" ${bat} --vocab-size 8 --format npy-dir -)
attn_cli_case(merge_missing 2 "cannot read '/nonexistent.jsonl.errors.jsonl'|cannot read '/nonexistent.jsonl'"
              merge /nonexistent.jsonl -o /tmp/attn-merge-never-written.jsonl)

# Everything that needs files, several runs or PyTorch.
add_test(NAME cli.batch_check
         COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/batch_check.py" $<TARGET_FILE:attn>)
set_tests_properties(cli.batch_check PROPERTIES TIMEOUT 300)
