# attn batch / attn merge at the CLI: option errors (exit 2) here; files, bad items (exit 3), threads
# and batch-size independence, kill + --resume, shards + merge, the output formats, the vocabulary's
# first pass, merge's refusals and PyTorch's logits in batch_check.py (one CTest test per section).
set(bat batch --d-model 16 --num-heads 2 --num-layers 2 --num-classes 3 --quiet)
set(data "${CMAKE_CURRENT_SOURCE_DIR}/data")
attn_cli_case(batch_help 0 "--batch-size.*--save-vocab|--save-vocab.*--batch-size" batch --help)
attn_cli_case(merge_help 0 "SHARD_OUTPUTS" merge --help)
attn_cli_case(batch_no_input 2 "INPUT is required" batch)
attn_cli_case(batch_missing_input 2 "cannot read input '/nonexistent.txt'" ${bat} --vocab "${data}/vocab.json" /nonexistent.txt)
attn_cli_case(batch_input_is_folder 2 "cannot read input '/': it is a folder" ${bat} --vocab "${data}/vocab.json" /)
# Without --vocab: a first pass over the file builds the vocabulary ([PAD] = 0, words by first appearance).
attn_cli_case(batch_vocab_first_pass 0 "\"tokens\":\\[\"고양이가\",\"잔다\"\\],\"ids\":\\[1,2\\]" ${bat} "${data}/korean.txt")
attn_cli_case(batch_stdin_needs_vocab 2 "standard input cannot be read twice" ${bat} -)
attn_cli_case(batch_text_stdin_needs_vocab 2 "a text input on standard input needs --vocab"
              ${bat} --vocab-size 8 --input-format text -)
attn_cli_case(batch_no_sentences 2 "batch_ids.jsonl' has no sentence to build a vocabulary from"
              ${bat} "${data}/batch_ids.jsonl")
attn_cli_case(batch_save_vocab_no_vocab 2 "--save-vocab: this run has no vocabulary"
              ${bat} --vocab-size 8 --save-vocab /tmp/attn-never-written.json -)
attn_cli_case(batch_save_vocab_over_vocab 2 "--save-vocab would overwrite --vocab"
              ${bat} --vocab "${data}/vocab.json" --save-vocab "${data}/vocab.json" "${data}/korean.txt")
attn_cli_case(batch_train 2 "--train is not meaningful" ${bat} --train --vocab-size 8 -)
attn_cli_case(batch_unknown_stage 2 "unknown stage 'bogus'.*layers.0.self_attn.attention_weights"
              ${bat} --vocab-size 8 --stages bogus -)
attn_cli_case(batch_bad_layer 2 "layer 5 does not exist" ${bat} --vocab-size 8 --layers 5 -)
attn_cli_case(batch_bad_shard 2 "--shard expects K/N" ${bat} --vocab-size 8 --shard 3/2 -)
attn_cli_case(batch_bad_threads 2 "--threads expects an integer >= 1" ${bat} --vocab-size 8 --threads 0 -)
attn_cli_case(batch_resume_stdout 2 "--resume needs an output file" ${bat} --vocab-size 8 --resume -o - -)
attn_cli_case(batch_format_unknown 2 "--format expects jsonl, safetensors or npy-dir, got 'xml'"
              ${bat} --vocab-size 8 --format xml -)
attn_cli_case(batch_input_format_unknown 2 "--input-format expects auto, text or jsonl, got 'csv'"
              ${bat} --vocab-size 8 --input-format csv -)
attn_cli_case(batch_safetensors_stdout 2 "--format safetensors needs an output file"
              ${bat} --vocab-size 8 --format safetensors -)
attn_cli_case(batch_npy_dir_stdout 2 "--format npy-dir needs an output folder" ${bat} --vocab-size 8 --format npy-dir -)
# attn never replaces a folder it did not write, nor writes a file where a folder is.
attn_cli_case(batch_npy_dir_foreign_folder 2 "'/' is a folder but not an output of --format npy-dir"
              ${bat} --vocab-size 8 --format npy-dir -o / -)
attn_cli_case(batch_output_is_folder 2 "'/' is a folder, and a jsonl output is a file" ${bat} --vocab-size 8 -o / -)
attn_cli_case(merge_missing 2 "cannot read '/nonexistent.jsonl'" merge /nonexistent.jsonl -o /tmp/attn-merge-never-written.jsonl)
attn_cli_case(merge_no_manifest 2 "vocab.json.manifest.json' is missing: .* is not the complete output"
              merge "${data}/vocab.json" -o /tmp/attn-merge-never-written.jsonl)

# Everything that needs files, several runs or PyTorch.
add_test(NAME cli.batch_check
         COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/batch_check.py" $<TARGET_FILE:attn> core)
set_tests_properties(cli.batch_check PROPERTIES TIMEOUT 300)
set(ATTN_BATCH_CHECK_ENV "")
if(ATTN_SANITIZE)
  set(ATTN_BATCH_CHECK_ENV ENVIRONMENT "ATTN_BATCH_CHECK_SENTENCES=1500")
  set_tests_properties(cli.batch_check PROPERTIES ${ATTN_BATCH_CHECK_ENV})
endif()
foreach(section formats resume vocab merge finish)
  add_test(NAME cli.batch_${section}
           COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/batch_check.py" $<TARGET_FILE:attn> ${section})
  set_tests_properties(cli.batch_${section} PROPERTIES TIMEOUT 300 ${ATTN_BATCH_CHECK_ENV})
endforeach()
# --backend: the fast path (numbers checked against the exact path in test_fast_kernels.cpp).
attn_cli_case(batch_backend_cpu 0 "\"layers.1.self_attn.attention_weights\"" ${bat} --backend cpu "${data}/korean.txt")
attn_cli_case(batch_backend_scores 2 "stage 'layers.0.self_attn.scores' is not computed with --backend"
              ${bat} --backend cpu --stages scores "${data}/korean.txt")
attn_cli_case(batch_backend_unknown 2 "unknown backend 'tpu'" ${bat} --backend tpu "${data}/korean.txt")

# A Hugging Face checkpoint (tests/fixtures/pretrained): its own tokenizer (a tab starts BERT's second
# segment), the default stages, token ids past its vocabulary reported per item.
set(pre "${CMAKE_CURRENT_SOURCE_DIR}/fixtures/pretrained")
attn_cli_case(batch_bert 0 "\"line\":2,\"id\":null,\"tokens\":\\[\"\\[CLS\\]\",\"the\",\"dog\",\"\\[SEP\\]\",\"sat\",\"\\[SEP\\]\"\\].*\"encoder.layer.1.attention.self.attention_probs\":\\{\"shape\":\\[4,6,6\\].*\"last_hidden_state\""
              batch --model-dir "${pre}/bert_tiny" "${data}/pretrained_sentences.txt")
attn_cli_case(batch_gpt2_ids 3 "\"line\":1,.*\"next_token_probs\":\\{\"shape\":\\[317\\].*\"line\":2,\"id\":null,\"reason\":\"token id 5000 is outside the embedding table \\(317 rows\\)\""
              batch --model-dir "${pre}/gpt2_tiny" --stages next_token_probs --input-format jsonl "${data}/pretrained_ids.jsonl")
attn_cli_case(batch_decoder_kv_heads 2 "stage 'model.layers.0.self_attn.k_proj' has 2 heads \\(the key/value heads\\), and --heads 3"
              batch --model-dir "${pre}/llama3_gqa" --stages k_proj --heads 3 --input-format jsonl "${data}/pretrained_ids.jsonl")
attn_cli_case(batch_decoder_no_tokenizer 3 "\"reason\":\"a sentence needs the model's tokenizer.json, which its folder lacks: give token ids\""
              batch --model-dir "${pre}/llama3_gqa" "${data}/pretrained_sentences.txt")
attn_cli_case(batch_pretrained_backend 2 "a checkpoint runs the exact path"
              batch --model-dir "${pre}/bert_tiny" --backend cpu "${data}/pretrained_sentences.txt")
