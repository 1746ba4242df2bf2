"""The second tutorial's modules (docs/tutorials.md) in PyTorch, instrumented to record the
engine's trace stages, plus PyTorch's own nn.TransformerEncoder. Writes transformer_<case>.json:
config, parameters (state_dict), input, and every stage."""
import json
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

STAGES = {}


def rec(name, t):
    STAGES[name] = t.detach().clone()


# --- the tutorial's modules, verbatim but for the rec(...) calls and the options the engine adds ---

def scaled_dot_product_attention(Q, K, V, mask=None, prefix=""):
    d_k = K.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    rec(prefix + "scores", torch.matmul(Q, K.transpose(-2, -1)))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    attention_weights = F.softmax(scores, dim=-1)
    rec(prefix + "attention_weights", attention_weights)
    return torch.matmul(attention_weights, V), attention_weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.1):
        super().__init__()
        assert d_model % num_heads == 0
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.prefix = ""

    def forward(self, Q, K, V, mask=None):
        batch_size = Q.size(0)
        Q, K, V = self.W_Q(Q), self.W_K(K), self.W_V(V)
        Q = Q.view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = K.view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = V.view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        rec(self.prefix + "query", Q); rec(self.prefix + "key", K); rec(self.prefix + "value", V)
        attn_output, attn_weights = scaled_dot_product_attention(Q, K, V, mask, self.prefix)
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, -1, self.d_model)
        rec(self.prefix + "attention_output", attn_output)
        output = self.W_O(attn_output)
        rec(self.prefix + "output", output)
        return output, attn_weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1, activation="relu"):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.act = F.relu if activation == "relu" else F.gelu
        self.prefix = ""

    def forward(self, x):
        out = self.linear2(self.dropout(self.act(self.linear1(x))))
        rec(self.prefix + "output", out)
        return out


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.1, activation="relu", norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first
        self.prefix = ""

    def forward(self, x, mask=None):
        p = self.prefix
        self.self_attn.prefix, self.ffn.prefix = p + "self_attn.", p + "ffn."
        if self.norm_first:
            h = self.norm1(x); rec(p + "norm1", h)
            attn_out, _ = self.self_attn(h, h, h, mask)
            x = x + self.dropout(attn_out)
            h = self.norm2(x); rec(p + "norm2", h)
            x = x + self.dropout(self.ffn(h))
        else:
            attn_out, _ = self.self_attn(x, x, x, mask)
            x = self.norm1(x + self.dropout(attn_out)); rec(p + "norm1", x)
            x = self.norm2(x + self.dropout(self.ffn(x))); rec(p + "norm2", x)
        rec(p + "output", x)
        return x


class TransformerEncoder(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, dropout=0.1, **kw):
        super().__init__()
        self.layers = nn.ModuleList([TransformerEncoderLayer(d_model, num_heads, d_ff, dropout, **kw)
                                     for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        for i, layer in enumerate(self.layers):
            layer.prefix = f"layers.{i}."
            x = layer(x, mask)
        return self.norm(x)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe.unsqueeze(0))

    def forward(self, x):
        rec("positional_encoding", self.pe[:, :x.size(1)])
        return self.dropout(x + self.pe[:, :x.size(1)])


class TransformerClassifier(nn.Module):
    def __init__(self, vocab_size, d_model, num_heads, num_layers, num_classes, d_ff=None, max_len=512,
                 dropout=0.1, **kw):
        super().__init__()
        d_ff = d_ff or d_model * 4
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = TransformerEncoder(num_layers, d_model, num_heads, d_ff, dropout, **kw)
        self.fc = nn.Linear(d_model, num_classes)
        self._init_weights()

    def _init_weights(self):
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, x, mask=None):
        rec("token_ids", x)
        x = self.embedding(x) * math.sqrt(self.embedding.embedding_dim); rec("embedding", x)
        x = self.pos_encoding(x); rec("embedded", x)
        x = self.encoder(x, mask); rec("encoder_output", x)
        x = x.mean(dim=1); rec("pooled", x)
        out = self.fc(x); rec("logits", out)
        return out


# --- cases ---

def make_mask(kind, ids):
    B, S = ids.shape
    pad = (ids != 0).unsqueeze(1).expand(B, S, S)
    causal = torch.tril(torch.ones(S, S, dtype=torch.bool)).unsqueeze(0).expand(B, S, S)
    return {"none": None, "padding": pad, "causal": causal, "padding+causal": pad & causal}[kind]


CLASSIFIER_CASES = {
    "small": dict(cfg=dict(vocab_size=12, d_model=16, num_heads=2, num_layers=2, num_classes=3, max_len=32),
                  seed=0, mask="padding", ids=[[1, 5, 7, 2, 0], [3, 3, 11, 0, 0], [4, 9, 10, 8, 6]]),
    "one_head_gelu_prenorm_causal": dict(
        cfg=dict(vocab_size=20, d_model=8, num_heads=1, num_layers=1, num_classes=2, d_ff=24, max_len=10,
                 activation="gelu", norm_first=True),
        seed=7, mask="causal", ids=[[1, 2, 3, 4, 5, 6], [7, 8, 9, 0, 0, 0]]),
    "eight_heads_three_layers": dict(
        cfg=dict(vocab_size=30, d_model=16, num_heads=8, num_layers=3, num_classes=4, max_len=16),
        seed=2**32 + 5, mask="padding+causal", ids=[[29, 1, 2, 3, 0, 0, 0], [5, 6, 7, 8, 9, 10, 11]]),
    "four_layers_train_dropout": dict(
        cfg=dict(vocab_size=10, d_model=8, num_heads=2, num_layers=4, num_classes=2, max_len=8, dropout=0.2),
        seed=5, mask="padding", ids=[[1, 2, 3, 0], [4, 5, 6, 7]], train=True),
}


def floats(t):
    """float32 values as the shortest decimals that read back as the same float32."""
    return [float(repr(np.float32(v))) for v in t.detach().reshape(-1).tolist()]


def stage(name, t):
    return {"name": name, "shape": list(t.shape), "data": floats(t) if t.is_floating_point() else t.reshape(-1).tolist()}


def classifier_case(cfg, seed, mask, ids, train=False):
    torch.manual_seed(seed)
    STAGES.clear()
    kw = {k: v for k, v in cfg.items() if k in ("activation", "norm_first")}
    main = {k: v for k, v in cfg.items() if k not in kw}
    model = TransformerClassifier(**main, **kw)
    model.train(train)
    x = torch.tensor(ids)
    m = make_mask(mask, x)
    model(x, None if m is None else m.unsqueeze(1))
    params = [stage(k, v) for k, v in model.state_dict().items()]
    order = ["token_ids", "embedding", "positional_encoding", "embedded"]
    for i in range(cfg["num_layers"]):
        p = f"layers.{i}."
        attn = [p + "self_attn." + s for s in ("query", "key", "value", "scores", "attention_weights",
                                               "attention_output", "output")]
        if cfg.get("norm_first"):
            order += [p + "norm1"] + attn + [p + "norm2", p + "ffn.output", p + "output"]
        else:
            order += attn + [p + "norm1", p + "ffn.output", p + "norm2", p + "output"]
    order += ["encoder_output", "pooled", "logits"]
    return {"config": cfg, "seed": str(seed), "mask": mask, "train": train, "ids": ids,
            "parameter_count": sum(p.numel() for p in model.parameters()),
            "parameters": params, "stages": [stage(n, STAGES[n]) for n in order]}


def torch_encoder_case(norm_first, activation, seed):
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.1,
                                       activation=activation, batch_first=True, norm_first=norm_first)
    encoder = nn.TransformerEncoder(layer, num_layers=2).eval()
    x = torch.randn(2, 6, 16)
    ids = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    with torch.no_grad():
        out = encoder(x, src_key_padding_mask=ids == 0)
        out_nomask = encoder(x)
    return {"config": dict(vocab_size=0, d_model=16, num_heads=4, num_layers=2, d_ff=32, max_len=16,
                           activation=activation, norm_first=norm_first, layer_style="torch",
                           final_norm=False, classifier_head=False),
            "ids": ids.tolist(), "input": stage("input", x),
            "parameters": [stage(k, v) for k, v in encoder.state_dict().items()],
            "output_padding": stage("output", out), "output_none": stage("output", out_nomask)}


def cross_attention_case():
    torch.manual_seed(3)
    mha = MultiHeadAttention(d_model=16, num_heads=4)
    q_in, kv_in = torch.randn(2, 3, 16), torch.randn(2, 5, 16)
    STAGES.clear()
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    mask[1, :, 3:] = False
    out, weights = mha(q_in, kv_in, kv_in, mask.unsqueeze(1))
    return {"parameters": [stage(k, v) for k, v in mha.state_dict().items()],
            "q_in": stage("q_in", q_in), "kv_in": stage("kv_in", kv_in), "mask": stage("mask", mask.long()),
            "output": stage("output", out), "attention_weights": stage("attention_weights", weights)}


def generate(out_dir):
    for name, case in CLASSIFIER_CASES.items():
        doc = classifier_case(**case)
        (out_dir / f"transformer_{name}.json").write_text(json.dumps(doc, separators=(",", ":")))
    doc = {f"{'prenorm' if nf else 'postnorm'}_{act}": torch_encoder_case(nf, act, 11 + i)
           for i, (nf, act) in enumerate([(False, "relu"), (True, "gelu")])}
    (out_dir / "transformer_torch_encoder.json").write_text(json.dumps(doc, separators=(",", ":")))
    (out_dir / "transformer_cross_attention.json").write_text(json.dumps(cross_attention_case(), separators=(",", ":")))
