"""pretrained/: tiny Llama-family checkpoints (Llama, Mistral, Qwen2, Qwen3) in the Hugging Face layout, for
core/model/decoder.*.

`transformers` is not installed: the modules below are written by hand from its modeling files
(src/transformers/models/llama/modeling_llama.py, mistral/modeling_mistral.py, qwen2/modeling_qwen2.py,
qwen3/modeling_qwen3.py, src/transformers/modeling_rope_utils.py), eager attention, under transformers'
module names so that state_dict() gives the checkpoint names. One model class covers the four families,
as the engine's one decoder does; each difference is a config field (cited where it is read).
Weights are random (seeded): every norm weight and bias too, so that defaults cannot pass.
  llama_tiny/     LlamaForCausalLM, default rope, as many key/value heads as query heads, untied lm_head; a
                  tokenizer.json shaped as Llama 2's (Prepend / Replace normalizers, <s> by the
                  post-processor, <unk> for what its 64 tokens lack) for `attn encode --sentence`.
  llama3_gqa/     LlamaForCausalLM, rope_parameters (transformers >= 4.56 spelling) of type llama3, 4 query
                  heads on 2 key/value heads, lm_head tied (not stored).
  mistral_window/ MistralForCausalLM, sliding_window 3 < the 8 positions, 4 query heads on 1 key/value head,
                  old-style rope_scaling {"type": "dynamic"} (the default rotation within max positions).
  qwen2_bias/     Qwen2ForCausalLM: q/k/v biases, linear rope scaling, tied.
  qwen3_norm/     Qwen3ForCausalLM: q_norm/k_norm, head_dim 16 with hidden 32 and 4 heads, yarn rope, the
                  weights stored as BF16 (its stages are PyTorch's from the weights widened to float32).
  decoder_stages.json: a list of cases {case, dir, input_ids, stages: [{name, shape, data}, ...]}.
"""
import importlib.util
import json
import math
import pathlib

import torch
import torch.nn as nn
import torch.nn.functional as F


def _sibling(name):
    # By path, as gen_fixtures.load does: PyTorch ships a package named `torchgen`.
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", pathlib.Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_pretrained = _sibling("pretrained")
_json, _checkpoint, stage = _pretrained._json, _pretrained._checkpoint, _pretrained.stage

STAGES = {}  # name -> tensor, in the order computed


def rec(name, t):
    STAGES[name] = t.detach().clone()
    return t


# ------------------------------------------------------------------ rotary (modeling_rope_utils.py)

def rope_parameters(c):
    """The rope dict, old (rope_scaling, "type") or new (rope_parameters, "rope_type") spelling."""
    r = c.get("rope_parameters") or c.get("rope_scaling") or {}
    return r.get("rope_type", r.get("type", "default")), r, r.get("rope_theta", c.get("rope_theta", 10000.0))


def inv_freq_and_factor(c):
    kind, r, base = rope_parameters(c)
    dim = c["head_dim"]  # Llama/Qwen3: getattr(config, "head_dim", None) or hidden_size // num_attention_heads
    # _compute_default_rope_parameters
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    if kind == "linear":  # _compute_linear_scaling_rope_parameters
        return inv_freq / r["factor"], 1.0
    if kind == "dynamic":  # _compute_dynamic_ntk_parameters with seq_len = max_position_embeddings
        seq_len, max_pos, factor = c["max_position_embeddings"], c["max_position_embeddings"], r["factor"]
        base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2))
        return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)), 1.0
    if kind == "llama3":  # _compute_llama3_parameters
        factor, low, high = r["factor"], r["low_freq_factor"], r["high_freq_factor"]
        old = r["original_max_position_embeddings"]
        low_freq_wavelen, high_freq_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv_freq
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        return torch.where(is_medium, smoothed, inv_freq_llama), 1.0
    if kind == "yarn":  # _compute_yarn_parameters
        factor = r["factor"]
        max_pos = r.get("original_max_position_embeddings") or c["max_position_embeddings"]
        attention_factor = r.get("attention_factor") or 0.1 * math.log(factor) + 1.0
        beta_fast, beta_slow = r.get("beta_fast") or 32, r.get("beta_slow") or 1

        def find_correction_dim(num_rotations):
            return (dim * math.log(max_pos / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

        low = max(math.floor(find_correction_dim(beta_fast)), 0)
        high = min(math.ceil(find_correction_dim(beta_slow)), dim - 1)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
        extrapolation_factor = 1 - ramp
        inv = (1.0 / (factor * pos_freqs)) * (1 - extrapolation_factor) + (1.0 / pos_freqs) * extrapolation_factor
        return inv, attention_factor
    assert kind == "default", kind
    return inv_freq, 1.0


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, c):
        super().__init__()
        inv_freq, self.attention_scaling = inv_freq_and_factor(c)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, position_ids):
        # LlamaRotaryEmbedding.forward
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv_freq_expanded.float() @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = rec("model.rotary_emb.angles", torch.cat((freqs, freqs), dim=-1))
        cos = rec("model.rotary_emb.cos", emb.cos() * self.attention_scaling)
        sin = rec("model.rotary_emb.sin", emb.sin() * self.attention_scaling)
        return cos, sin


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


# ------------------------------------------------------------------ modules (modeling_llama.py)

class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaAttention(nn.Module):
    def __init__(self, c, p):
        super().__init__()
        self.p, self.c = p, c
        H, d, n, kv = c["hidden_size"], c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
        qkv_bias = c["model_type"] == "qwen2" or c.get("attention_bias", False)  # Qwen2Attention: bias=True
        o_bias = c["model_type"] != "qwen2" and c.get("attention_bias", False)
        self.q_proj = nn.Linear(H, n * d, bias=qkv_bias)
        self.k_proj = nn.Linear(H, kv * d, bias=qkv_bias)
        self.v_proj = nn.Linear(H, kv * d, bias=qkv_bias)
        self.o_proj = nn.Linear(n * d, H, bias=o_bias)
        if c["model_type"] == "qwen3":  # Qwen3Attention: RMSNorm over head_dim, before the rotation
            self.q_norm = LlamaRMSNorm(d, c["rms_norm_eps"])
            self.k_norm = LlamaRMSNorm(d, c["rms_norm_eps"])
        self.scaling = d ** -0.5
        self.window = c.get("sliding_window") if c["model_type"] == "mistral" else None

    def mask(self, S):
        # Causal (and MistralModel's sliding window: key k visible from query q when q - window < k <= q),
        # as the additive float mask: 0 or finfo(float32).min.
        q, k = torch.arange(S)[:, None], torch.arange(S)[None, :]
        hidden = k > q
        if self.window:
            hidden |= k <= q - self.window
        return torch.zeros(S, S).masked_fill(hidden, torch.finfo(torch.float32).min)[None, None]

    def forward(self, hidden_states, cos, sin):
        p, c = self.p, self.c
        B, S, _ = hidden_states.shape
        shape = (B, S, -1, c["head_dim"])
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        rec(p + "self_attn.q_proj", q), rec(p + "self_attn.k_proj", k), rec(p + "self_attn.v_proj", v)
        if hasattr(self, "q_norm"):
            q = rec(p + "self_attn.q_norm", self.q_norm(q))
            k = rec(p + "self_attn.k_norm", self.k_norm(k))
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        rec(p + "self_attn.queries_rotated", q), rec(p + "self_attn.keys_rotated", k)
        # eager_attention_forward
        groups = c["num_attention_heads"] // c["num_key_value_heads"]
        key_states, value_states = repeat_kv(k, groups), repeat_kv(v, groups)
        attn_weights = torch.matmul(q, key_states.transpose(2, 3)) * self.scaling
        attn_weights = rec(p + "self_attn.scores", attn_weights + self.mask(S))
        attn_weights = rec(p + "self_attn.attn_weights", F.softmax(attn_weights, dim=-1, dtype=torch.float32))
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        attn_output = rec(p + "self_attn.merged", attn_output.reshape(B, S, -1))
        return rec(p + "self_attn.o_proj", self.o_proj(attn_output))


class LlamaMLP(nn.Module):
    def __init__(self, c, p):
        super().__init__()
        self.p = p
        self.gate_proj = nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.up_proj = nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(c["intermediate_size"], c["hidden_size"], bias=False)

    def forward(self, x):
        p = self.p
        gate = rec(p + "mlp.gate_proj", self.gate_proj(x))
        up = rec(p + "mlp.up_proj", self.up_proj(x))
        act = rec(p + "mlp.act", F.silu(gate))  # ACT2FN["silu"]
        return rec(p + "mlp.down_proj", self.down_proj(act * up))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        p = f"model.layers.{i}."
        self.p = p
        self.self_attn = LlamaAttention(c, p)
        self.mlp = LlamaMLP(c, p)
        self.input_layernorm = LlamaRMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.post_attention_layernorm = LlamaRMSNorm(c["hidden_size"], c["rms_norm_eps"])

    def forward(self, hidden_states, cos, sin):
        p = self.p
        residual = hidden_states
        hidden_states = rec(p + "input_layernorm", self.input_layernorm(hidden_states))
        hidden_states = rec(p + "residual", residual + self.self_attn(hidden_states, cos, sin))
        residual = hidden_states
        hidden_states = rec(p + "post_attention_layernorm", self.post_attention_layernorm(hidden_states))
        return rec(p[:-1], residual + self.mlp(hidden_states))


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(LlamaDecoderLayer(c, i) for i in range(c["num_hidden_layers"]))
        self.norm = LlamaRMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.rotary_emb = LlamaRotaryEmbedding(c)

    def forward(self, input_ids):
        hidden_states = rec("model.embed_tokens", self.embed_tokens(input_ids))
        position_ids = torch.arange(input_ids.shape[1])[None]
        cos, sin = self.rotary_emb(position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, cos, sin)
        return rec("model.norm", self.norm(hidden_states))


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids):
        STAGES["input_ids"] = input_ids
        logits = rec("logits", self.lm_head(self.model(input_ids)))
        rec("next_token_probs", F.softmax(logits[:, -1], dim=-1))
        return logits


# ------------------------------------------------------------------ configs, weights, files

BASE = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
        "vocab_size": 64, "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "hidden_act": "silu",
        "torch_dtype": "float32"}
CASES = {
    "llama_tiny": (dict(BASE, model_type="llama", architectures=["LlamaForCausalLM"], num_key_value_heads=4,
                        rope_theta=10000.0, rope_scaling=None, tie_word_embeddings=False, attention_bias=False),
                   torch.float32),
    "llama3_gqa": (dict(BASE, model_type="llama", architectures=["LlamaForCausalLM"], num_key_value_heads=2,
                        head_dim=8, tie_word_embeddings=True,
                        rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                         "original_max_position_embeddings": 64}),
                   torch.float32),
    "mistral_window": (dict(BASE, model_type="mistral", architectures=["MistralForCausalLM"], num_key_value_heads=1,
                            sliding_window=3, rope_theta=10000.0, rope_scaling={"type": "dynamic", "factor": 2.0},
                            tie_word_embeddings=False),
                       torch.float32),
    "qwen2_bias": (dict(BASE, model_type="qwen2", architectures=["Qwen2ForCausalLM"], num_key_value_heads=2,
                        rope_theta=1000000.0, rope_scaling={"rope_type": "linear", "factor": 2.0},
                        tie_word_embeddings=True, use_sliding_window=False),
                   torch.float32),
    "qwen3_norm": (dict(BASE, model_type="qwen3", architectures=["Qwen3ForCausalLM"], num_key_value_heads=2,
                        head_dim=16, rope_theta=10000.0, rope_scaling={"rope_type": "yarn", "factor": 4.0},
                        tie_word_embeddings=True, attention_bias=False, torch_dtype="bfloat16"),
                   torch.bfloat16),
}
# One row of 8 positions; llama3_gqa takes two, so that grouped heads are checked across a batch.
ROWS = [[5, 17, 42, 3, 60, 8, 29, 11], [1, 33, 2, 63, 14, 14, 50, 7]]


def with_head_dim(c):
    return dict(c, head_dim=c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"])


def randomize(model, seed):
    """Weights N(0, 0.2); biases 0.1 N(0, 1); norm weights 1 + 0.1 N(0, 1), in registration order."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            p.copy_(1 + 0.1 * noise if name.endswith(("norm.weight", "layernorm.weight")) else
                    0.1 * noise if name.endswith("bias") else 0.2 * noise)
    return model.eval()


# Llama 2's tokenizer.json in 64 tokens: <unk> <s> </s>, ▁ and the letters, then merges spelling a few
# words left to right (no byte tokens: characters outside them are <unk>, fused).
TOKENIZER_WORDS = ["the", "cat", "sat", "on", "mat", "dog", "a", "is", "in", "and", "ran"]


def llama2_tokenizer(size):
    tokens = ["<unk>", "<s>", "</s>", "\u2581"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["."]
    merges = []
    for word in TOKENIZER_WORDS:
        symbol = "\u2581"
        for ch in word:
            if symbol + ch not in tokens and len(tokens) < size:
                merges.append(f"{symbol} {ch}")
                tokens.append(symbol + ch)
            symbol += ch
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                "special": True} for i, t in enumerate(tokens[:3])]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                          {"type": "Replace", "pattern": {"String": " "},
                                                           "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }


def write_case(root, name, seed):
    cfg, dtype = CASES[name]
    c = with_head_dim(cfg)
    model = randomize(LlamaForCausalLM(c), seed)
    out = root / name
    out.mkdir(parents=True, exist_ok=True)
    _json(out / "config.json", cfg)
    if name == "llama_tiny":
        _json(out / "tokenizer.json", llama2_tokenizer(cfg["vocab_size"]))
    state = model.state_dict()
    if c["tie_word_embeddings"]:  # save_pretrained leaves a tied lm_head out
        del state["lm_head.weight"]
    loaded = LlamaForCausalLM(c).eval()
    missing = loaded.load_state_dict(_checkpoint(out, state, dtype), strict=False).missing_keys
    assert missing == (["lm_head.weight"] if c["tie_word_embeddings"] else []), missing
    input_ids = ROWS if name == "llama3_gqa" else ROWS[:1]
    STAGES.clear()
    with torch.no_grad():
        loaded(torch.tensor(input_ids))
    return {"case": name, "dir": name, "input_ids": input_ids, "stages": [stage(k, v) for k, v in STAGES.items()]}


def generate(out_dir):
    root = out_dir / "pretrained"
    root.mkdir(parents=True, exist_ok=True)
    cases = [write_case(root, name, seed) for seed, name in enumerate(CASES, start=11)]
    (root / "decoder_stages.json").write_text(json.dumps(cases, separators=(",", ":"), allow_nan=False) + "\n",
                                              encoding="utf-8")
