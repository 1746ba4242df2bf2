"""Gradients of the second tutorial's TransformerClassifier (tests/torchgen/transformer.py) and of a
cross-entropy loss, from PyTorch autograd: for each case the parameters, input, labels, loss, logits
and the gradient of every parameter (the pos_encoding.pe buffer has none); the parameters themselves
only where the engine cannot draw them (nn.TransformerEncoderLayer). Writes gradients.json."""
import importlib.util
import json
import pathlib

import torch
import torch.nn as nn
import torch.nn.functional as F

_spec = importlib.util.spec_from_file_location("fixture_transformer", pathlib.Path(__file__).with_name("transformer.py"))
T = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(T)


class TorchLayerClassifier(nn.Module):
    """The tutorial's classifier around PyTorch's own nn.TransformerEncoderLayer (layer_style "torch")."""

    def __init__(self, vocab_size, d_model, num_heads, num_layers, num_classes, d_ff, max_len, dropout,
                 activation="relu", norm_first=False):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos_encoding = T.PositionalEncoding(d_model, max_len, dropout)
        layer = nn.TransformerEncoderLayer(d_model, num_heads, d_ff, dropout, activation=activation,
                                           batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, num_layers, norm=nn.LayerNorm(d_model))
        self.fc = nn.Linear(d_model, num_classes)

    def forward(self, x, mask_kind):
        S = x.size(1)
        h = self.pos_encoding(self.embedding(x) * (self.embedding.embedding_dim ** 0.5))
        causal = ~torch.tril(torch.ones(S, S, dtype=torch.bool)) if "causal" in mask_kind else None
        padding = (x == 0) if "padding" in mask_kind else None
        return self.fc(self.encoder(h, mask=causal, src_key_padding_mask=padding).mean(dim=1))


def tutorial_model(cfg, train):
    kw = {k: v for k, v in cfg.items() if k in ("activation", "norm_first")}
    main = {k: v for k, v in cfg.items() if k not in kw}
    return T.TransformerClassifier(**main, **kw).train(train)


CASES = {
    "postnorm_relu_padding": dict(
        cfg=dict(vocab_size=12, d_model=16, num_heads=2, num_layers=2, num_classes=3, max_len=32),
        seed=0, mask="padding", ids=[[1, 5, 7, 2, 0], [3, 3, 11, 0, 0], [4, 9, 10, 8, 6]], labels=[2, 0, 1]),
    "prenorm_gelu_causal_train_smoothing": dict(
        cfg=dict(vocab_size=20, d_model=8, num_heads=1, num_layers=1, num_classes=2, d_ff=24, max_len=10,
                 activation="gelu", norm_first=True),
        seed=7, mask="causal", ids=[[1, 2, 3, 4, 5, 6], [7, 8, 9, 0, 0, 0]], labels=[1, 0], train=True,
        label_smoothing=0.1),
    "eight_heads_three_layers_padding_causal": dict(
        cfg=dict(vocab_size=30, d_model=16, num_heads=8, num_layers=3, num_classes=4, max_len=16),
        seed=2**32 + 5, mask="padding+causal", ids=[[29, 1, 2, 3, 0, 0, 0], [5, 6, 7, 8, 9, 10, 11]],
        labels=[3, 1]),
    "four_layers_nomask_train_dropout": dict(
        cfg=dict(vocab_size=10, d_model=8, num_heads=2, num_layers=4, num_classes=2, max_len=8, dropout=0.2),
        seed=5, mask="none", ids=[[1, 2, 3, 0], [4, 5, 6, 7], [9, 9, 9, 9]], labels=[0, 1, 1], train=True),
    "postnorm_gelu_padding_train": dict(
        cfg=dict(vocab_size=16, d_model=12, num_heads=3, num_layers=2, num_classes=5, max_len=12,
                 activation="gelu"),
        seed=11, mask="padding", ids=[[3, 1, 4, 1, 5, 9, 2, 6], [5, 3, 5, 0, 0, 0, 0, 0]], labels=[4, 2],
        train=True, label_smoothing=0.2),
    "prenorm_relu_wide_padding": dict(
        cfg=dict(vocab_size=40, d_model=32, num_heads=4, num_layers=1, num_classes=3, max_len=12,
                 norm_first=True),
        seed=3, mask="padding", ids=[[i % 39 + 1 for i in range(9)], [7, 8, 9, 10, 0, 0, 0, 0, 0]],
        labels=[0, 2]),
    "torch_postnorm_relu_padding_train": dict(
        cfg=dict(vocab_size=14, d_model=16, num_heads=4, num_layers=2, num_classes=3, d_ff=32, max_len=16,
                 dropout=0.1, layer_style="torch"),
        seed=21, mask="padding", ids=[[1, 2, 3, 4, 0], [5, 6, 7, 8, 9], [13, 12, 0, 0, 0]], labels=[1, 2, 0],
        train=True),
    "torch_prenorm_gelu_padding_causal": dict(
        cfg=dict(vocab_size=14, d_model=16, num_heads=2, num_layers=2, num_classes=2, d_ff=24, max_len=16,
                 dropout=0.1, layer_style="torch", activation="gelu", norm_first=True),
        seed=22, mask="padding+causal", ids=[[1, 2, 3, 4, 5, 0], [6, 7, 8, 0, 0, 0]], labels=[1, 0]),
}


def case(cfg, seed, mask, ids, labels, train=False, label_smoothing=0.0):
    torch.manual_seed(seed)
    if cfg.get("layer_style") == "torch":
        kw = {k: v for k, v in cfg.items() if k != "layer_style"}
        model = TorchLayerClassifier(**kw).train(train)
        torch.manual_seed(seed + 1)  # dropout's draws; the engine loads these weights, it does not draw them
        logits = model(torch.tensor(ids), mask)
    else:
        model = tutorial_model(cfg, train)
        x = torch.tensor(ids)
        m = T.make_mask(mask, x)
        logits = model(x, None if m is None else m.unsqueeze(1))
    loss = F.cross_entropy(logits, torch.tensor(labels), label_smoothing=label_smoothing)
    loss.backward()
    # Seeded tutorial modules are drawn by the engine itself (tests/test_transformer.cpp checks that).
    params = [T.stage(k, v) for k, v in model.state_dict().items()] if cfg.get("layer_style") == "torch" else []
    return {"config": cfg, "seed": str(seed), "mask": mask, "train": train, "ids": ids, "labels": labels,
            "label_smoothing": label_smoothing, "parameters": params,
            "loss": T.floats(loss)[0], "logits": T.stage("logits", logits),
            "grads": [T.stage(k, p.grad) for k, p in model.named_parameters()]}


def generate(out_dir):
    doc = {name: case(**c) for name, c in CASES.items()}
    (out_dir / "gradients.json").write_text(json.dumps(doc, separators=(",", ":")))
