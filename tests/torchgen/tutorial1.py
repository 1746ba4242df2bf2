"""The first tutorial (docs/tutorials.md) run in PyTorch, parametrised: its script, with the
sentences, seed, d_model, max_len and mask as arguments. Writes tutorial_<case>.json: the config, the
vocabulary, every stage of the trace, and the script's printed text (grad_fn suffixes removed: the
engine has no autograd)."""
import contextlib
import io
import json
import math
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = {
    "default": dict(sentences=["나는 오늘 학교에 간다", "나는 오늘 도서관에 간다",
                               "오늘 나는 학교에서 공부한다", "나는 집에 간다"],
                    seed="0", d_model=6, max_len=100, mask="padding"),
    "seed1_nomask": dict(sentences=None, seed="1", d_model=6, max_len=100, mask="none"),
    "causal_mixed": dict(sentences=["the cat sat on the mat", "a dog", "나는 the 고양이 를 본다"],
                         seed="42", d_model=8, max_len=10, mask="causal"),
    "padding_causal": dict(sentences=["one", "two words here", "x y z w v u t", "words here again"],
                           seed=str(2**32 + 5), d_model=16, max_len=7, mask="padding+causal"),
    "negative_seed_d2": dict(sentences=["작은 예제"], seed="-1", d_model=2, max_len=2, mask="padding"),
    "wide": dict(sentences=["a b c d e f g h i j k l", "m n o p", "q r s t u v w x"],
                 seed="123456789", d_model=32, max_len=100, mask="padding"),
}


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab_size):
        super().__init__()
        self.lut = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.0, max_len=100):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.dropout(x + self.pe[:, :x.size(1)])


def attention(query, key, value, mask=None):
    d_k = query.size(-1)
    print("\n" + "-" * 70); print("Attention Step 1: d_k"); print("-" * 70)
    print("d_k:"); print(d_k)
    raw_scores = torch.matmul(query, key.transpose(-2, -1))
    print("\n" + "-" * 70); print("Attention Step 2: QK^T"); print("-" * 70)
    print("raw scores:"); print(raw_scores); print("\nraw scores shape:"); print(raw_scores.shape)
    scores = raw_scores / math.sqrt(d_k)
    scaled = scores
    print("\n" + "-" * 70); print("Attention Step 3: QK^T / sqrt(d_k)"); print("-" * 70)
    print("scaled scores:"); print(scores); print("\nscaled scores shape:"); print(scores.shape)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
        print("\n" + "-" * 70); print("Attention Step 4: Mask"); print("-" * 70)
        print("masked scores:"); print(scores)
    p_attn = F.softmax(scores, dim=-1)
    print("\n" + "-" * 70); print("Attention Step 5: Softmax"); print("-" * 70)
    print("attention weights:"); print(p_attn); print("\nattention weights shape:"); print(p_attn.shape)
    print("\nAttention weight row sums:"); print(p_attn.sum(dim=-1))
    output = torch.matmul(p_attn, value)
    print("\n" + "-" * 70); print("Attention Step 6: Attention Weight × V"); print("-" * 70)
    print("attention output:"); print(output); print("\nattention output shape:"); print(output.shape)
    return output, p_attn, (raw_scores, scaled, scores)


def header(c, title, lead=True):
    print(("\n" if lead else "") + c * 70); print(title); print(c * 70)


def run(sentences, seed, d_model, max_len, mask):
    """The tutorial script; returns the stages of the run with `mask`."""
    torch.manual_seed(int(seed))
    vocab = {"[PAD]": 0}
    words = [s.split() for s in sentences]
    for ws in words:
        for w in ws:
            vocab.setdefault(w, len(vocab))
    id_to_token = {i: t for t, i in vocab.items()}
    seq = max(len(ws) for ws in words)
    x = torch.LongTensor([[vocab[w] for w in ws] + [0] * (seq - len(ws)) for ws in words])

    header("=", "1. INPUT", lead=False)
    print("x:"); print(x); print("\nx shape:"); print(x.shape); print("\nSentences:")
    for sentence in x:
        print([id_to_token[t.item()] for t in sentence])

    embedding_layer = Embeddings(d_model=d_model, vocab_size=len(vocab))
    embedding = embedding_layer(x)
    header("=", "2. EMBEDDING")
    print("embedding:"); print(embedding); print("\nembedding shape:"); print(embedding.shape)

    positional_encoding = PositionalEncoding(d_model=d_model, dropout=0.0, max_len=max_len)
    pe_result = positional_encoding(embedding)
    header("=", "3. POSITIONAL ENCODING")
    print("Positional Encoding:"); print(positional_encoding.pe[:, :x.size(1)])
    print("\nPositional Encoding shape:"); print(positional_encoding.pe[:, :x.size(1)].shape)
    print("\nEmbedding + Positional Encoding:"); print(pe_result)
    print("\npe_result shape:"); print(pe_result.shape)

    W_Q = nn.Linear(d_model, d_model, bias=False)
    W_K = nn.Linear(d_model, d_model, bias=False)
    W_V = nn.Linear(d_model, d_model, bias=False)
    query, key, value = W_Q(pe_result), W_K(pe_result), W_V(pe_result)
    header("=", "4. QUERY / KEY / VALUE")
    print("Query:"); print(query); print("\nQuery shape:"); print(query.shape)
    print("\nKey:"); print(key); print("\nKey shape:"); print(key.shape)
    print("\nValue:"); print(value); print("\nValue shape:"); print(value.shape)

    padding_mask = x != vocab["[PAD]"]
    attention_mask = padding_mask.unsqueeze(1)
    header("=", "5. PADDING MASK")
    print("padding_mask:"); print(padding_mask); print("\npadding_mask shape:"); print(padding_mask.shape)
    print("\nattention_mask:"); print(attention_mask)
    print("\nattention_mask shape:"); print(attention_mask.shape)
    causal = torch.tril(torch.ones(seq, seq)).bool().unsqueeze(0)
    used_mask = {"none": None, "padding": attention_mask, "causal": causal,
                 "padding+causal": attention_mask & causal}[mask]
    if "causal" in mask:
        combined = used_mask.expand(len(words), seq, seq)
        print(f"\ncombined {mask} mask:"); print(combined)
        print("\ncombined mask shape:"); print(combined.shape)

    print("\n\n"); print("#" * 70); print("6. ATTENTION WITHOUT MASK"); print("#" * 70)
    attn_no_mask, p_attn_no_mask, _ = attention(query, key, value)
    print("\nFinal Attention Output:"); print(attn_no_mask)
    print("\nFinal Attention Output Shape:"); print(attn_no_mask.shape)
    print("\nFinal Attention Weight:"); print(p_attn_no_mask)
    print("\nFinal Attention Weight Shape:"); print(p_attn_no_mask.shape)

    title = "+".join(k.capitalize() for k in mask.split("+"))
    print("\n\n"); print("#" * 70); print(f"7. ATTENTION WITH {mask.upper()} MASK"); print("#" * 70)
    attn_mask, p_attn_mask, (raw, scaled, masked) = attention(query, key, value, mask=used_mask)
    print("\nFinal Masked Attention Output:"); print(attn_mask)
    print("\nFinal Masked Attention Output Shape:"); print(attn_mask.shape)
    print("\nFinal Masked Attention Weight:"); print(p_attn_mask)
    print("\nFinal Masked Attention Weight Shape:"); print(p_attn_mask.shape)

    header("=", "8. LAST SENTENCE ATTENTION WEIGHT")
    print("Sentence:"); print([id_to_token[i.item()] for i in x[-1]])
    print("\nWithout Mask:"); print(p_attn_no_mask[-1])
    print(f"\nWith {title} Mask:"); print(p_attn_mask[-1])

    header("=", "9. PAD ATTENTION COMPARISON")
    print("Without Mask - attention to PAD:"); print(p_attn_no_mask[-1, :, -1])
    print("\nWith Mask - attention to PAD:"); print(p_attn_mask[-1, :, -1])

    header("=", "10. SHAPE SUMMARY")
    for label, t in [("Input: ", x), ("Embedding: ", embedding), ("PE Result: ", pe_result),
                     ("Query: ", query), ("Key: ", key), ("Value: ", value),
                     ("Attention Weight: ", p_attn_mask), ("Attention Output: ", attn_mask)]:
        print(label, t.shape)

    full_mask = (torch.ones(len(words), seq, seq, dtype=torch.bool) if used_mask is None
                 else used_mask.expand(len(words), seq, seq))
    stages = [("token_ids", x), ("embedding", embedding),
              ("positional_encoding", positional_encoding.pe[:, :seq]), ("embedded", pe_result),
              ("query", query), ("key", key), ("value", value), ("mask", full_mask.long()),
              ("scores", raw), ("scaled_scores", scaled), ("masked_scores", masked),
              ("attention_weights", p_attn_mask), ("attention_output", attn_mask)]
    return vocab, [[id_to_token[t.item()] for t in row] for row in x], stages


def stage_json(name, t):
    t = t.detach()
    data = t.reshape(-1).tolist()
    return {"name": name, "shape": list(t.shape), "data": data}


def generate(out_dir):
    for case, cfg in CASES.items():
        cfg = dict(cfg)
        if cfg["sentences"] is None:
            cfg["sentences"] = CASES["default"]["sentences"]
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            vocab, tokens, stages = run(**cfg)
        printed = re.sub(r"(,\n *|, )grad_fn=<\w+>", "", text.getvalue())
        doc = {"config": cfg, "vocab": vocab, "tokens": tokens,
               "stages": [stage_json(n, t) for n, t in stages], "walkthrough": printed}
        (out_dir / f"tutorial_{case}.json").write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))
