"""pretrained/: tiny rotary decoder checkpoints (Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3's text model,
GPT-NeoX) in the Hugging Face layout, for core/model/decoder.*.

`transformers` is not installed: the modules below are written by hand from its modeling files
(src/transformers/models/llama/modeling_llama.py, mistral/modeling_mistral.py, qwen2/modeling_qwen2.py,
qwen3/modeling_qwen3.py, gemma2/modeling_gemma2.py, gemma3/modeling_gemma3.py, gpt_neox/modeling_gpt_neox.py,
src/transformers/modeling_rope_utils.py), eager attention, under transformers' module names so that
state_dict() gives the checkpoint names. One model class covers the Llama layout's four families, as the
engine's one decoder does (each difference a config field, cited where it is read); Gemma and GPT-NeoX
have their own, as transformers does, recording under the same stage names.
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
  gemma2_cap/     Gemma2ForCausalLM: 3 layers (even ones sliding, window 3), head_dim 16, query_pre_attn_scalar 12,
                  attention and final soft caps 2 and 3, tied by default.
  gemma3_local/   Gemma3ForCausalLM (gemma3_text): layer_types, rope_local_base_freq 100 for the sliding layers,
                  linear scaling on the global rotation, q_norm/k_norm, null caps, BF16 weights.
  pythia_parallel/ GPTNeoXForCausalLM: parallel residual, rotary_pct 0.25 of 16-value heads; two shards and
                  model.safetensors.index.json.
  neox_sequential/ GPTNeoXForCausalLM: sequential residual, rotary_pct 0.5.
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
_safetensors_file = _pretrained._safetensors_file

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
    # Llama/Qwen3: getattr(config, "head_dim", None) or hidden_size // num_attention_heads; GPT-NeoX rotates
    # int(head_dim * rotary_pct) values of each head (partial_rotary_factor).
    dim = int(c["head_dim"] * c.get("rotary_pct", 1.0))
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
    def __init__(self, c, name="model.rotary_emb"):
        super().__init__()
        inv_freq, self.attention_scaling = inv_freq_and_factor(c)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.name = name

    def forward(self, position_ids):
        # LlamaRotaryEmbedding.forward
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv_freq_expanded.float() @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = rec(self.name + ".angles", torch.cat((freqs, freqs), dim=-1))
        cos = rec(self.name + ".cos", emb.cos() * self.attention_scaling)
        sin = rec(self.name + ".sin", emb.sin() * self.attention_scaling)
        return cos, sin


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def causal_mask(S, window):
    # Causal (and the sliding window: key k visible from query q when q - window < k <= q), as the
    # additive float mask: 0 or finfo(float32).min.
    q, k = torch.arange(S)[:, None], torch.arange(S)[None, :]
    hidden = k > q
    if window:
        hidden |= k <= q - window
    return torch.zeros(S, S).masked_fill(hidden, torch.finfo(torch.float32).min)[None, None]


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
        return causal_mask(S, self.window)

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


# ------------------------------------------------------------------ Gemma 2 and Gemma 3's text model
# (gemma2/modeling_gemma2.py, gemma3/modeling_gemma3.py: Gemma3ForCausalLM)

def gemma_layer_types(c):
    """layer_types when given; else Gemma2DecoderLayer's is_sliding = not bool(layer_idx % 2), Gemma 3's
    bool((layer_idx + 1) % sliding_window_pattern)."""
    if "layer_types" in c:
        return c["layer_types"]
    if c["model_type"] == "gemma2":
        return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(c["num_hidden_layers"])]
    pattern = c.get("sliding_window_pattern", 6)
    return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(c["num_hidden_layers"])]


class GemmaRMSNorm(nn.Module):
    """Gemma2RMSNorm / Gemma3RMSNorm: in float32, times (1 + weight); the weight starts at 0."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        output = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class GemmaAttention(nn.Module):
    def __init__(self, c, p, i):
        super().__init__()
        self.p, self.c = p, c
        H, d, n, kv = c["hidden_size"], c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
        bias = c.get("attention_bias", False)
        self.q_proj = nn.Linear(H, n * d, bias=bias)
        self.k_proj = nn.Linear(H, kv * d, bias=bias)
        self.v_proj = nn.Linear(H, kv * d, bias=bias)
        self.o_proj = nn.Linear(n * d, H, bias=bias)
        if c["model_type"] == "gemma3_text":  # Gemma3Attention: q_norm, k_norm over head_dim
            self.q_norm = GemmaRMSNorm(d, c["rms_norm_eps"])
            self.k_norm = GemmaRMSNorm(d, c["rms_norm_eps"])
        self.scaling = c["query_pre_attn_scalar"] ** -0.5
        self.is_sliding = gemma_layer_types(c)[i] == "sliding_attention"
        self.window = c["sliding_window"] if self.is_sliding else None
        self.softcap = c.get("attn_logit_softcapping")

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
        # eager_attention_forward: the soft cap before the mask
        groups = c["num_attention_heads"] // c["num_key_value_heads"]
        key_states, value_states = repeat_kv(k, groups), repeat_kv(v, groups)
        attn_weights = torch.matmul(q, key_states.transpose(2, 3)) * self.scaling
        if self.softcap is not None:
            attn_weights = torch.tanh(attn_weights / self.softcap) * self.softcap
        attn_weights = rec(p + "self_attn.scores", attn_weights + causal_mask(S, self.window))
        attn_weights = rec(p + "self_attn.attn_weights", F.softmax(attn_weights, dim=-1, dtype=torch.float32))
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        attn_output = rec(p + "self_attn.merged", attn_output.reshape(B, S, -1))
        return rec(p + "self_attn.o_proj", self.o_proj(attn_output))


class GemmaMLP(LlamaMLP):
    def forward(self, x):
        p = self.p
        gate = rec(p + "mlp.gate_proj", self.gate_proj(x))
        up = rec(p + "mlp.up_proj", self.up_proj(x))
        act = rec(p + "mlp.act", F.gelu(gate, approximate="tanh"))  # ACT2FN["gelu_pytorch_tanh"]
        return rec(p + "mlp.down_proj", self.down_proj(act * up))


class GemmaDecoderLayer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        p = f"model.layers.{i}."
        self.p = p
        self.self_attn = GemmaAttention(c, p, i)
        self.mlp = GemmaMLP(c, p)
        H, eps = c["hidden_size"], c["rms_norm_eps"]
        self.input_layernorm = GemmaRMSNorm(H, eps)
        self.post_attention_layernorm = GemmaRMSNorm(H, eps)
        self.pre_feedforward_layernorm = GemmaRMSNorm(H, eps)
        self.post_feedforward_layernorm = GemmaRMSNorm(H, eps)

    def forward(self, hidden_states, rotations):
        p = self.p
        cos, sin = rotations[self.self_attn.is_sliding]
        residual = hidden_states
        hidden_states = rec(p + "input_layernorm", self.input_layernorm(hidden_states))
        hidden_states = self.self_attn(hidden_states, cos, sin)
        hidden_states = rec(p + "post_attention_layernorm", self.post_attention_layernorm(hidden_states))
        hidden_states = rec(p + "residual", residual + hidden_states)
        residual = hidden_states
        hidden_states = rec(p + "pre_feedforward_layernorm", self.pre_feedforward_layernorm(hidden_states))
        hidden_states = self.mlp(hidden_states)
        hidden_states = rec(p + "post_feedforward_layernorm", self.post_feedforward_layernorm(hidden_states))
        return rec(p[:-1], residual + hidden_states)


class GemmaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(GemmaDecoderLayer(c, i) for i in range(c["num_hidden_layers"]))
        self.norm = GemmaRMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.rotary_emb = LlamaRotaryEmbedding(c)
        if c["model_type"] == "gemma3_text":  # Gemma3TextModel: the local layers' own base, default rope
            local = dict(c, rope_theta=c["rope_local_base_freq"], rope_scaling=None, rope_parameters=None)
            self.rotary_emb_local = LlamaRotaryEmbedding(local, "model.rotary_emb_local")

    def forward(self, input_ids):
        hidden_states = self.embed_tokens(input_ids)
        # normalizer = torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype) (Gemma 3: embed_scale)
        normalizer = torch.tensor(self.c["hidden_size"] ** 0.5, dtype=hidden_states.dtype)
        hidden_states = rec("model.embed_tokens", hidden_states * normalizer)
        position_ids = torch.arange(input_ids.shape[1])[None]
        rotation = self.rotary_emb(position_ids)
        local = self.rotary_emb_local(position_ids) if hasattr(self, "rotary_emb_local") else rotation
        for layer in self.layers:
            hidden_states = layer(hidden_states, {False: rotation, True: local})
        return rec("model.norm", self.norm(hidden_states))


class GemmaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = GemmaModel(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids):
        STAGES["input_ids"] = input_ids
        logits = self.lm_head(self.model(input_ids))
        cap = self.c.get("final_logit_softcapping")
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        logits = rec("logits", logits)
        rec("next_token_probs", F.softmax(logits[:, -1], dim=-1))
        return logits


# ------------------------------------------------------------------ GPT-NeoX (gpt_neox/modeling_gpt_neox.py)
# Recorded under the one decoder's stage names (model.layers.{i}.self_attn.q_proj, …).

class GPTNeoXAttention(nn.Module):
    def __init__(self, c, p):
        super().__init__()
        self.p, self.c = p, c
        H, bias = c["hidden_size"], c.get("attention_bias", True)
        self.query_key_value = nn.Linear(H, 3 * H, bias=bias)
        self.dense = nn.Linear(H, H, bias=bias)
        self.scaling = c["head_dim"] ** -0.5

    def forward(self, hidden_states, cos, sin):
        p, d = self.p, self.c["head_dim"]
        B, S, _ = hidden_states.shape
        # (…, heads, 3·head_dim): each head's query, key and value in turn
        qkv = self.query_key_value(hidden_states).view(B, S, -1, 3 * d).transpose(1, 2)
        q, k, v = (rec(p + "self_attn." + name, t.contiguous())
                   for name, t in zip(("q_proj", "k_proj", "v_proj"), qkv.chunk(3, dim=-1)))
        # apply_rotary_pos_emb: the first rotary_ndims values of each head rotate, the rest pass
        r = cos.shape[-1]
        q_rot, k_rot = apply_rotary_pos_emb(q[..., :r], k[..., :r], cos, sin)
        q = rec(p + "self_attn.queries_rotated", torch.cat([q_rot, q[..., r:]], dim=-1))
        k = rec(p + "self_attn.keys_rotated", torch.cat([k_rot, k[..., r:]], dim=-1))
        attn_weights = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        attn_weights = rec(p + "self_attn.scores", attn_weights + causal_mask(S, None))
        attn_weights = rec(p + "self_attn.attn_weights", F.softmax(attn_weights, dim=-1, dtype=torch.float32))
        attn_output = torch.matmul(attn_weights, v).transpose(1, 2).contiguous()
        attn_output = rec(p + "self_attn.merged", attn_output.reshape(B, S, -1))
        return rec(p + "self_attn.o_proj", self.dense(attn_output))


class GPTNeoXMLP(nn.Module):
    def __init__(self, c, p):
        super().__init__()
        self.p = p
        self.dense_h_to_4h = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.dense_4h_to_h = nn.Linear(c["intermediate_size"], c["hidden_size"])

    def forward(self, x):
        p = self.p
        hidden = rec(p + "mlp.up_proj", self.dense_h_to_4h(x))
        act = rec(p + "mlp.act", F.gelu(hidden))  # ACT2FN["gelu"]
        return rec(p + "mlp.down_proj", self.dense_4h_to_h(act))


class GPTNeoXLayer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        self.p, self.parallel = f"model.layers.{i}.", c["use_parallel_residual"]
        H, eps = c["hidden_size"], c["layer_norm_eps"]
        self.input_layernorm = nn.LayerNorm(H, eps=eps)
        self.post_attention_layernorm = nn.LayerNorm(H, eps=eps)
        self.attention = GPTNeoXAttention(c, self.p)
        self.mlp = GPTNeoXMLP(c, self.p)

    def forward(self, hidden_states, cos, sin):
        p = self.p
        attn_output = self.attention(rec(p + "input_layernorm", self.input_layernorm(hidden_states)), cos, sin)
        if self.parallel:  # x + attn(ln1(x)) + mlp(ln2(x))
            mlp_output = self.mlp(rec(p + "post_attention_layernorm", self.post_attention_layernorm(hidden_states)))
            return rec(p[:-1], mlp_output + attn_output + hidden_states)
        attn_output = rec(p + "residual", attn_output + hidden_states)
        mlp_output = self.mlp(rec(p + "post_attention_layernorm", self.post_attention_layernorm(attn_output)))
        return rec(p[:-1], mlp_output + attn_output)


class GPTNeoXModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_in = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(GPTNeoXLayer(c, i) for i in range(c["num_hidden_layers"]))
        self.final_layer_norm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.rotary_emb = LlamaRotaryEmbedding(dict(c, rope_theta=c["rotary_emb_base"]))

    def forward(self, input_ids):
        hidden_states = rec("model.embed_tokens", self.embed_in(input_ids))
        cos, sin = self.rotary_emb(torch.arange(input_ids.shape[1])[None])
        for layer in self.layers:
            hidden_states = layer(hidden_states, cos, sin)
        return rec("model.norm", self.final_layer_norm(hidden_states))


class GPTNeoXForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gpt_neox = GPTNeoXModel(c)
        self.embed_out = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def forward(self, input_ids):
        STAGES["input_ids"] = input_ids
        logits = rec("logits", self.embed_out(self.gpt_neox(input_ids)))
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
    # Gemma 2: layers 0 and 2 sliding (the old spelling: no layer_types), head_dim 16 beside hidden 32 over 4
    # heads, query_pre_attn_scalar 12, small soft caps so that they bend, tied by default (no key).
    "gemma2_cap": (dict(BASE, model_type="gemma2", architectures=["Gemma2ForCausalLM"], num_hidden_layers=3,
                        num_key_value_heads=2, head_dim=16, hidden_act="gelu_pytorch_tanh",
                        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=12, sliding_window=3,
                        attn_logit_softcapping=2.0, final_logit_softcapping=3.0, rope_theta=10000.0),
                   torch.float32),
    # Gemma 3's text model: layer_types (sliding, full, sliding), the local rotation's own base, linear
    # scaling on the global one, q_norm/k_norm, no caps (null), BF16 weights.
    "gemma3_local": (dict(BASE, model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], num_hidden_layers=3,
                          num_key_value_heads=1, head_dim=8, hidden_activation="gelu_pytorch_tanh",
                          query_pre_attn_scalar=8, sliding_window=4, sliding_window_pattern=2,
                          layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                          attn_logit_softcapping=None, final_logit_softcapping=None, rope_theta=10000.0,
                          rope_local_base_freq=100.0, rope_scaling={"rope_type": "linear", "factor": 2.0},
                          tie_word_embeddings=True, torch_dtype="bfloat16"),
                     torch.bfloat16),
    # GPT-NeoX (Pythia): parallel residual, a quarter of each 16-value head rotated; written as two shards
    # with model.safetensors.index.json.
    "pythia_parallel": (dict(BASE, model_type="gpt_neox", architectures=["GPTNeoXForCausalLM"], num_attention_heads=2,
                             rotary_pct=0.25, rotary_emb_base=10000, use_parallel_residual=True, hidden_act="gelu",
                             layer_norm_eps=1e-5, tie_word_embeddings=False),
                        torch.float32),
    # Sequential residual, half of each 8-value head rotated.
    "neox_sequential": (dict(BASE, model_type="gpt_neox", architectures=["GPTNeoXForCausalLM"], rotary_pct=0.5,
                             rotary_emb_base=1000, use_parallel_residual=False, hidden_act="gelu",
                             layer_norm_eps=1e-5, tie_word_embeddings=False),
                        torch.float32),
}
SHARDED = {"pythia_parallel"}
# One row of 8 positions; llama3_gqa takes two, so that grouped heads are checked across a batch.
ROWS = [[5, 17, 42, 3, 60, 8, 29, 11], [1, 33, 2, 63, 14, 14, 50, 7]]


def with_head_dim(c):
    return dict(c, head_dim=c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"])


def model_class(c):
    if c["model_type"].startswith("gemma"):
        return GemmaForCausalLM
    return GPTNeoXForCausalLM if c["model_type"] == "gpt_neox" else LlamaForCausalLM


def write_shards(out, state, dtype):
    """model.safetensors as two shards and model.safetensors.index.json, as save_pretrained splits a large
    model: the tensors sorted by name, the first half in the first shard."""
    tensors = {k: v.to(dtype).contiguous() for k, v in sorted(state.items())}
    names = list(tensors)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for shard, keys in shards.items():
        (out / shard).write_bytes(_safetensors_file({k: tensors[k] for k in keys}, {"format": "pt"}))
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    _json(out / "model.safetensors.index.json",
          {"metadata": {"total_size": total}, "weight_map": {k: shard for shard, keys in shards.items() for k in keys}})
    return {k: v.float() for k, v in tensors.items()}


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
    c.setdefault("tie_word_embeddings", True)  # Gemma's default
    model = randomize(model_class(c)(c), seed)
    out = root / name
    out.mkdir(parents=True, exist_ok=True)
    _json(out / "config.json", cfg)
    if name == "llama_tiny":
        _json(out / "tokenizer.json", llama2_tokenizer(cfg["vocab_size"]))
    state = model.state_dict()
    if c["tie_word_embeddings"]:  # save_pretrained leaves a tied lm_head out
        del state["lm_head.weight"]
    loaded = model_class(c)(c).eval()
    saved = write_shards(out, state, dtype) if name in SHARDED else _checkpoint(out, state, dtype)
    missing = loaded.load_state_dict(saved, strict=False).missing_keys
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
