"""The second tutorial (docs/tutorials.md) run in PyTorch after torch.manual_seed(seed): its
script's code and prints (the Korean text restored: the seed file's copy is garbled), without matplotlib,
plus the numbers `attn tutorial --part 2` adds (marked "# shown" below). Tensors are printed with
print(t), grad_fn suffixes removed (the engine has no autograd). Writes tutorial2_seed<N>.json:
{"seed": N, "text": printed}."""
import contextlib
import io
import json
import math
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

SEEDS = [0, 1, 42]
TOKENS = ['The', 'cat', 'sat', 'on', 'mat', '.']
SHADES = " ░▒▓█"


# --- the script's functions and modules, verbatim ---

def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = K.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    attention_weights = F.softmax(scores, dim=-1)
    output = torch.matmul(attention_weights, V)
    return output, attention_weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.1):
        super().__init__()
        assert d_model % num_heads == 0
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, Q, K, V, mask=None):
        batch_size = Q.size(0)
        Q = self.W_Q(Q)
        K = self.W_K(K)
        V = self.W_V(V)
        Q = Q.view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = K.view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = V.view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        attn_output, attn_weights = scaled_dot_product_attention(Q, K, V, mask)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.view(batch_size, -1, self.d_model)
        output = self.W_O(attn_output)
        return output, attn_weights


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() *
                             (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:, :x.size(1)]
        return self.dropout(x)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        attn_out, _ = self.self_attn(x, x, x, mask)
        x = self.norm1(x + self.dropout(attn_out))
        ffn_out = self.ffn(x)
        x = self.norm2(x + self.dropout(ffn_out))
        return x


class TransformerEncoder(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__()
        self.layers = nn.ModuleList([
            TransformerEncoderLayer(d_model, num_heads, d_ff, dropout)
            for _ in range(num_layers)
        ])
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class TransformerClassifier(nn.Module):
    def __init__(self, vocab_size, d_model, num_heads, num_layers, num_classes,
                 d_ff=None, max_len=512, dropout=0.1):
        super().__init__()
        d_ff = d_ff or d_model * 4
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = TransformerEncoder(num_layers, d_model, num_heads, d_ff, dropout)
        self.fc = nn.Linear(d_model, num_classes)
        self._init_weights()

    def _init_weights(self):
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, x, mask=None):
        x = self.embedding(x) * math.sqrt(self.embedding.embedding_dim)
        x = self.pos_encoding(x)
        x = self.encoder(x, mask)
        x = x.mean(dim=1)
        return self.fc(x)


def create_causal_mask(size):
    mask = torch.triu(torch.ones(size, size), diagonal=1)
    return mask == 0


# --- what replaces the pictures: the numbers as a table and a text heatmap ---

def picture_note(file, what):
    print(f"(here the script saves {file}: {what} drawn with matplotlib)")


def attention_table(weights, tokens):
    """weights [n, n] as rows Query × columns Key: the values, then shades scaled to the largest."""
    rows = weights.tolist()
    top = max(max(r) for r in rows)
    print("\nQuery \\ Key:")
    print(f"{'':>8}" + "".join(f"{t:>8}" for t in tokens))
    for token, row in zip(tokens, rows):
        print(f"{token:>8}" + "".join(f"{v:8.4f}" for v in row))
    print(f"\nHeatmap ('{SHADES}' from 0 to the largest weight, {top:.4f}):")
    print(f"{'':>8}" + "".join(f"{t:>8}" for t in tokens))
    for token, row in zip(tokens, rows):
        print(f"{token:>8}" + "".join(f"{SHADES[int(v / top * 4 + 0.5)] * 4:>8}" for v in row))


def parameters(module):
    return sum(p.numel() for p in module.parameters())


# --- the script, section by section ---

def run(seed):
    torch.manual_seed(seed)
    print("=" * 60)
    print("PyTorch Attention & Transformer")
    print("=" * 60)

    print("\n[1] Scaled Dot-Product Attention")
    print("-" * 40)
    batch_size, seq_len, d_k = 2, 5, 8
    Q = torch.randn(batch_size, seq_len, d_k)
    K = torch.randn(batch_size, seq_len, d_k)
    V = torch.randn(batch_size, seq_len, d_k)
    output, weights = scaled_dot_product_attention(Q, K, V)
    print(f"Q, K, V: ({batch_size}, {seq_len}, {d_k})")
    print(f"Output: {output.shape}")
    print(f"Attention Weights: {weights.shape}")
    print(f"Weights sum (should be 1): {weights[0, 0].sum().item():.4f}")
    print("\nAttention weights of batch 0 (weights[0]):")  # shown
    print(weights[0])

    print("\n[2] Multi-Head Attention")
    print("-" * 40)
    mha = MultiHeadAttention(d_model=64, num_heads=8)
    x = torch.randn(2, 10, 64)
    output, weights = mha(x, x, x)
    print(f"입력: {x.shape}")
    print(f"출력: {output.shape}")
    print(f"Attention Weights: {weights.shape}")
    print("\nHead 0's attention weights, batch 0 (weights[0, 0]):")  # shown
    print(weights[0, 0])

    print("\n[3] Positional Encoding")
    print("-" * 40)
    pe = PositionalEncoding(d_model=64)
    picture_note("positional_encoding.png", "pe.pe[0, :50, :]")
    print("\nPositions 0-4, dimensions 0-7 (pe.pe[0, :5, :8]):")  # shown
    print(pe.pe[0, :5, :8])

    print("\n[4] Feed Forward Network")
    print("-" * 40)
    ff = FeedForward(d_model=64, d_ff=256)
    x = torch.randn(2, 10, 64)
    output = ff(x)
    print(f"FFN 입력: {x.shape} → 출력: {output.shape}")
    print("\nFirst output row (output[0, 0]):")  # shown
    print(output[0, 0])

    print("\n[5] Transformer Encoder Layer")
    print("-" * 40)
    encoder_layer = TransformerEncoderLayer(d_model=64, num_heads=8, d_ff=256)
    x = torch.randn(2, 10, 64)
    output = encoder_layer(x)
    print(f"인코더 층 입력: {x.shape} → 출력: {output.shape}")
    print("\nFirst output row (output[0, 0]):")  # shown
    print(output[0, 0])

    print("\n[6] Transformer Encoder")
    print("-" * 40)
    encoder = TransformerEncoder(num_layers=6, d_model=64, num_heads=8, d_ff=256)
    x = torch.randn(2, 10, 64)
    output = encoder(x)
    print(f"Transformer Encoder 출력: {output.shape}")
    print(f"파라미터 수: {parameters(encoder):,}")
    print("\nFirst output row (output[0, 0]):")  # shown
    print(output[0, 0])

    print("\n[7] Transformer 분류기")
    print("-" * 40)
    model = TransformerClassifier(vocab_size=10000, d_model=128, num_heads=8, num_layers=4, num_classes=5)
    x = torch.randint(0, 10000, (4, 32))
    output = model(x)
    print(f"분류기 입력: {x.shape}")
    print(f"분류기 출력: {output.shape}")
    print(f"파라미터 수: {parameters(model):,}")
    print("\nFirst sequence's token ids (x[0]):")  # shown
    print(x[0])
    print("\nLogits (output):")  # shown
    print(output)

    print("\n[8] PyTorch 내장 Transformer")
    print("-" * 40)
    pytorch_encoder_layer = nn.TransformerEncoderLayer(d_model=64, nhead=8, dim_feedforward=256, dropout=0.1,
                                                       batch_first=True)
    pytorch_encoder = nn.TransformerEncoder(pytorch_encoder_layer, num_layers=6)
    x = torch.randn(2, 10, 64)
    output = pytorch_encoder(x)
    print(f"PyTorch Transformer 출력: {output.shape}")
    print("\nFirst output row (output[0, 0]):")  # shown
    print(output[0, 0])

    print("\n[9] Attention 시각화")
    print("-" * 40)
    mha = MultiHeadAttention(d_model=64, num_heads=8)
    x = torch.randn(1, 6, 64)
    _, weights = mha(x, x, x)
    picture_note("attention_visualization.png", "weights[0, 0]")
    print("\nFirst batch, first head (weights[0, 0]):")  # shown
    print(weights[0, 0])
    attention_table(weights[0, 0], TOKENS)  # shown

    print("\n[10] Causal Mask")
    print("-" * 40)
    mask = create_causal_mask(5)
    print(f"Causal Mask (5x5):\n{mask.int()}")

    print("\n" + "=" * 60)
    print("Attention & Transformer 정리")
    print("=" * 60)
    print(SUMMARY)
    print("=" * 60)


# The script's closing summary. The seed file lost the indentation; two spaces are assumed.
SUMMARY = """
Scaled Dot-Product Attention:
  scores = Q @ K.T / sqrt(d_k)
  weights = softmax(scores)
  output = weights @ V

Multi-Head Attention:
  - 여러 헤드가 다른 관계 학습
  - 각 헤드: d_k = d_model / num_heads

Transformer Encoder:
  - Self-Attention + FFN
  - Residual + LayerNorm
  - Positional Encoding

PyTorch 내장:
  encoder_layer = nn.TransformerEncoderLayer(d_model, nhead)
  encoder = nn.TransformerEncoder(encoder_layer, num_layers)

핵심 하이퍼파라미터:
  - d_model: 모델 차원 (512)
  - num_heads: 헤드 수 (8)
  - d_ff: FFN 차원 (2048)
  - num_layers: 층 수 (6)
"""


def generate(out_dir):
    for seed in SEEDS:
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            run(seed)
        printed = re.sub(r"(,\n *|, )grad_fn=<\w+>", "", text.getvalue())
        doc = {"seed": seed, "text": printed}
        (out_dir / f"tutorial2_seed{seed}.json").write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
