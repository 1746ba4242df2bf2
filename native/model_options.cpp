#include "native/commands.hpp"

namespace attn::cli {

void add_pretrained_options(CLI::App& cmd, ModelOptions& o) {
  auto* dir = cmd.add_option("--model-dir", o.model_dir,
                             "a Hugging Face folder: config.json, model.safetensors, vocab.txt (BERT), vocab.json + "
                             "merges.txt (GPT-2) or tokenizer.json (the Llama family), optional tokenizer_config.json");
  cmd.add_option("--model", o.model_name,
                 "NAME[@REVISION]: a local folder, else a Hugging Face Hub repository (e.g. openai-community/gpt2) "
                 "downloaded into the Hub's cache (docs/hub.md)")
      ->excludes(dir)
      ->check([](const std::string& name) { return name.empty() ? "the repository id is empty" : std::string(); });
  cmd.add_option("--merges", o.merges, "GPT-2's merges.txt, beside a transformers --config, --weights and --vocab");
}

void add_download_quiet_flag(CLI::App& cmd, bool& quiet) {
  cmd.add_flag("--quiet", quiet, "no download progress (--model)");
}

void add_model_options(CLI::App& app, ModelOptions& o, bool seed_with_weights) {
  CLI::App* cmd = &app;
  cmd->add_option("--config", o.config_file, "model config JSON: vocab_size, d_model, num_heads, num_layers, d_ff, "
                                             "max_len, num_classes, dropout, norm_first, activation, pooling, "
                                             "layer_style, final_norm, classifier_head");
  auto* seed = cmd->add_option("--seed", o.seed, "initialise as PyTorch does after torch.manual_seed(N) (default 0)");
  auto* weights = cmd->add_option("--weights", o.weights, "load a PyTorch state_dict saved as safetensors");
  if (!seed_with_weights) weights->excludes(seed);
  cmd->add_option("--vocab", o.vocab, "vocabulary JSON {token: id}; default: built from the sentences");
  cmd->add_option("--mask", o.mask, "none | padding | causal | padding+causal")->capture_default_str();
  cmd->add_option("--vocab-size", o.vocab_size, "embedding rows (default: what the input needs)");
  cmd->add_option("--d-model", o.d_model, "model width (default 128)");
  cmd->add_option("--num-heads", o.num_heads, "attention heads; must divide d_model (default 8)");
  cmd->add_option("--num-layers", o.num_layers, "encoder layers (default 4)");
  cmd->add_option("--d-ff", o.d_ff, "feed-forward width (default 4 x d_model)");
  cmd->add_option("--max-len", o.max_len, "positional-encoding rows (default 512)");
  cmd->add_option("--num-classes", o.num_classes, "classifier outputs (default 5)");
  cmd->add_option("--dropout", o.dropout, "dropout probability (default 0.1; used with --train)");
  cmd->add_option("--activation", o.activation, "relu | gelu (default relu)");
  cmd->add_option("--pooling", o.pooling, "mean (the tutorial's x.mean(dim=1))");
  cmd->add_option("--layer-style", o.layer_style, "tutorial | torch (nn.TransformerEncoderLayer weights)");
  auto* pre = cmd->add_flag("--norm-first", o.norm_first, "pre-norm layers");
  cmd->add_flag("--post-norm", o.post_norm, "post-norm layers (the tutorial's; default)")->excludes(pre);
  cmd->add_flag("--encoder-only", o.encoder_only, "no pooling and fc: stop at the encoder output");
  cmd->add_flag("--train", o.train, "training mode: dropout draws from the generator, as PyTorch's train()");
}

}  // namespace attn::cli
