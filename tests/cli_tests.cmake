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
attn_cli_case(part_bad 2 "--part expects 1 or 2" tutorial --part 3)
attn_cli_case(part2 0 "Weights sum \\(should be 1\\): 1.0000.*\\[10\\] Causal Mask" tutorial --part 2 --seed 1)
attn_cli_case(part2_mask_refused 2 "--mask applies to the first tutorial only" tutorial --mask causal --part 2)
attn_cli_case(part2_json 0 "^\\{\"seed\":1,\"sections\":\\[\\{\"title\":\"Scaled Dot-Product Attention\",\"stages\":\\[\\{\"name\":\"Q\",\"shape\":\\[2,5,8\\]"
              tutorial --part 2 --seed 1 --json)


# attn encode
set(enc encode --d-model 16 --num-heads 2 --num-layers 1 --num-classes 3)
attn_cli_case(encode_help 0 "--save-weights" encode --help)
attn_cli_case(encode_default 0 "TransformerClassifier: 4 layers, d_model 128, 8 heads.*mode: evaluation" encode)
attn_cli_case(encode_json 0 "^\\{\"config\":\\{\"vocab_size\":9,.*\"mode\":\"eval\".*\"name\":\"layers.0.self_attn.attention_weights\",\"shape\":\\[4,2,4,4\\].*\"name\":\"logits\",\"shape\":\\[4,3\\]" ${enc} --json)
attn_cli_case(encode_train 0 "mode: training \\(dropout 0.1" ${enc} --train)
attn_cli_case(encode_seed_and_weights 2 "excludes" ${enc} --seed 1 --weights x.safetensors)
attn_cli_case(encode_heads 2 "num_heads \\(3\\) must divide d_model \\(16\\)" encode --d-model 16 --num-heads 3)
attn_cli_case(encode_weights_missing 2 "cannot|No such file|not found|open" ${enc} --weights /nonexistent.safetensors)
attn_cli_case(encode_weights_mismatch 2 "weights do not match the model; missing: embedding.weight"
              ${enc} --weights "${CMAKE_CURRENT_SOURCE_DIR}/fixtures/safetensors/encoder_f32.safetensors")
attn_cli_case(encode_vocab_unknown 2 "unknown token 'zebra' \\(the vocabulary has no \\[UNK\\]\\)"
              ${enc} --vocab "${CMAKE_CURRENT_SOURCE_DIR}/data/vocab.json" --sentence "hello zebra")
attn_cli_case(encode_vocab_unk 0 "'hello', '\\[UNK\\]'"
              ${enc} --vocab "${CMAKE_CURRENT_SOURCE_DIR}/data/vocab_unk.json" --sentence "hello zebra")
attn_cli_case(encode_ids_bad 2 "--ids \\(sequence 2\\) expects an integer" ${enc} --ids "1 2" --ids "3 x")
attn_cli_case(encode_ids_out_of_vocab 2 "token id 100 is outside the embedding table \\(8 rows\\)"
              ${enc} --vocab-size 8 --ids "1 100")
attn_cli_case(encode_config_missing 2 "cannot read config file" encode --config /nonexistent.json)
attn_cli_case(encode_config_bad_json 2 "is not valid JSON" encode --config "${CMAKE_CURRENT_SOURCE_DIR}/data/korean.txt")
attn_cli_case(encode_config_unknown_key 2 "unknown config key 'heads'" encode --config "${CMAKE_CURRENT_SOURCE_DIR}/data/bad_config.json")
attn_cli_case(encode_dropout 2 "--dropout expects a number in \\[0, 1\\)" ${enc} --dropout 1.5)
attn_cli_case(encode_save_unwritable 2 "/nonexistent-dir/w.safetensors" ${enc} --save-weights /nonexistent-dir/w.safetensors)
attn_cli_case(encode_too_long 2 "more than max_len 2" ${enc} --max-len 2)
attn_cli_case(encode_huge 2 "memory" encode --vocab-size 1000000000 --d-model 65536)

# attn encode on Hugging Face checkpoints (tests/fixtures/pretrained, written by tests/torchgen/pretrained.py).
set(pre "${CMAKE_CURRENT_SOURCE_DIR}/fixtures/pretrained")
attn_cli_case(encode_bert 0 "BertModel \\(bert\\): 2 layers, hidden 32, 4 heads.*'\\[CLS\\]', 'the', 'cat', 'sat', '.', '\\[SEP\\]'.*encoder.layer.1.attention.self.attention_probs torch.Size\\(\\[1, 4, 6, 6\\]\\).*pooler_output"
              encode --model-dir "${pre}/bert_tiny" --sentence "The cat sat.")
attn_cli_case(encode_bert_pair_json 0 "^\\{\"family\":\"bert\".*\"name\":\"token_type_ids\",\"shape\":\\[1,6\\],\"data\":\\[0,0,0,0,1,1\\]"
              encode --model-dir "${pre}/bert_tiny" --sentence "the cat\tsat" --json)
attn_cli_case(encode_bert_prefixed 0 "ignored\\): bert.embeddings.position_ids classifier.bias classifier.weight"
              encode --model-dir "${pre}/bert_prefixed" --sentence "the cat")
attn_cli_case(encode_gpt2_next 0 "GPT2LMHeadModel \\(gpt2\\).*logits torch.Size\\(\\[1, [0-9]+, 317\\]\\).*next token after sentence 1:\n +0\\.[0-9]+ +[0-9]+  "
              encode --model-dir "${pre}/gpt2_tiny" --sentence "the dog sat" --top-k 3 --temperature 0.5)
attn_cli_case(encode_gpt2_by_name 0 "\"next_tokens\":\\[\\[\\{\"id\":[0-9]+,\"token\":"
              encode --config "${pre}/gpt2_tiny/config.json" --weights "${pre}/gpt2_tiny/model.safetensors"
              --vocab "${pre}/gpt2_tiny/vocab.json" --merges "${pre}/gpt2_tiny/merges.txt" --sentence "the dog" --json)
# The Llama family's decoder (tests/torchgen/decoder.py): token ids, or sentences through the folder's
# tokenizer.json (llama_tiny's is shaped as Llama 2's: <s> from its post-processor, ▁ for spaces).
attn_cli_case(decoder_encode 0 "LlamaForCausalLM \\(llama\\): 2 layers, hidden 32, 4 query heads on 2 key/value heads of 8, intermediate 48; weights float32, [0-9.]+ KB in memory\n.*model.layers.1.self_attn.keys_rotated torch.Size\\(\\[2, 2, 4, 8\\]\\).*logits torch.Size\\(\\[2, 4, 64\\]\\).*next token after sequence 2:\n +0\\.[0-9]+ +[0-9]+\n"
              encode --model-dir "${pre}/llama3_gqa" --ids "5 17 42 3" --ids "1 2 3 4" --top-k 2)
attn_cli_case(decoder_json 0 "^\\{\"family\":\"qwen3\",\"architecture\":\"Qwen3ForCausalLM\".*\"key_value_head_of_query_head\":\\[0,0,1,1\\].*\"weights\":\\{\"dtype\":\"bfloat16\",\"bytes\":[0-9]+\\}.*\"name\":\"model.layers.0.self_attn.q_norm\",\"shape\":\\[1,4,3,16\\]"
              encode --model-dir "${pre}/qwen3_norm" --ids "1 2 3" --json)
# Gemma 2 (sandwich norms, soft caps) and GPT-NeoX from two shards (model.safetensors.index.json).
attn_cli_case(decoder_gemma2 0 "^Gemma2ForCausalLM \\(gemma2\\): 3 layers, hidden 32, 4 query heads on 2 key/value heads of 16.*model.layers.2.post_feedforward_layernorm torch.Size\\(\\[1, 3, 32\\]\\).*logits torch.Size\\(\\[1, 3, 64\\]\\)"
              encode --model-dir "${pre}/gemma2_cap" --ids "5 17 42")
attn_cli_case(decoder_neox_shards 0 "^\\{\"family\":\"gpt_neox\",\"architecture\":\"GPTNeoXForCausalLM\".*\"name\":\"model.layers.1.self_attn.queries_rotated\",\"shape\":\\[1,2,3,16\\]"
              encode --model-dir "${pre}/pythia_parallel" --ids "1 2 3" --json)
attn_cli_case(decoder_sentence 0 "^LlamaForCausalLM \\(llama\\).*\n\\['<s>', '▁the', '▁cat', '▁sat'\\]\n\\['<s>', '▁a', '▁dog', '▁ran'\\]\n.*logits torch.Size\\(\\[2, 4, 64\\]\\).*next token after sequence 2:\n +0\\.[0-9]+ +[0-9]+  [^\n]+\n"
              encode --model-dir "${pre}/llama_tiny" --sentence "the cat sat" --sentence "a dog ran" --top-k 2)
attn_cli_case(decoder_sentence_json 0 "\"input_ids\":\\[\\[1,[0-9,]+\\]\\],\"lengths\":\\[3\\],\"tokens\":\\[\\[\"<s>\",\"▁the\",\"▁cat\"\\]\\]"
              encode --model-dir "${pre}/llama_tiny" --sentence "the cat" --json)
attn_cli_case(decoder_sentence_and_ids 2 "give --sentence or --ids, not both"
              encode --model-dir "${pre}/llama_tiny" --sentence "the cat" --ids "1 2")
attn_cli_case(decoder_no_input 2 "give a sentence \\(--sentence TEXT\\) or token ids" encode --model-dir "${pre}/llama_tiny")
attn_cli_case(decoder_lengths 0 "\"input_ids\":\\[\\[1,[0-9]+,[0-9]+,0\\],\\[1,[0-9]+,[0-9]+,[0-9]+\\]\\],\"lengths\":\\[3,4\\],\"tokens\":\\[\\[\"<s>\",\"▁the\",\"▁cat\",\"[^\"]+\"\\]"
              encode --model-dir "${pre}/llama_tiny" --sentence "the cat" --sentence "a dog ran" --json)
attn_cli_case(decoder_no_tokenizer 2 "--sentence needs the model's tokenizer.json, which its folder lacks: give token ids with --ids"
              encode --model-dir "${pre}/mistral_window" --sentence "the cat")
attn_cli_case(decoder_no_ids 2 "this model's folder has no tokenizer.json: give token ids with --ids"
              encode --model-dir "${pre}/mistral_window")
attn_cli_case(decoder_id_outside 2 "token id 64 is outside the model's 64 rows" encode --model-dir "${pre}/mistral_window" --ids "1 64")
attn_cli_case(decoder_rotary_syntax 2 "--rotary expects QUERY,KEY \\(two positions of the first sequence\\), got '3'"
              encode --model-dir "${pre}/llama3_gqa" --ids "5 17 42 3" --rotary 3)
attn_cli_case(decoder_rotary_order 2 "--rotary QUERY,KEY: positions of one sequence with KEY <= QUERY < 4, got 1,2"
              encode --model-dir "${pre}/llama3_gqa" --ids "5 17 42 3" --rotary 1,2)
attn_cli_case(decoder_rotary_outside 2 "KEY <= QUERY < 4, got 4,0" encode --model-dir "${pre}/llama3_gqa" --ids "5 17 42 3" --rotary 4,0)
attn_cli_case(rotary_not_decoder 2 "--rotary splits a rotary score, a Llama-family model's \\(.*\\); this model adds its positions"
              encode --model-dir "${pre}/gpt2_tiny" --ids "1 2" --rotary 1,0)
# Their interventions against PyTorch's hooks (decoder_check.py: ablation of query heads and of key/value
# heads with their groups, the logit lens), and the bad inputs.
add_test(NAME cli.decoder_interventions COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/decoder_check.py" $<TARGET_FILE:attn>)
attn_cli_case(decoder_ablate_kv_range 2 "--ablate kv0.2: key/value head 2 is out of range \\(layer 0 has 2 key/value heads\\)"
              encode --model-dir "${pre}/llama3_gqa" --ids "1 2" --ablate kv0.2)
attn_cli_case(decoder_ablate_kv_syntax 2 "--ablate expects kvLAYER.HEAD for a key/value head \\(e.g. kv1.0\\), got 'kv1'"
              encode --model-dir "${pre}/llama3_gqa" --ids "1 2" --ablate kv1)
attn_cli_case(decoder_ablate_kv_layer 2 "--ablate: layer 2 is out of range \\(the model has 2 layers, 0 to 1\\)"
              encode --model-dir "${pre}/llama3_gqa" --ids "1 2" --ablate kv2.0)
attn_cli_case(decoder_ablate_head_range 2 "--ablate 1.4: head 4 is out of range \\(layer 1 has 4 heads\\)"
              encode --model-dir "${pre}/mistral_window" --ids "1 2" --ablate 1.4)
attn_cli_case(decoder_mean_data 2 "--mean-data is not supported for a Llama-family checkpoint yet"
              encode --model-dir "${pre}/llama3_gqa" --ids "1 2" --ablate 0.1 --ablation mean --mean-data x.txt)
attn_cli_case(decoder_lens 0 "logit lens \\(each position's most likely next token\\):\nitem 1:\nmodel.embed_tokens .*\nmodel.layers.1 "
              encode --model-dir "${pre}/llama3_gqa" --ids "1 2 3" --logit-lens)
attn_cli_case(encode_gpt2_temperature 2 "temperature must be a positive number"
              encode --model-dir "${pre}/gpt2_tiny" --sentence "the dog" --temperature 0)
attn_cli_case(encode_pretrained_seed 2 "--seed is an option of the tutorial's classifier, not of a checkpoint"
              encode --model-dir "${pre}/bert_tiny" --seed 3)
attn_cli_case(encode_pretrained_and_weights 2 "--model-dir takes the folder's config.json"
              encode --model-dir "${pre}/bert_tiny" --weights x.safetensors)
attn_cli_case(encode_pretrained_not_a_folder 2 "'/nonexistent' is not a folder" encode --model-dir /nonexistent)
attn_cli_case(encode_pretrained_pickle 2 "'pytorch_model.bin' is a PyTorch pickle.*convert it to model.safetensors"
              encode --model-dir "${CMAKE_CURRENT_SOURCE_DIR}/data/pickle_only")
attn_cli_case(encode_pretrained_family 2 "model family 't5' is not supported"
              encode --model-dir "${CMAKE_CURRENT_SOURCE_DIR}/data/unknown_family")
attn_cli_case(encode_pretrained_no_vocab 2 "a gpt2 model needs its merges.txt"
              encode --config "${pre}/gpt2_tiny/config.json" --weights "${pre}/gpt2_tiny/model.safetensors"
              --vocab "${pre}/gpt2_tiny/vocab.json")
add_test(NAME cli.encode_pretrained_npy
         COMMAND sh -c "out=$(mktemp -d) && '$<TARGET_FILE:attn>' encode --model-dir '${pre}/gpt2_tiny' --sentence 'the dog' --save-npy \"$out\" > /dev/null && test -s \"$out/h.1.attn.attn_weights.npy\" && test -s \"$out/next_token_probs.npy\"; status=$?; rm -rf \"$out\"; exit $status")
attn_cli_case(encode_merges_alone 2 "--merges belongs to a GPT-2 checkpoint" ${enc} --merges x.txt)

# A checkpoint by its Hub name (docs/hub.md): --model against a stand-in for the Hub on 127.0.0.1
# (tests/hub/hub_server.py), the cache file by file, cached runs without a request, and the faults.
# attn_hub_watch: snapshot() with the Watch attn-gui's Cancel button drives.
add_executable(attn_hub_watch hub/hub_watch.cpp)
target_link_libraries(attn_hub_watch PRIVATE attn_hub)
attn_target_defaults(attn_hub_watch)
add_test(NAME cli.hub COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/hub_check.py" $<TARGET_FILE:attn>
                              $<TARGET_FILE:attn_hub_watch>)
set_tests_properties(cli.hub PROPERTIES TIMEOUT 180)

# Interventions (docs/interventions.md): every stage of an ablated run against PyTorch doing the same
# ablation with TransformerLens's definitions (intervention_check.py), and the bad inputs.
add_test(NAME cli.interventions COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/intervention_check.py" $<TARGET_FILE:attn>)
set(abl encode --num-layers 2 --d-model 8 --num-heads 2)
attn_cli_case(ablate_head_range 2 "--ablate 0.2: head 2 is out of range \\(layer 0 has 2 heads\\)" ${abl} --ablate 0.2)
attn_cli_case(ablate_layer_range 2 "--ablate: layer 2 is out of range \\(the model has 2 layers, 0 to 1\\)" ${abl} --ablate 2.0)
attn_cli_case(ablate_syntax 2 "--ablate expects LAYER.HEAD items separated by commas" ${abl} --ablate 1)
attn_cli_case(ablate_empty_item 2 "--ablate expects LAYER.HEAD items.*got ''" ${abl} --ablate 0.1,)
attn_cli_case(ablate_mlp_range 2 "--ablate-mlp: layer 5 is out of range" ${abl} --ablate-mlp 5)
attn_cli_case(ablation_kind 2 "--ablation expects zero or mean, got 'half'" ${abl} --ablate 0.1 --ablation half)
attn_cli_case(ablate_kv_not_decoder 2 "--ablate kv0.1: key/value heads are the Llama family's; each head of the tutorial's classifier has its own" ${abl} --ablate kv0.1)
attn_cli_case(ablation_alone 2 "--ablation and --mean-data apply to --ablate or --ablate-mlp" ${abl} --ablation mean)
attn_cli_case(ablation_mean_data_zero 2 "--mean-data gives the means of --ablation mean" ${abl} --ablate 0.1 --mean-data x.txt)
attn_cli_case(ablation_mean_data_missing 2 "cannot read sentences file '/nonexistent.txt'"
              ${abl} --ablate 0.1 --ablation mean --mean-data /nonexistent.txt)
attn_cli_case(ablation_mean_data_unknown 2 "--mean-data '.*korean.txt': sentence [0-9]+: unknown token"
              ${abl} --sentence "나는 간다" --ablate 0.1 --ablation mean --mean-data "${CMAKE_CURRENT_SOURCE_DIR}/data/korean.txt")
attn_cli_case(ablate_backend 2 "--ablate runs on the exact path" ${abl} --ablate 0.1 --backend cpu)
attn_cli_case(ablate_train 2 "--ablate runs the model in evaluation mode: drop --train" ${abl} --ablate 0.1 --train)
attn_cli_case(tutorial_ablate_text 0 "ablated \\(mean\\): head 0.0\n=+\n1. INPUT" tutorial --ablate 0.0 --ablation mean)
attn_cli_case(tutorial_ablate_head 2 "--ablate 0.1: head 1 is out of range \\(layer 0 has 1 head\\)" tutorial --ablate 0.1)
attn_cli_case(tutorial_ablate_layer 2 "--ablate: layer 1 is out of range \\(the model has 1 layer, 0 to 0\\)" tutorial --ablate 1.0)
attn_cli_case(tutorial_ablation_alone 2 "--ablation applies to --ablate" tutorial --ablation mean)
attn_cli_case(tutorial_ablation_kind 2 "--ablation expects zero or mean, got 'one'" tutorial --ablate 0.0 --ablation one)
attn_cli_case(tutorial_ablate_part2 2 "--ablate applies to the first tutorial only" tutorial --part 2 --ablate 0.0)
attn_cli_case(ablate_gpt2_text 0 "ablated \\(mean\\): head 1.3 mlp 0\n"
              encode --model-dir "${pre}/gpt2_tiny" --sentence "the dog sat" --ablate 1.3 --ablate-mlp 0 --ablation mean)

# attn heads: TransformerLens's head detectors against their definitions on PyTorch's attention
# (head_detector_check.py), and the bad inputs.
add_test(NAME cli.head_detectors COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/head_detector_check.py" $<TARGET_FILE:attn>)
set(heads heads --model-dir "${pre}/gpt2_tiny")
attn_cli_case(heads_kind 2 "--detect: unknown head kind 'copy' \\(expected previous_token, duplicate_token or induction" ${heads} --detect induction,copy)
attn_cli_case(heads_kind_twice 2 "--detect names induction twice" ${heads} --detect induction,induction)
attn_cli_case(heads_measure 2 "--error-measure expects mul or abs, got 'l2'" ${heads} --error-measure l2)
attn_cli_case(heads_range_syntax 2 "--token-range expects LOW:HIGH, got '5'" ${heads} --token-range 5)
attn_cli_case(heads_range_order 2 "--token-range 9:3: LOW must be below HIGH" ${heads} --token-range 9:3)
attn_cli_case(heads_range_vocab 2 "--token-range 0:99999: the vocabulary has 317 ids" ${heads} --token-range 0:99999)
attn_cli_case(heads_seq_len_zero 2 "--seq-len expects an integer >= 1" ${heads} --seq-len 0)
attn_cli_case(heads_seq_len_long 2 "--seq-len 40: the sequences would have 81 tokens; the model takes at most 64" ${heads} --seq-len 40)
attn_cli_case(heads_sentences_and_seq_len 2 "--seq-len, --batch and --token-range shape random sequences" ${heads} --sentence "the dog" --seq-len 5)
attn_cli_case(heads_classifier_vocab 2 "the classifier's vocabulary size is unknown: give --vocab, --vocab-size" heads --num-layers 1)
attn_cli_case(heads_train 2 "attn heads runs the model in evaluation mode: drop --train" heads --vocab-size 9 --train)
attn_cli_case(heads_text 0 "GPT-2: 2 layers, 4 heads of 8\n4 sequence\\(s\\) of 41 tokens \\(random\\).*induction \\(mul\\):.*best: head" ${heads})

# attn patch and --logit-lens: TransformerLens's activation patching and the logit lens against the same
# computations in PyTorch (patching_check.py), and the bad inputs.
add_test(NAME cli.patching COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/patching_check.py" $<TARGET_FILE:attn>)
set(lm patch --model-dir "${pre}/gpt2_tiny" --clean "the cat sat" --corrupted "the dog sat")
set(cls patch --num-layers 2 --d-model 8 --num-heads 2 --num-classes 3 --clean "a b c" --corrupted "a d c")
attn_cli_case(patch_lengths 2 "the clean input has 3 tokens and the corrupted one 2: patching needs the same token count"
              patch --model-dir "${pre}/gpt2_tiny" --clean "the cat sat" --corrupted "the dog" --answer " the" --wrong " cat")
attn_cli_case(patch_answer_tokens 2 "--answer 'hello world' is 5 tokens \\('hello', '·w', 'o', 'r', 'ld'\\); the metric needs one" ${lm} --answer "hello world" --wrong " the")
attn_cli_case(patch_answer_missing 2 "give one of --answer TEXT and --answer-id N" ${lm} --wrong " the")
attn_cli_case(patch_answer_both 2 "give one of --wrong TEXT and --wrong-id N" ${lm} --answer " the" --wrong " cat" --wrong-id 3)
attn_cli_case(patch_answer_id_range 2 "--answer-id 5000 is outside the vocabulary \\(317 ids\\)" ${lm} --answer-id 5000 --wrong-id 1)
attn_cli_case(patch_answer_same 2 "--answer and --wrong are the same token" ${lm} --answer-id 7 --wrong-id 7)
attn_cli_case(patch_label_lm 2 "--label is a classifier's metric; a language model's is --answer and --wrong" ${lm} --label 1)
attn_cli_case(patch_bert 2 "BERT's base model has no output head" patch --model-dir "${pre}/bert_tiny" --clean "the cat" --corrupted "the dog" --label 0)
attn_cli_case(patch_label_missing 2 "the classifier's metric needs --label K" ${cls})
attn_cli_case(patch_label_range 2 "--label 3 is out of range \\(the classifier has 3 classes\\)" ${cls} --label 3)
attn_cli_case(patch_answer_classifier 2 "--answer and --wrong measure a language model; a classifier's metric is --label K" ${cls} --label 0 --answer a)
attn_cli_case(patch_sweep 2 "--sweep: unknown patch 'neurons' \\(expected heads, resid_pre, attn_out or mlp_out" ${cls} --label 0 --sweep heads,neurons)
attn_cli_case(patch_same_metric 2 "the clean and corrupted runs give the same metric"
              patch --num-layers 1 --clean "a b" --corrupted "a b" --label 0)
attn_cli_case(patch_unknown_word 2 "unknown token" ${cls} --label 0 --vocab "${CMAKE_CURRENT_SOURCE_DIR}/data/vocab.json")
attn_cli_case(patch_train 2 "attn patch runs the model in evaluation mode: drop --train" ${cls} --label 0 --train)
attn_cli_case(patch_required 2 "give --corrupted TEXT or --corrupted-ids" patch --clean "a b")
attn_cli_case(patch_text_and_ids 2 "give --clean TEXT or --clean-ids" patch --clean "a b" --clean-ids "1 2" --corrupted "a c")
attn_cli_case(patch_text 0 "corrupted: \\['a', 'd', 'c'\\].*6 patched runs, 9 layers computed \\(12 without resuming.*heads \\(recovery, layer × head\\):\n +head 0 +head 1\nlayer 0 "
              ${cls} --label 1 --sweep heads,mlp_out)
attn_cli_case(lens_bert 2 "--logit-lens reads GPT-2's unembedding or a classifier's head; BERT's base model has neither"
              encode --model-dir "${pre}/bert_tiny" --logit-lens)
attn_cli_case(lens_encoder_only 2 "--logit-lens needs a classifier head" encode --num-layers 1 --encoder-only --logit-lens)
attn_cli_case(lens_backend 2 "--logit-lens reads the exact path's residual stream: drop --backend" encode --logit-lens --backend cpu)
attn_cli_case(lens_gpt2_text 0 "logit lens \\(each position's most likely next token\\):\nitem 1:\nembeddings .*\nh.0 .*\nh.1 "
              encode --model-dir "${pre}/gpt2_tiny" --sentence "the dog sat" --logit-lens)

# attn attribute: each method against the same computation in PyTorch (attribution_check.py: autograd,
# Captum's Gauss–Legendre rule, networkx's maximum flow) on GPT-2, BERT and the classifier, and the bad inputs.
add_test(NAME cli.attribute COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/attribution_check.py" $<TARGET_FILE:attn>)
# attn encode --save-gradients: every weight's gradient of the next-token loss on the nine decoder fixtures
# against autograd (decoder_gradients_check.py).
add_test(NAME cli.decoder_gradients COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/decoder_gradients_check.py" $<TARGET_FILE:attn>)
attn_cli_case(gradients_not_decoder 2 "--save-gradients is for a Llama-family checkpoint \\(LlamaForCausalLM"
              encode --model-dir "${pre}/gpt2_tiny" --sentence "the dog" --save-gradients unwritten.safetensors)
attn_cli_case(gradients_ablated 2 "--save-gradients takes the model as it is: drop --ablate"
              encode --model-dir "${pre}/llama_tiny" --ids "1 2 3" --ablate 0.1 --save-gradients unwritten.safetensors)
attn_cli_case(gradients_one_token 2 "no position has a target to predict"
              encode --model-dir "${pre}/llama_tiny" --ids "5" --save-gradients unwritten.safetensors)
set(attr attribute --model-dir "${pre}/gpt2_tiny" --sentence "the cat sat")
set(attr_cls attribute --num-layers 2 --d-model 8 --num-heads 2 --num-classes 3 --sentence "a b c")
string(REPEAT "the cat " 40 long_sentence)
attn_cli_case(attribute_ig_text 0 "method: integrated-gradients\ntarget: '.*' \\(id [0-9]+\\), logit .* at position 2\n\n  the .*\n50 Gauss-Legendre steps; F\\(input\\) .*convergence delta"
              ${attr} --method integrated-gradients)
attn_cli_case(attribute_logit_text 0 "direct contributions to the target's logit \\(sum .*\n  embed .*\n  pos_embed .*\n  L0H0 .*\n  ln_f.bias "
              ${attr} --method logit-attribution)
attn_cli_case(attribute_rollout_bert 0 "output positions followed: 0\n\n  \\[CLS\\] "
              attribute --model-dir "${pre}/bert_tiny" --sentence "the cat" --method rollout)
attn_cli_case(attribute_method_unknown 2 "--method: unknown method 'saliency' \\(expected integrated-gradients, gradient-x-input, rollout, flow or logit-attribution\\)"
              ${attr} --method saliency)
attn_cli_case(attribute_method_missing 2 "--method is required" ${attr})
attn_cli_case(attribute_steps_zero 2 "--steps expects an integer >= 1" ${attr} --method integrated-gradients --steps 0)
attn_cli_case(attribute_steps_negative 2 "--steps expects an integer >= 1" ${attr} --method integrated-gradients --steps -3)
attn_cli_case(attribute_steps_many 2 "--steps 20000 is outside 1 to 10000" ${attr} --method integrated-gradients --steps 20000)
attn_cli_case(attribute_target_vocab 2 "--target-id 5000 is outside the vocabulary \\(317 ids\\)" ${attr} --method gradient-x-input --target-id 5000)
attn_cli_case(attribute_target_class 2 "--target-id 3 is outside the classes \\(3 classes\\)" ${attr_cls} --method rollout --target-id 3)
attn_cli_case(attribute_bert_gradients 2 "integrated-gradients attributes an output logit; BERT's base model has no output head"
              attribute --model-dir "${pre}/bert_tiny" --sentence "the cat" --method integrated-gradients)
attn_cli_case(attribute_bert_target 2 "BERT's base model has no output head: --target-id has nothing to name"
              attribute --model-dir "${pre}/bert_tiny" --sentence "the cat" --method flow --target-id 1)
attn_cli_case(attribute_classifier_logit 2 "logit-attribution decomposes GPT-2's residual stream" ${attr_cls} --method logit-attribution)
attn_cli_case(attribute_encoder_only 2 "this classifier has no head \\(--encoder-only\\)" ${attr_cls} --encoder-only --method rollout)
attn_cli_case(attribute_too_long 2 "the input has [0-9]+ tokens; the model takes at most 64"
              attribute --model-dir "${pre}/gpt2_tiny" --sentence "${long_sentence}" --method rollout)
attn_cli_case(attribute_ids_range 2 "token id 5000 is outside the vocabulary \\(317 ids\\)"
              attribute --model-dir "${pre}/gpt2_tiny" --ids "1 5000" --method flow)
attn_cli_case(attribute_no_input 2 "give one of --sentence TEXT and --ids" attribute --model-dir "${pre}/gpt2_tiny" --method flow)
attn_cli_case(attribute_decoder_text 0 "LlamaForCausalLM.*method: integrated-gradients.*convergence delta"
              attribute --model-dir "${pre}/llama_tiny" --sentence "the cat sat" --method integrated-gradients)
attn_cli_case(attribute_decoder_gemma 2 "Gemma's norms of each branch's output and its final cap do not add up"
              attribute --model-dir "${pre}/gemma2_cap" --ids "5 9 12" --method logit-attribution)
attn_cli_case(attribute_baseline_method 2 "--baseline-id is integrated gradients' baseline; flow has none"
              ${attr} --method flow --baseline-id 3)
attn_cli_case(attribute_baseline_vocab 2 "--baseline-id 5000 is outside the vocabulary \\(317 ids\\)"
              ${attr} --method integrated-gradients --baseline-id 5000)
attn_cli_case(attribute_threads_zero 2 "--threads" ${attr} --method flow --threads 0)
attn_cli_case(attribute_train 2 "attn attribute runs the model in evaluation mode: drop --train" ${attr_cls} --method rollout --train)

# Weights cross between attn and PyTorch in both directions, with the same logits.
add_test(NAME cli.encode_torch_roundtrip
         COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/torch_roundtrip.py" $<TARGET_FILE:attn>)

# attn bench: a smoke run of the small sizes (timings are reported, never asserted), and its bad input.
attn_cli_case(bench_quick 0 "\"case\": \"gemm\".*\"fraction_of_peak\"" bench --quick --json --threads 2 tutorial sdpa gemm)
# The training step beside PyTorch's (tests/bench_torch.py), small sizes.
attn_cli_case(bench_train_quick 0 "\"case\": \"train\".*\"speedup\"" bench --quick --json --threads 1 --torch train)
attn_cli_case(bench_train_lm_quick 0 "\"case\": \"train-lm\".*\"speedup\"" bench --quick --json --threads 1 --torch train-lm)
attn_cli_case(bench_attribute_quick 0 "\"case\": \"attribute\".*\"speedup\"" bench --quick --json --threads 1 --torch attribute)
attn_cli_case(bench_unknown_case 2 "unknown benchmark case 'flops'" bench flops)
attn_cli_case(bench_threads_zero 2 "--threads expects an integer >= 1" bench --threads 0 gemm)
attn_cli_case(bench_isa_unknown 2 "instruction set 'mmx' is not available" bench --isa mmx gemm)
attn_cli_case(bench_backend_unknown 2 "backend" bench --backend tpu gemm)

# Generation (docs/generate.md): attn generate against the same generation in PyTorch, greedy and
# sampled (generate_check.py), and the bad inputs.
add_test(NAME cli.generate COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/generate_check.py" $<TARGET_FILE:attn>)
set(gen generate --model-dir "${pre}/gpt2_tiny")
attn_cli_case(generate_text 0 "the cat sat.*\n\n  step      id  probability  token\n     1 " ${gen} --prompt "the cat sat" --max-new-tokens 3)
attn_cli_case(generate_no_prompt 2 "give the prompt as --prompt TEXT or --prompt-ids" ${gen})
attn_cli_case(generate_two_prompts 2 "give the prompt as --prompt TEXT or --prompt-ids" ${gen} --prompt "the" --prompt-ids "1 2")
attn_cli_case(generate_bad_prompt_ids 2 "--ids" ${gen} --prompt-ids "1 x")
# A Llama-family decoder (docs/decoders.md#generation): its cache holds the key/value heads only.
attn_cli_case(generate_decoder 0 "^<s> the cat.*\n\n  step      id  probability  token\n     1 "
              generate --model-dir "${pre}/llama_tiny" --prompt "the cat" --max-new-tokens 3)
attn_cli_case(generate_decoder_ids 0 "^<id 5> <id 17> <id 42>.*\n     4 "
              generate --model-dir "${pre}/llama3_gqa" --prompt-ids "5 17 42" --max-new-tokens 4)
attn_cli_case(generate_decoder_no_tokenizer 2 "--prompt needs the model's tokenizer.json, which its folder lacks"
              generate --model-dir "${pre}/mistral_window" --prompt "the")
attn_cli_case(generate_decoder_id_outside 2 "prompt id 64 is outside the model's 64 tokens"
              generate --model-dir "${pre}/mistral_window" --prompt-ids "1 64")
attn_cli_case(generate_decoder_too_long 2 "the prompt's 2 tokens and 63 new ones make more than the model's 64 positions"
              generate --model-dir "${pre}/mistral_window" --prompt-ids "1 2" --max-new-tokens 63)
attn_cli_case(generate_no_model 2 "attn generate needs a GPT-2 checkpoint" generate --prompt "the")
attn_cli_case(generate_bert 2 "generation needs a GPT-2 checkpoint \\(this one is BERT\\)"
              generate --model-dir "${pre}/bert_tiny" --prompt "the")
attn_cli_case(generate_too_long 2 "the prompt's 3 tokens and 100000 new ones make more than the model's [0-9]+ positions"
              ${gen} --prompt "the cat sat" --max-new-tokens 100000)
attn_cli_case(generate_zero_tokens 2 "--max-new-tokens expects an integer >= 1" ${gen} --prompt "the" --max-new-tokens 0)
attn_cli_case(generate_temperature 2 "--temperature must be 0 \\(greedy\\) or positive" ${gen} --prompt "the" --temperature -1)
attn_cli_case(generate_top_p 2 "--top-p must be in \\(0, 1\\]" ${gen} --prompt "the" --top-p 1.5)
attn_cli_case(generate_top_k 2 "--top-k expects an integer >= 0" ${gen} --prompt "the" --top-k -2)
attn_cli_case(generate_seed 2 "--seed" ${gen} --prompt "the" --seed x)
attn_cli_case(generate_threads 2 "--threads expects auto or an integer >= 1, got '0'" ${gen} --prompt "the" --threads 0)

# Comparing traces (docs/compare.md): attn diff of the tutorial against PyTorch's stages saved as .npy
# (diff_check.py), two small documents, and the bad inputs.
add_test(NAME cli.diff COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/diff_check.py" $<TARGET_FILE:attn>)
set(traces "${CMAKE_CURRENT_SOURCE_DIR}/data")
attn_cli_case(diff_beyond 1 "x  beyond  \\[2, 2\\]  max \\|Δ\\| 0.5  max rel 0.143  max ULPs 2097152  1 beyond; worst at 2: A 3, B 3.5\ny  only_in_a  \\[1\\]\nz  only_in_b  \\[1\\]\n1 stages compared .*the first to differ is x; NOT within"
              diff "${traces}/trace_a.json" "${traces}/trace_b.json")
attn_cli_case(diff_within 0 "x  within .*; within the tolerance" diff "${traces}/trace_a.json" "${traces}/trace_b.json" --atol 0.5)
attn_cli_case(diff_same 0 "2 stages compared \\(rtol 1e-05, atol 1e-08\\): all bit-identical; within the tolerance"
              diff "${traces}/trace_a.json" "${traces}/trace_a.json")
attn_cli_case(diff_missing 2 "cannot read trace document '/nonexistent.json'" diff /nonexistent.json "${traces}/trace_a.json")
attn_cli_case(diff_not_trace 2 "vocab.json': not a trace document" diff "${traces}/vocab.json" "${traces}/trace_a.json")
attn_cli_case(diff_bad_shape 2 "stage 'x': \"shape\" \\[3\\] holds 3 values, \"data\" 2" diff "${traces}/trace_bad_shape.json" "${traces}/trace_a.json")
attn_cli_case(diff_no_npy 2 "holds no .npy file" diff "${traces}/trace_a.json" "${traces}")
attn_cli_case(diff_bad_npy 2 "bad_big_endian.npy': dtype '>f4' is not supported" diff "${traces}/trace_a.json" "${CMAKE_CURRENT_SOURCE_DIR}/fixtures/safetensors")
attn_cli_case(diff_no_common 2 "have no stage name in common" diff "${traces}/trace_a.json" "${CMAKE_CURRENT_SOURCE_DIR}/fixtures/safetensors/vector_f4.npy")
attn_cli_case(diff_rtol 2 "--rtol -1: must be 0 or more" diff "${traces}/trace_a.json" "${traces}/trace_a.json" --rtol -1)
attn_cli_case(diff_one_side 2 "b is required" diff "${traces}/trace_a.json")
# Figures: attn encode --plot STAGE --svg FILE read back by an XML parser (svg_check.py).
add_test(NAME cli.svg COMMAND /usr/bin/python3 "${CMAKE_CURRENT_SOURCE_DIR}/svg_check.py" $<TARGET_FILE:attn>)
