"""gpt2_train.json: training GPT-2 (GPT2LMHeadModel) from scratch, for core/model/gpt2.* and core/train/train_lm.*.

`transformers` is not installed: the model is restated here under its module names and with its eager
math (tests/torchgen/pretrained.py has the same forward without dropout), and so is its initialisation:
    torch.manual_seed(seed); model = GPT2Model(config)
draws, during construction, nn.Embedding's N(0, 1) for wte and wpe and each Conv1D's N(0, 0.02) (its
weight [in, out]), module by module; then post_init runs self.apply(_init_weights), children before
their parent: Embedding and Conv1D weights ~ N(0, initializer_range), biases 0, LayerNorm 1 and 0, and
for a module with a parameter named exactly "c_proj.weight" (GPT2Attention, GPT2MLP) that weight again
~ N(0, initializer_range / sqrt(2 n_layer)). The LM head is wte (tied).
Training: model.train(); loss = GPT2LMHeadModel's (logits[:, :-1] against input_ids[:, 1:], padding
labelled -100 and ignored; mean over the rest); dropout from the global generator, continuing
initialisation's draws; torch.optim.AdamW(model.parameters(), lr) stepping on one batch, every item
each step, padded on the right with id 0.
Each case: config, seed, lr, items (ids), init (every tensor under its checkpoint name), loss and grads
(the first step's) and the 20 steps' losses.
"""
import importlib.util
import json
import math
import pathlib

import torch
import torch.nn as nn
import torch.nn.functional as F


def _sibling(name):
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", pathlib.Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


P = _sibling("pretrained")  # its GPT-2 modules without dropout, whose Conv1D and gelu_new are reused here
stage, gelu_new = P.stage, P.gelu_new


class Conv1D(P.Conv1D):
    """transformers' Conv1D draws its weight when built."""
    def __init__(self, nf, nx):
        super().__init__(nf, nx)
        nn.init.normal_(self.weight, std=0.02)


ACTIVATIONS = {"gelu_new": gelu_new, "gelu": F.gelu, "relu": F.relu}


class GPT2Attention(nn.Module):
    def __init__(self, c, layer_idx):
        super().__init__()
        n = c["n_positions"]
        self.register_buffer("bias", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n), persistent=False)
        self.num_heads, self.head_dim = c["n_head"], c["n_embd"] // c["n_head"]
        self.layer_idx, self.scale_by_layer = layer_idx, c["scale_attn_by_inverse_layer_idx"]
        self.c_attn = Conv1D(3 * c["n_embd"], c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], c["n_embd"])
        self.attn_dropout = nn.Dropout(c["attn_pdrop"])
        self.resid_dropout = nn.Dropout(c["resid_pdrop"])

    def _split_heads(self, t):
        return t.view(t.size()[:-1] + (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(hidden_states.size(-1), dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        w = torch.matmul(query, key.transpose(-1, -2))
        w = w / torch.full([], value.size(-1) ** 0.5, dtype=w.dtype)
        if self.scale_by_layer:
            w = w / float(self.layer_idx + 1)
        q_len, k_len = query.size(-2), key.size(-2)
        causal = self.bias[:, :, k_len - q_len:k_len, :k_len]
        w = torch.where(causal, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        w = self.attn_dropout(nn.functional.softmax(w, dim=-1))
        out = torch.matmul(w, value).permute(0, 2, 1, 3).contiguous()
        out = out.view(out.size()[:-2] + (hidden_states.size(-1),))
        return self.resid_dropout(self.c_proj(out))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        inner = c["n_inner"] if c["n_inner"] is not None else 4 * c["n_embd"]  # 0: the MLP adds c_proj.bias
        self.c_fc = Conv1D(inner, c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], inner)
        self.act = ACTIVATIONS[c["activation_function"]]
        self.dropout = nn.Dropout(c["resid_pdrop"])

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, c, layer_idx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.attn = GPT2Attention(c, layer_idx)
        self.ln_2 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.mlp = GPT2MLP(c)

    def forward(self, x):
        x = self.attn(self.ln_1(x)) + x
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.drop = nn.Dropout(c["embd_pdrop"])
        self.h = nn.ModuleList([GPT2Block(c, i) for i in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.apply(self._init_weights)  # post_init

    def _init_weights(self, module):
        r = self.config["initializer_range"]
        if isinstance(module, (nn.Linear, Conv1D)):
            module.weight.data.normal_(mean=0.0, std=r)
            module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=r)
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)
        for name, p in module.named_parameters():
            if name == "c_proj.weight":
                p.data.normal_(mean=0.0, std=(r / math.sqrt(2 * self.config["n_layer"])))

    def forward(self, input_ids):
        x = self.wte(input_ids) + self.wpe(torch.arange(input_ids.size(-1)))
        x = self.drop(x)
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    """lm_head is tied to transformer.wte: here it is no module at all. With tie_word_embeddings false it is
    GPT2LMHeadModel's nn.Linear, drawn when built (kaiming-uniform), then by post_init, which initialises
    only the modules GPT2Model's own post_init has not: N(0, initializer_range)."""
    def __init__(self, c):
        super().__init__()
        self.transformer = GPT2Model(c)
        if not c.get("tie_word_embeddings", True):
            self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
            self.lm_head.weight.data.normal_(mean=0.0, std=c["initializer_range"])

    def forward(self, input_ids, labels):
        head = self.lm_head.weight if hasattr(self, "lm_head") else self.transformer.wte.weight
        logits = F.linear(self.transformer(input_ids), head)
        return F.cross_entropy(logits[..., :-1, :].reshape(-1, logits.size(-1)), labels[..., 1:].reshape(-1),
                               ignore_index=-100)


BASE = {"activation_function": "gelu_new", "attn_pdrop": 0.1, "embd_pdrop": 0.1, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-5, "model_type": "gpt2", "n_embd": 16, "n_head": 2, "n_inner": None,
        "n_layer": 2, "n_positions": 12, "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False,
        "vocab_size": 37}
ITEMS = [[3, 14, 15, 9, 2, 6, 5, 3, 5, 8], [9, 7, 9, 3, 2, 3, 8], [4, 6, 2, 6]]
CASES = {
    "dropout": {"config": BASE, "seed": 0, "lr": 3e-3},
    "layer_scaled_gelu_no_dropout": {
        "config": {**BASE, "activation_function": "gelu", "attn_pdrop": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0,
                   "n_layer": 3, "n_inner": 24, "scale_attn_by_inverse_layer_idx": True, "initializer_range": 0.2},
        "seed": 7, "lr": 1e-2},
    "attention_only_untied": {"config": {**BASE, "n_inner": 0, "tie_word_embeddings": False, "initializer_range": 0.1},
                              "seed": 3, "lr": 3e-3},
}
STEPS = 20


def batch(items):
    seq = max(len(i) for i in items)
    ids = torch.tensor([i + [0] * (seq - len(i)) for i in items])
    labels = torch.tensor([i + [-100] * (seq - len(i)) for i in items])
    return ids, labels


def case(config, seed, lr):
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    init = [stage(k, v) for k, v in model.state_dict().items()]
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    ids, labels = batch(ITEMS)
    losses, grads = [], None
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = model(ids, labels)
        loss.backward()
        if step == 0:
            grads = [stage(k, p.grad) for k, p in model.named_parameters()]
        losses.append(loss.item())
        optimizer.step()
    return {"config": config, "seed": seed, "lr": lr, "items": ITEMS, "init": init, "grads": grads, "losses": losses}


def generate(out_dir):
    doc = {name: case(**c) for name, c in CASES.items()}
    (out_dir / "gpt2_train.json").write_text(json.dumps(doc, separators=(",", ":")))
