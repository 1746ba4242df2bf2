// attn heads: what kind each attention head is, by TransformerLens's head detectors
// (core/model/head_detectors.hpp), on repeated random tokens or on sentences.
#include <algorithm>
#include <cstdio>

#include "core/base/error.hpp"
#include "core/model/circuits.hpp"
#include "core/model/head_detectors.hpp"
#include "core/model/loaded_model.hpp"
#include "native/commands.hpp"
#include "native/hub.hpp"

namespace attn::cli {
namespace {

// The ordinary tokens the random sequences draw from: the classifier's past [PAD], BERT's past its
// special tokens, GPT-2's all but <|endoftext|>; or --token-range LOW:HIGH (high excluded).
TokenRange token_range(const HeadsOptions& o, const LoadedModel& m) {
  const int64_t V = int64_t(m.vocab_size());
  TokenRange r{1, V};
  if (m.pretrained) {
    const PretrainedTokenizer& t = m.pretrained->tokenizer;
    if (m.pretrained->model.config.family == ModelFamily::gpt2) {
      r = {0, V};
      if (tokenizer_find(t, "<|endoftext|>") == V - 1) r.high = V - 1;
    } else {
      r.low = 0;
      for (const std::string& s : std::get<WordPieceTokenizer>(t).specials()) r.low = std::max(r.low, *tokenizer_find(t, s) + 1);
    }
  }
  if (!o.token_range.empty()) r = parse_token_range(o.token_range, m.vocab_size());
  if (r.low >= r.high)
    throw InputError("no tokens to draw from: the range [" + std::to_string(r.low) + ", " + std::to_string(r.high) +
                     ") is empty");
  return r;
}

// The first and last tokens a model's sequences carry: GPT-2's <|endoftext|> before (TransformerLens's
// BOS), BERT's [CLS] before and [SEP] after; none for the classifier.
std::pair<std::vector<int64_t>, std::vector<int64_t>> framing(const LoadedModel& m) {
  if (!m.pretrained) return {};
  const PretrainedTokenizer& t = m.pretrained->tokenizer;
  const auto one = [&](const char* token) {
    const auto id = tokenizer_find(t, token);
    return id ? std::vector<int64_t>{*id} : std::vector<int64_t>{};
  };
  if (m.pretrained->model.config.family == ModelFamily::gpt2) return {one("<|endoftext|>"), {}};
  return {one("[CLS]"), one("[SEP]")};
}

struct Sequences {
  ModelInput input;
  Json about;
  size_t fitted_half = 0;  // the random half's length when fitted to the model's positions, else 0
};

// --seq-len, else 20 or as many as fit the model's positions twice (a small trained model has 24).
size_t random_half(const HeadsOptions& o, const LoadedModel& m, size_t framing_tokens) {
  if (!o.seq_len.empty()) return parse_size("--seq-len", o.seq_len, 1);
  const size_t room = m.max_positions() > framing_tokens ? (m.max_positions() - framing_tokens) / 2 : 0;
  if (room == 0)
    throw InputError("the model's " + std::to_string(m.max_positions()) + " positions hold no repeated sequence");
  return std::min<size_t>(20, room);
}

Sequences random_sequences(const HeadsOptions& o, const LoadedModel& m) {
  const auto [before, after] = framing(m);
  const size_t half = random_half(o, m, before.size() + after.size());
  const std::string seq_len = std::to_string(half);
  const size_t batch = parse_size("--batch", o.batch.empty() ? "4" : o.batch, 1);
  const TokenRange r = token_range(o, m);
  const size_t length = before.size() + 2 * half + after.size();
  if (length > m.max_positions())
    throw InputError("--seq-len " + seq_len + ": the sequences would have " + std::to_string(length) +
                     " tokens; the model takes at most " + std::to_string(m.max_positions()));
  if (double(batch) * double(length) > 1e6) throw InputError("--batch × the sequence length is over 10^6 tokens");
  const uint64_t seed = parse_seed(o.model.seed.empty() ? "0" : o.model.seed);
  TorchGenerator gen(seed);
  const std::vector<int64_t> ids = repeated_random_tokens(gen, batch, half, r.low, r.high);
  std::vector<std::vector<int64_t>> rows;
  for (size_t b = 0; b < batch; ++b) {
    rows.push_back(before);
    rows.back().insert(rows.back().end(), ids.begin() + b * 2 * half, ids.begin() + (b + 1) * 2 * half);
    rows.back().insert(rows.back().end(), after.begin(), after.end());
  }
  const size_t fitted_half = o.seq_len.empty() && half < 20 ? half : 0;
  Json about = {{"source", "random"}, {"seq_len", half}, {"seq_len_fitted", fitted_half != 0},
                {"batch", batch}, {"seed", seed},
                {"token_range", {r.low, r.high}}, {"before", before}, {"after", after}};
  return {m.from_ids(rows), std::move(about), fitted_half};
}

std::string scores_table(const HeadScores& s) {
  std::string out = "        ";
  char cell[32];
  for (size_t h = 0; h < s.heads; ++h) out += (std::snprintf(cell, sizeof cell, " head %-2zu", h), cell);
  size_t best = 0;
  for (size_t layer = 0; layer < s.layers; ++layer) {
    out += (std::snprintf(cell, sizeof cell, "\nlayer %-2zu", layer), cell);
    for (size_t h = 0; h < s.heads; ++h) {
      const size_t i = layer * s.heads + h;
      if (s.scores[i] > s.scores[best]) best = i;
      out += (std::snprintf(cell, sizeof cell, " %7.4f", s.scores[i]), cell);
    }
  }
  return out + "\nbest: head " + std::to_string(best / s.heads) + "." + std::to_string(best % s.heads) + "\n";
}

// The earlier head's writing read by the later one, for every pair of layers (core/model/circuits.hpp).
std::vector<CompositionScores> compositions(const LoadedModel& m) {
  const size_t L = m.stages().layers;
  if (L < 2) throw InputError("--composition: heads compose across layers, and the model has " + std::to_string(L));
  std::vector<CompositionScores> all;
  for (CompositionKind k : {CompositionKind::q, CompositionKind::k, CompositionKind::v}) {
    if (m.decoder) {
      all.push_back(decoder_composition_scores(*m.decoder, k));
      continue;
    }
    const std::vector<EncoderLayer>& layers = m.pretrained ? m.pretrained->model.layers : m.classifier->layers;
    const size_t heads = m.pretrained ? m.pretrained->model.config.num_heads : m.classifier->config.num_heads;
    const bool pre_norm = m.pretrained ? m.pretrained->model.config.family == ModelFamily::gpt2 : m.classifier->config.norm_first;
    all.push_back(composition_scores(layers, heads, {pre_norm, pre_norm}, k));
  }
  return all;
}

// The strongest pairs, "0.2 -> 1.3  0.4123" a line (--json has every pair).
std::string strongest_pairs(const CompositionScores& s, size_t count) {
  std::vector<size_t> order;
  for (size_t i = 0; i < s.scores.size(); ++i)
    if (s.scores[i] > 0) order.push_back(i);
  count = std::min(count, order.size());
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(count), order.end(),
                    [&](size_t a, size_t b) { return s.scores[a] > s.scores[b]; });
  std::string out;
  char line[128];  // four indices of up to 20 digits and a score
  for (size_t k = 0; k < count; ++k) {
    const size_t i = order[k], H = s.heads, L = s.layers;
    std::snprintf(line, sizeof line, "  %zu.%zu -> %zu.%zu  %.4f\n", i / (H * L * H), i / (L * H) % H, i / H % L, i % H,
                  s.scores[i]);
    out += line;
  }
  return out;
}

void run(const HeadsOptions& o) {
  const std::vector<std::string> sentences = o.sentences.resolve({});
  ModelOptions model = o.model;  // --seed seeds the tokens whatever the model; a checkpoint's weights are given
  model.seed.clear();
  if (!pretrained_files(model)) model.seed = o.model.seed;
  const LoadedModel m = load_model(model, sentences);
  if (o.model.train) throw InputError("attn heads runs the model in evaluation mode: drop --train");
  const std::vector<HeadKind> kinds = parse_head_kinds(o.detect);
  const DetectOptions d{parse_error_measure(o.error_measure), o.exclude_bos, o.exclude_current_token};
  Sequences seq;
  if (sentences.empty()) {
    seq = random_sequences(o, m);
  } else {
    if (!o.seq_len.empty() || !o.batch.empty() || !o.token_range.empty())
      throw InputError("--seq-len, --batch and --token-range shape random sequences: drop them or the sentences");
    seq = {m.tokenize(sentences), {{"source", "sentences"}}};
  }
  const ModelStages stages = m.stages();
  const std::vector<HeadScores> scores = detect_heads(stages, m.forward(seq.input), seq.input.ids, seq.input.lengths, kinds, d);
  const std::vector<CompositionScores> composition = o.composition ? compositions(m) : std::vector<CompositionScores>{};
  const char* measure = d.measure == ErrorMeasure::mul ? "mul" : "abs";
  if (!o.json) {
    std::string out = m.description() + "\n" + std::to_string(seq.input.batch) + " sequence(s) of " +
                      std::to_string(seq.input.seq) + " tokens (" + seq.about["source"].get<std::string>() + ")\n";
    if (seq.fitted_half)
      out += "--seq-len " + std::to_string(seq.fitted_half) + ": as many as fit the model's " +
             std::to_string(m.max_positions()) + " positions twice\n";
    for (const HeadScores& s : scores) out += "\n" + head_kind_name(s.kind) + " (" + measure + "):\n" + scores_table(s);
    for (const CompositionScores& c : composition)
      out += "\n" + composition_kind_name(c.kind) + "-composition, the strongest pairs (earlier -> later head):\n" +
             strongest_pairs(c, 10);
    return print(out);
  }
  seq.about["ids"] = Json::array();
  for (size_t b = 0; b < seq.input.batch; ++b)
    seq.about["ids"].push_back(std::vector<int64_t>(seq.input.ids.begin() + b * seq.input.seq,
                                                    seq.input.ids.begin() + b * seq.input.seq + seq.input.lengths[b]));
  seq.about["tokens"] = seq.input.tokens;
  Json doc{{"model", m.description()}, {"layers", stages.layers}, {"heads", stages.heads},
             {"error_measure", measure}, {"exclude_bos", d.exclude_bos},
             {"exclude_current_token", d.exclude_current_token}, {"sequences", seq.about}, {"detectors", head_scores_json(scores)}};
  if (o.composition) doc["composition"] = composition_json(composition);
  print(doc.dump() + "\n");
}

}  // namespace

void add_heads_command(CLI::App& app, HeadsOptions& o) {
  auto* cmd = app.add_subcommand("heads", "Score every attention head as a previous-token, duplicate-token or "
                                          "induction head (TransformerLens's head detectors)");
  add_model_options(*cmd, o.model, true);  // --seed: the random tokens' torch.manual_seed (default 0) too
  add_pretrained_options(*cmd, o.model);
  add_sentence_options(*cmd, o.sentences, "default: random tokens repeated once");
  cmd->add_option("--detect", o.detect, "head kinds, separated by commas")->capture_default_str();
  cmd->add_option("--seq-len", o.seq_len, "random tokens before the repeat (the sequence holds them twice; default 20, or as many as fit the model's positions)");
  cmd->add_option("--batch", o.batch, "random sequences; the scores are their mean (default 4)");
  cmd->add_option("--token-range", o.token_range, "LOW:HIGH: the ids the random tokens are drawn from (high excluded; "
                                                  "default: every ordinary token)");
  cmd->add_option("--error-measure", o.error_measure, "mul (the share of attention on the pattern) or abs "
                                                      "(1 - the summed |attention - pattern| per row)")
      ->capture_default_str();
  cmd->add_flag("--exclude-bos", o.exclude_bos, "leave out the attention to the first position");
  cmd->add_flag("--exclude-current-token", o.exclude_current_token, "leave out each position's attention to itself");
  cmd->add_flag("--composition", o.composition, "also Q-, K- and V-composition scores between heads of different "
                                                "layers (TransformerLens's all_composition_scores)");
  cmd->add_flag("--json", o.json, "print the scores as [layer][head] arrays in one JSON document");
  add_download_quiet_flag(*cmd, o.quiet);
  cmd->callback([&o] {
    resolve_model(o.model, o.quiet);
    run(o);
  });
}

}  // namespace attn::cli
