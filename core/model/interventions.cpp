#include "core/model/interventions.hpp"

#include <algorithm>

#include "core/base/error.hpp"
#include "core/base/parse.hpp"

namespace attn {

ModelStages model_stages(const TransformerConfig& c) {
  return {StageFamily::classifier, c.num_layers, c.num_heads, c.head_dim(), c.norm_first, c.final_norm};
}

ModelStages model_stages(const PretrainedConfig& c) {
  return {c.family == ModelFamily::bert ? StageFamily::bert : StageFamily::gpt2, c.num_layers, c.num_heads,
          c.head_dim(), c.family == ModelFamily::gpt2, c.family == ModelFamily::gpt2};
}

ModelStages model_stages(const DecoderConfig& c) {
  ModelStages m{StageFamily::decoder, c.num_layers, c.num_heads, c.head_dim, true, true};
  m.kv_heads = c.num_kv_heads;
  if (c.hidden_size != c.num_heads * c.head_dim) m.hidden = c.hidden_size;
  return m;
}

std::string stage_family_name(StageFamily f) {
  switch (f) {
    case StageFamily::tutorial: return "the first tutorial's attention";
    case StageFamily::classifier: return "the tutorial's classifier";
    case StageFamily::bert: return "BERT";
    case StageFamily::gpt2: return "GPT-2";
    case StageFamily::decoder: return "the Llama family's decoder";
  }
  return "";
}

ModelStages model_stages(const TutorialConfig& c) { return {StageFamily::tutorial, 1, 1, c.d_model, false, false}; }

namespace {

using Aliases = std::vector<std::pair<std::string, std::string>>;

std::string layer_prefix(const ModelStages& m, size_t layer) {
  const std::string n = std::to_string(layer);
  switch (m.family) {
    case StageFamily::tutorial: return "";
    case StageFamily::classifier: return "layers." + n + ".";
    case StageFamily::bert: return "encoder.layer." + n + ".";
    case StageFamily::gpt2: return "h." + n + ".";
    case StageFamily::decoder: return "model.layers." + n + ".";
  }
  return "";
}

// The stage a layer's residual stream leaves it as (TransformerLens: the next layer's resid_pre).
std::string layer_output(const ModelStages& m, size_t layer) {
  if (m.family == StageFamily::tutorial) return "attention_output";  // no residual stream: its single head's output
  const std::string p = layer_prefix(m, layer);
  const bool named_by_block = m.family == StageFamily::gpt2 || m.family == StageFamily::decoder;
  return named_by_block ? p.substr(0, p.size() - 1) : p + "output";
}

// TransformerLens's names of one layer's tensors that this family records as a stage. Post-norm
// models (BERT, the tutorial's default) record the normalised streams, not the sums before each
// LayerNorm that TransformerLens calls resid_mid and resid_post there.
Aliases layer_aliases(const ModelStages& m, size_t layer) {
  const std::string b = "blocks." + std::to_string(layer) + ".", p = layer_prefix(m, layer);
  const bool tutorials = m.family == StageFamily::tutorial || m.family == StageFamily::classifier;
  const std::string embedded = tutorials ? "embedded" : m.family == StageFamily::decoder ? "model.embed_tokens" : "embeddings";
  const std::string resid_pre = layer == 0 ? embedded : layer_output(m, layer - 1);
  Aliases a = {{b + "hook_resid_pre", resid_pre}};
  const auto add = [&](const std::string& tl, const std::string& ours) { a.emplace_back(b + tl, p + ours); };
  switch (m.family) {
    case StageFamily::tutorial:  // q, k, v straight from the embedded tokens; nothing after z
      add("attn.hook_q", "query");
      add("attn.hook_k", "key");
      add("attn.hook_v", "value");
      add("attn.hook_pattern", "attention_weights");
      add("attn.hook_z", "attention_output");
      break;
    case StageFamily::classifier:
      add("attn.hook_q", "self_attn.query");
      add("attn.hook_k", "self_attn.key");
      add("attn.hook_v", "self_attn.value");
      add("attn.hook_pattern", "self_attn.attention_weights");
      add("attn.hook_z", "self_attn.attention_output");
      add("hook_attn_out", "self_attn.output");
      add("hook_mlp_out", "ffn.output");
      add("ln1.hook_normalized", "norm1");
      add("ln2.hook_normalized", "norm2");
      if (m.norm_first)
        a.emplace_back(b + "hook_resid_post", layer_output(m, layer));
      else
        a.emplace_back(b + "hook_normalized_resid_post", layer_output(m, layer));
      break;
    case StageFamily::bert:
      add("attn.hook_q", "attention.self.query");
      add("attn.hook_k", "attention.self.key");
      add("attn.hook_v", "attention.self.value");
      add("attn.hook_attn_scores", "attention.self.attention_scores");
      add("attn.hook_pattern", "attention.self.attention_probs");
      add("attn.hook_z", "attention.self.context");
      add("hook_attn_out", "attention.output.dense");
      add("ln1.hook_normalized", "attention.output");
      add("mlp.hook_post", "intermediate");
      add("hook_mlp_out", "output.dense");
      add("hook_normalized_resid_post", "output");
      break;
    case StageFamily::gpt2:
      add("ln1.hook_normalized", "ln_1");
      add("attn.hook_q", "attn.query");
      add("attn.hook_k", "attn.key");
      add("attn.hook_v", "attn.value");
      add("attn.hook_attn_scores", "attn.scores");
      add("attn.hook_pattern", "attn.attn_weights");
      add("attn.hook_z", "attn.merged");
      add("hook_attn_out", "attn.c_proj");
      add("hook_resid_mid", "residual");
      add("ln2.hook_normalized", "ln_2");
      add("mlp.hook_pre", "mlp.c_fc");
      add("mlp.hook_post", "mlp.act");
      add("hook_mlp_out", "mlp.c_proj");
      a.emplace_back(b + "hook_resid_post", layer_output(m, layer));
      break;
    case StageFamily::decoder:  // TransformerLens's Llama: q and k before the rotation, rot_q and rot_k after
      add("ln1.hook_normalized", "input_layernorm");
      add("attn.hook_q", "self_attn.q_proj");
      add("attn.hook_k", "self_attn.k_proj");
      add("attn.hook_v", "self_attn.v_proj");
      add("attn.hook_rot_q", "self_attn.queries_rotated");
      add("attn.hook_rot_k", "self_attn.keys_rotated");
      add("attn.hook_attn_scores", "self_attn.scores");
      add("attn.hook_pattern", "self_attn.attn_weights");
      add("attn.hook_z", "self_attn.merged");
      add("hook_attn_out", "self_attn.o_proj");
      add("hook_resid_mid", "residual");
      add("ln2.hook_normalized", "post_attention_layernorm");
      add("mlp.hook_pre", "mlp.gate_proj");
      add("mlp.hook_pre_linear", "mlp.up_proj");
      add("hook_mlp_out", "mlp.down_proj");
      a.emplace_back(b + "hook_resid_post", layer_output(m, layer));
      break;
  }
  return a;
}

Aliases model_aliases(const ModelStages& m) {
  Aliases a;
  switch (m.family) {
    case StageFamily::tutorial:
      a = {{"hook_embed", "embedding"}, {"hook_pos_embed", "positional_encoding"}};
      break;
    case StageFamily::classifier:
      a = {{"hook_embed", "embedding"}, {"hook_pos_embed", "positional_encoding"}};
      if (m.final_norm) a.emplace_back("ln_final.hook_normalized", "encoder_output");
      break;
    case StageFamily::bert:
      a = {{"hook_embed", "embeddings.word_embeddings"}, {"hook_pos_embed", "embeddings.position_embeddings"},
           {"hook_token_type_embed", "embeddings.token_type_embeddings"}};
      break;
    case StageFamily::gpt2:
      a = {{"hook_embed", "wte"}, {"hook_pos_embed", "wpe"}, {"ln_final.hook_normalized", "ln_f"}};
      break;
    case StageFamily::decoder:  // no position embedding: the rotation inside each layer places the tokens
      a = {{"hook_embed", "model.embed_tokens"}, {"ln_final.hook_normalized", "model.norm"}};
      break;
  }
  return a;
}

bool is_transformer_lens_name(const std::string& name) {
  return name.rfind("hook_", 0) == 0 || name.rfind("blocks.", 0) == 0 || name.rfind("ln_final.", 0) == 0;
}


}  // namespace

std::vector<std::pair<std::string, std::string>> stage_aliases(const ModelStages& m) {
  Aliases a = model_aliases(m);
  for (size_t layer = 0; layer < m.layers; ++layer) {
    Aliases l = layer_aliases(m, layer);
    a.insert(a.end(), l.begin(), l.end());
  }
  return a;
}

std::string resolve_stage_name(const ModelStages& m, const std::string& name) {
  if (!is_transformer_lens_name(name)) return name;
  Aliases candidates = model_aliases(m);
  if (const auto layer = layer_of_stage(name)) {
    if (layer->index >= m.layers)
      throw InputError("'" + name + "': layer " + std::to_string(layer->index) + " is out of range (the model has " +
                       std::to_string(m.layers) + " layers)");
    candidates = layer_aliases(m, layer->index);
  }
  for (const auto& [tl, ours] : candidates)
    if (tl == name) return ours;
  std::vector<std::string> names;
  for (const auto& [tl, ours] : candidates) names.push_back(tl);
  const std::string near = near_names(name, names);
  throw InputError("'" + name + "': " + stage_family_name(m.family) + " records no stage under this TransformerLens name" +
                   (near.empty() ? std::string() : "; near names: " + near));
}

std::string head_output_stage(const ModelStages& m, size_t layer) {
  return resolve_stage_name(m, "blocks." + std::to_string(layer) + ".attn.hook_z");
}

std::string mlp_output_stage(const ModelStages& m, size_t layer) {
  return resolve_stage_name(m, "blocks." + std::to_string(layer) + ".hook_mlp_out");
}

std::string attention_output_stage(const ModelStages& m, size_t layer) {
  return resolve_stage_name(m, "blocks." + std::to_string(layer) + ".hook_attn_out");
}

std::vector<std::string> residual_stream_stages(const ModelStages& m) {
  std::vector<std::string> names;
  for (size_t layer = 0; layer < m.layers; ++layer)
    names.push_back(resolve_stage_name(m, "blocks." + std::to_string(layer) + ".hook_resid_pre"));
  if (m.layers) names.push_back(layer_output(m, m.layers - 1));
  return names;
}

namespace {

std::string out_of_range(const std::string& flag, size_t layer, const ModelStages& m) {
  return flag + ": layer " + std::to_string(layer) + " is out of range (the model has " + std::to_string(m.layers) +
         (m.layers == 1 ? " layer, 0 to " : " layers, 0 to ") + std::to_string(m.layers ? m.layers - 1 : 0) + ")";
}

void check_heads(const std::vector<HeadIndex>& heads, const ModelStages& m, const std::string& flag) {
  if (m.layers == 0 || m.heads == 0) throw InputError(flag + ": this model has no attention heads");
  for (const HeadIndex& h : heads) {
    if (h.layer >= m.layers) throw InputError(out_of_range(flag, h.layer, m));
    if (h.head >= m.heads)
      throw InputError(flag + " " + std::to_string(h.layer) + "." + std::to_string(h.head) + ": head " +
                       std::to_string(h.head) + " is out of range (layer " + std::to_string(h.layer) + " has " +
                       std::to_string(m.heads) + (m.heads == 1 ? " head)" : " heads)"));
  }
}

void check_layers(const std::vector<size_t>& layers, const ModelStages& m, const std::string& flag) {
  if (!layers.empty() && m.family == StageFamily::tutorial)
    throw InputError(flag + ": the first tutorial has no feed-forward block (only its single attention head)");
  for (size_t layer : layers)
    if (layer >= m.layers) throw InputError(out_of_range(flag, layer, m));
}

HeadIndex parse_head_item(const std::string& item, const std::string& flag) {
  const size_t dot = item.find('.');
  if (dot == std::string::npos)
    throw InputError(flag + " expects LAYER.HEAD items separated by commas (e.g. 0.1,1.3), got '" + item + "'");
  return {parse_size(flag + " (layer)", item.substr(0, dot), 0), parse_size(flag + " (head)", item.substr(dot + 1), 0)};
}

// "kvL.J" → the query heads key/value head J of layer L serves, J·g … J·g + g − 1 (g = heads / kv_heads).
std::vector<HeadIndex> key_value_group(const std::string& item, const ModelStages& m) {
  if (m.kv_heads == 0)
    throw InputError("--ablate " + item + ": key/value heads are the Llama family's; each head of " +
                     stage_family_name(m.family) + " has its own (give LAYER.HEAD)");
  if (item.find('.') == std::string::npos)
    throw InputError("--ablate expects kvLAYER.HEAD for a key/value head (e.g. kv1.0), got '" + item + "'");
  const HeadIndex kv = parse_head_item(item.substr(2), "--ablate");
  if (kv.head >= m.kv_heads)
    throw InputError("--ablate " + item + ": key/value head " + std::to_string(kv.head) + " is out of range (layer " +
                     std::to_string(kv.layer) + " has " + std::to_string(m.kv_heads) +
                     (m.kv_heads == 1 ? " key/value head)" : " key/value heads)"));
  const size_t g = m.group();
  std::vector<HeadIndex> group;
  for (size_t h = kv.head * g; h < (kv.head + 1) * g; ++h) group.push_back({kv.layer, h});
  return group;
}

}  // namespace

std::vector<HeadIndex> parse_head_list(const std::string& text, const std::string& flag) {
  std::vector<HeadIndex> heads;
  for (const std::string& item : split_commas(text)) heads.push_back(parse_head_item(item, flag));
  return heads;
}

std::vector<size_t> parse_layer_list(const std::string& text, const std::string& flag) {
  std::vector<size_t> layers;
  for (const std::string& item : split_commas(text)) layers.push_back(parse_size(flag + " (layer)", item, 0));
  return layers;
}

std::vector<HeadIndex> parse_heads(const std::string& text, const ModelStages& m) {
  if (m.layers == 0 || m.heads == 0) throw InputError("--ablate: this model has no attention heads");
  std::vector<HeadIndex> heads;
  for (const std::string& item : split_commas(text)) {
    const std::vector<HeadIndex> some =
        item.rfind("kv", 0) == 0 ? key_value_group(item, m) : std::vector<HeadIndex>{parse_head_item(item, "--ablate")};
    for (const HeadIndex& h : some)  // a head named twice (alone and in its group) is ablated once
      if (std::find(heads.begin(), heads.end(), h) == heads.end()) heads.push_back(h);
  }
  check_heads(heads, m, "--ablate");
  return heads;
}

std::vector<size_t> parse_layers(const std::string& text, const ModelStages& m, const std::string& flag) {
  std::vector<size_t> layers = parse_layer_list(text, flag);
  check_layers(layers, m, flag);
  return layers;
}

void check_ablation(const Ablation& a, const ModelStages& m) {
  if (!a.heads.empty()) check_heads(a.heads, m, "ablate");
  check_layers(a.mlps, m, "ablate_mlp");
}

std::string head_list_text(const std::vector<HeadIndex>& heads) {
  std::string out;
  for (const HeadIndex& h : heads) out += (out.empty() ? "" : ",") + std::to_string(h.layer) + "." + std::to_string(h.head);
  return out;
}

std::string layer_list_text(const std::vector<size_t>& layers) {
  std::string out;
  for (size_t l : layers) out += (out.empty() ? "" : ",") + std::to_string(l);
  return out;
}

Json ablation_json(const Ablation& a) {
  Json heads = Json::array();
  for (const HeadIndex& h : a.heads) heads.push_back({h.layer, h.head});
  return {{"heads", heads}, {"mlps", a.mlps}, {"kind", ablation_kind_name(a.kind)}};
}

std::string ablation_text(const Ablation& a) {
  if (a.empty()) return "";
  std::string out = "ablated (" + std::string(ablation_kind_name(a.kind)) + "):";
  for (const HeadIndex& h : a.heads) out += " head " + std::to_string(h.layer) + "." + std::to_string(h.head);
  for (size_t l : a.mlps) out += " mlp " + std::to_string(l);
  return out + "\n";
}

AblationKind parse_ablation_kind(const std::string& text) {
  if (text == "zero") return AblationKind::zero;
  if (text == "mean") return AblationKind::mean;
  throw InputError("--ablation expects zero or mean, got '" + text + "'");
}

const char* ablation_kind_name(AblationKind kind) { return kind == AblationKind::zero ? "zero" : "mean"; }

namespace {

// The mean over the real tokens of every item of `stage` [B, S, W], columns [begin, begin + width).
std::vector<float> real_token_mean(const Tensor& stage, const std::vector<size_t>& lengths, size_t begin, size_t width) {
  const size_t B = stage.shape(0), S = stage.shape(1), W = stage.shape(2);
  std::vector<double> sum(width, 0.0);
  size_t count = 0;
  for (size_t b = 0; b < B; ++b)
    for (size_t s = 0; s < std::min(S, b < lengths.size() ? lengths[b] : S); ++s, ++count)
      for (size_t i = 0; i < width; ++i) sum[i] += stage.data()[(b * S + s) * W + begin + i];
  std::vector<float> mean(width);
  for (size_t i = 0; i < width; ++i) mean[i] = float(sum[i] / double(std::max<size_t>(count, 1)));
  return mean;
}

// Columns [begin, begin + width) of every position of `value` [B, S, W] set to `fill` (zeros if empty).
void fill_columns(Tensor& value, size_t begin, size_t width, const std::vector<float>& fill) {
  const size_t rows = value.shape(0) * value.shape(1), W = value.shape(2);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < width; ++i) value.data()[r * W + begin + i] = fill.empty() ? 0.0f : fill[i];
}

void add_column_hook(Hooks& hooks, const std::string& stage, size_t begin, size_t width, AblationKind kind,
                     const Trace* clean, const std::vector<size_t>& lengths) {
  std::vector<float> fill;
  if (kind == AblationKind::mean) {
    if (!clean) throw InputError("mean ablation needs a clean run to take the means from");
    fill = real_token_mean(clean->at(stage), lengths, begin, width);
  }
  hooks.add(stage, [begin, width, fill](Tensor& value) { fill_columns(value, begin, width, fill); });
}

}  // namespace

Hooks ablation_hooks(const ModelStages& m, const Ablation& a, const Trace* clean, const std::vector<size_t>& lengths) {
  Hooks hooks;
  for (const HeadIndex& h : a.heads)
    add_column_hook(hooks, head_output_stage(m, h.layer), h.head * m.head_dim, m.head_dim, a.kind, clean, lengths);
  for (size_t layer : a.mlps)  // the block's output: all d_model columns
    add_column_hook(hooks, mlp_output_stage(m, layer), 0, m.width(), a.kind, clean, lengths);
  return hooks;
}

}  // namespace attn
