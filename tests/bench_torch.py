#!/usr/bin/python3
"""The cases of `attn bench` in PyTorch (Debian's python3-torch), printed as JSON for attn to compare.

`attn bench --torch` runs this with PyTorch's best settings for its own process: OPENBLAS_CORETYPE
and OPENBLAS_L2_SIZE unset (else OpenBLAS picks its slower AVX2 kernel on an AVX-512 CPU it knows),
unless OpenBLAS falls back to its generic Prescott kernel on a CPU it does not recognise (a virtual
machine's), when this script restarts itself with the kernel of the instruction set the CPU has
(SkylakeX for AVX-512, Haswell for AVX2); OMP_WAIT_POLICY=PASSIVE for
2 threads (else OpenMP workers spin against OpenBLAS's), and here torch.set_num_threads(N) plus
OpenBLAS's own pool limited to N through threadpoolctl. Every case but train and attribute runs under
torch.no_grad() in eval mode (train times a whole step: forward, backward, AdamW; attribute the input's
gradients, the weights frozen); the encoder reports the faster of the tutorial's modules and nn.TransformerEncoder (its fast path).
Usage: bench_torch.py --threads N [--quick] [case ...]
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

try:
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError:  # python3-threadpoolctl missing: OpenBLAS keeps its default pool
    threadpool_info = threadpool_limits = None


def best_openblas_kernel():
    """OpenBLAS's kernel for this CPU's instruction set when it fell back to Prescott, else None."""
    if not threadpool_info or "OPENBLAS_CORETYPE" in os.environ:
        return None
    if not any(i.get("architecture") == "Prescott" for i in threadpool_info()):
        return None
    with open("/proc/cpuinfo") as f:
        flags = next((line.split() for line in f if line.startswith("flags")), [])
    return "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None


if best_openblas_kernel():
    os.execve(sys.executable, [sys.executable] + sys.argv,
              dict(os.environ, OPENBLAS_CORETYPE=best_openblas_kernel()))


def status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return float(line.split()[1]) * 1024.0
    return 0.0


def reset_peak_memory():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def measure(fn, budget, inner=1):
    """As attn's measure(): a warm-up call, then samples until 3 and `budget` seconds (at most 50); the
    peak resident memory added from before the warm-up."""
    reset_peak_memory()
    before = status_bytes("VmRSS:")
    fn()
    samples, start = [], time.perf_counter()
    while len(samples) < 3 or (time.perf_counter() - start < budget and len(samples) < 50):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return samples, max(0.0, status_bytes("VmHWM:") - before)


def measure_once(fn):
    """One call, timed, for cases of many seconds (as attn's measure_once)."""
    reset_peak_memory()
    before, t0 = status_bytes("VmRSS:"), time.perf_counter()
    fn()
    return [time.perf_counter() - t0], max(0.0, status_bytes("VmHWM:") - before)


def result(case, params, samples, extra, flops, **more):
    med = statistics.median(samples)
    r = {"case": case, "params": params, "median_s": med, "min_s": min(samples), "max_s": max(samples),
         "samples": len(samples), "gflops": flops / med / 1e9, "extra_memory_mb": extra / 1048576.0}
    r.update(more)
    return r


def attention(q, k, v, mask=None):
    """The tutorials' plain-ops attention: matmul, scale, masked_fill, softmax, matmul."""
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def bench_tutorial(args):
    torch.manual_seed(0)
    d, ids = 6, torch.tensor([[1, 2, 3, 4], [1, 2, 5, 4], [2, 1, 6, 7], [1, 8, 4, 0]])
    emb = nn.Embedding(9, d, padding_idx=0)
    w_q, w_k, w_v = (nn.Linear(d, d, bias=False) for _ in range(3))
    position = torch.arange(0, 100).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    pe = torch.zeros(100, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div_term), torch.cos(position * div_term)

    def forward():
        x = emb(ids) * math.sqrt(d) + pe[: ids.size(1)].unsqueeze(0)
        mask = (ids != 0).unsqueeze(1)
        return attention(w_q(x), w_k(x), w_v(x), mask)

    samples, extra = measure(forward, args.budget, 1000)
    flops = 2 * 16 * d * d * 3 + 4 * 16 * 4 * d
    return [result("tutorial", {"batch": 4, "seq": 4, "d_model": d}, samples, extra, flops)]


def bench_sdpa(args):
    out, heads, dim = [], 8, 64
    for s in ([128, 512] if args.quick else [128, 512, 1024, 2048, 4096, 8192]):
        q, k, v = (torch.randn(1, heads, s, dim) for _ in range(3))
        for causal in (False, True):
            mask = torch.tril(torch.ones(s, s, dtype=torch.bool)) if causal else None
            samples, extra = measure(lambda: attention(q, k, v, mask), args.budget)
            flops = 4.0 * s * s * dim * heads * (0.5 if causal else 1.0)
            params = {"batch": 1, "heads": heads, "head_dim": dim, "seq": s, "causal": causal}
            out.append(result("sdpa", params, samples, extra, flops))
            del mask
    return out


class MultiHeadAttention(nn.Module):
    """The second tutorial's module (seed 003)."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.h, self.d_k = heads, d_model // heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, mask=None):
        b = x.size(0)
        q, k, v = (w(x).view(b, -1, self.h, self.d_k).transpose(1, 2) for w in (self.w_q, self.w_k, self.w_v))
        y = attention(q, k, v, mask).transpose(1, 2).contiguous().view(b, -1, self.h * self.d_k)
        return self.w_o(y)


def bench_mha(args):
    out, d, heads = [], 512, 8
    mha = MultiHeadAttention(d, heads).eval()
    for b, s in ([(2, 64)] if args.quick else [(8, 128), (1, 2048)]):
        x = torch.randn(b, s, d)
        samples, extra = measure(lambda: mha(x), args.budget)
        flops = 8.0 * b * s * d * d + 4.0 * b * s * s * d
        out.append(result("mha", {"batch": b, "seq": s, "d_model": d, "heads": heads}, samples, extra, flops))
    return out


class EncoderLayer(nn.Module):
    """The second tutorial's post-norm encoder layer."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.attn = MultiHeadAttention(d, heads)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.ReLU(), nn.Linear(ff, d))
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x):
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.ff(x))


def bench_encoder(args):
    """The tutorial's encoder layers (no embedding, no final norm) at attn bench's sizes, or
    nn.TransformerEncoder when it is faster."""
    sizes = [(512, 8, 1, 2048, 2, 64)] if args.quick else [(128, 8, 4, 512, 32, 16), (512, 8, 6, 2048, 8, 128)]
    out = []
    for d, heads, layers, ff, b, s in sizes:
        x = torch.randn(b, s, d)
        variants = {
            "tutorial modules": nn.Sequential(*(EncoderLayer(d, heads, ff) for _ in range(layers))).eval(),
            "nn.TransformerEncoder": nn.TransformerEncoder(
                nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True), layers,
                enable_nested_tensor=False).eval(),
        }
        best = None
        for name, model in variants.items():
            samples, extra = measure(lambda: model(x), args.budget)
            if best is None or statistics.median(samples) < statistics.median(best[1]):
                best = (name, samples, extra)
        flops = layers * (b * s * (8 * d * d + 4 * d * ff) + 4.0 * b * s * s * d)
        params = {"batch": b, "seq": s, "d_model": d, "heads": heads, "layers": layers, "d_ff": ff}
        med = statistics.median(best[1])
        out.append(result("encoder", params, best[1], best[2], flops, tokens_per_s=b * s / med, variant=best[0]))
    return out


def bench_gemm(args):
    out = []
    for n in ([256] if args.quick else [256, 512, 1024, 2048]):
        a, b = torch.randn(n, n), torch.randn(n, n)
        samples, extra = measure(lambda: torch.mm(a, b), args.budget)
        out.append(result("gemm", {"n": n}, samples, extra, 2.0 * n ** 3))
    return out


def bench_train(args):
    """One training step of the tutorial's classifier: train-mode forward (dropout 0.1), cross-entropy,
    backward, AdamW; the sizes of attn bench's train case."""
    tutorial = torchgen("transformer")
    sizes = [(32, 4, 1, 100, 4, 8)] if args.quick else [(128, 8, 4, 1000, 32, 16), (512, 8, 6, 1000, 8, 128)]
    out = []
    with torch.enable_grad():
        for d, heads, layers, vocab, b, s in sizes:
            model = tutorial.TransformerClassifier(vocab, d, heads, layers, 5, max_len=s).train()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            x = torch.randint(1, vocab, (b, s))
            y = torch.arange(b) % 5
            mask = (x != 0).unsqueeze(1).expand(b, s, s).unsqueeze(1)

            def step():
                loss = nn.functional.cross_entropy(model(x, mask), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            samples, extra = measure(step, args.budget)
            rows, ff = b * s, 4 * d
            flops = 3 * layers * (rows * (8 * d * d + 4 * d * ff) + 4.0 * rows * s * d)
            params = {"batch": b, "seq": s, "d_model": d, "heads": heads, "layers": layers, "vocab": vocab}
            out.append(result("train", params, samples, extra, flops, steps_per_s=1 / statistics.median(samples)))
    return out


def bench_train_lm(args):
    """One training step of GPT-2 (tests/torchgen/gpt2_train.py's GPT2LMHeadModel, transformers' eager math,
    dropout 0.1): the next-token loss, backward, AdamW; the sizes of attn bench's train-lm case."""
    G = torchgen("gpt2_train")
    sizes = [(32, 2, 1, 64, 2, 8)] if args.quick else [(128, 4, 4, 256, 16, 64), (768, 12, 12, 50257, 4, 128)]
    out = []
    with torch.enable_grad():
        for d, heads, layers, vocab, b, s in sizes:
            config = dict(G.BASE, n_embd=d, n_head=heads, n_layer=layers, n_positions=s, vocab_size=vocab)
            model = G.GPT2LMHeadModel(config).train()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            x = torch.randint(0, vocab, (b, s))

            def step():
                loss = model(x, x)
                opt.zero_grad()
                loss.backward()
                opt.step()
            samples, extra = measure(step, args.budget)
            rows = b * s
            flops = 3 * (layers * (rows * 24 * d * d + 4.0 * rows * s * d) + 2 * rows * d * vocab)
            params = {"batch": b, "seq": s, "d_model": d, "heads": heads, "layers": layers, "vocab": vocab}
            out.append(result("train-lm", params, samples, extra, flops, steps_per_s=1 / statistics.median(samples)))
    return out


def torchgen(name):
    """A module of tests/torchgen by path (PyTorch ships a package named torchgen), its stage recorder
    made a no-op: its copies are not part of what is timed."""
    import importlib.util
    import pathlib
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", pathlib.Path(__file__).with_name("torchgen") / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.rec = lambda name, t: t
    return module


def bench_patch(args):
    """attn patch's layer x head sweep as TransformerLens runs it: the clean run's z cached by hooks,
    then for every head the whole corrupted run again with a forward pre-hook on that layer's output
    projection replacing the head's columns; GPT-2-small-shaped (tests/torchgen's GPT2LMHeadModel,
    transformers' eager math), 20 tokens, one differing."""
    P = torchgen("pretrained")
    layers, heads, d, vocab, seq = (2, 4, 64, 1000, 8) if args.quick else (12, 12, 768, 50257, 20)
    config = dict(P.GPT2_CONFIG, n_embd=d, n_head=heads, n_layer=layers, n_positions=1024, vocab_size=vocab)
    model = P.GPT2LMHeadModel(config).eval()
    clean = torch.randint(0, vocab, (1, seq))
    corrupted = clean.clone()
    corrupted[0, seq // 2] = (corrupted[0, seq // 2] + 1) % vocab
    projections = [block.attn.c_proj for block in model.transformer.h]
    dk = d // heads

    def sweep():
        cache = {}
        handles = [p.register_forward_pre_hook(lambda m, a, l=l: cache.__setitem__(l, a[0])) for l, p in enumerate(projections)]
        model(clean)
        for h in handles:
            h.remove()
        model(corrupted)
        for l, p in enumerate(projections):
            for h in range(heads):
                def patch(m, a, l=l, h=h):
                    z = a[0].clone()
                    z[..., h * dk:(h + 1) * dk] = cache[l][..., h * dk:(h + 1) * dk]
                    return (z,)
                handle = p.register_forward_pre_hook(patch)
                logits = model(corrupted)
                float(logits[0, -1, 0] - logits[0, -1, 1])
                handle.remove()
    if args.quick:
        samples, extra = measure(sweep, args.budget)
    else:
        samples, extra = measure_once(sweep)
    runs = layers * heads
    flops = seq * (runs * layers * (24 * d * d + 4 * seq * d) + runs * 2 * d * vocab)
    params = {"layers": layers, "heads": heads, "d_model": d, "vocab": vocab, "seq": seq, "sweep": "heads"}
    return [result("patch", params, samples, extra, flops, runs=runs)]


def measure_greedy(forward, layers, prompt, new, budget):
    """Times greedy generation: forward(ids, past, start) runs the prompt once, then each new token one
    position, `past` holding every layer's cached keys and values."""
    def run():
        past = [None] * layers
        logits = forward(prompt, past, 0)
        for n in range(new):
            token = logits[0, -1].argmax()
            if n + 1 < new:
                logits = forward(token.view(1, 1), past, prompt.size(1) + n)
    with torch.inference_mode():
        return measure(run, budget)


def bench_generate(args):
    """attn generate's loop as transformers' generate(use_cache=True) runs GPT-2, at its best: the prompt
    once, then each new token one position through the model (tests/torchgen's GPT2LMHeadModel's modules,
    transformers' eager math) with every layer's keys and values cached, the logits of the last position
    only; greedy; GPT-2-small-shaped random weights (N(0, 0.02), LayerNorms 1 and 0), 20 prompt tokens,
    32 new ones."""
    P = torchgen("pretrained")
    layers, heads, d, vocab, prompt_len, new = (2, 4, 64, 1000, 8, 4) if args.quick else (12, 12, 768, 50257, 20, 32)
    config = dict(P.GPT2_CONFIG, n_embd=d, n_head=heads, n_layer=layers, n_positions=1024, vocab_size=vocab)
    model = P.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".ln_" not in name and "ln_f" not in name:
                p.normal_(0.0, 0.02)
    tr, dk = model.transformer, d // heads
    prompt = torch.randint(0, vocab, (1, prompt_len))

    def forward(ids, past, start):
        h = tr.wte(ids) + tr.wpe(torch.arange(start, start + ids.size(1)))
        for i, block in enumerate(tr.h):
            a = block.attn
            q, k, v = a.c_attn(block.ln_1(h)).split(d, dim=2)
            q, k, v = a._split_heads(q), a._split_heads(k), a._split_heads(v)
            if past[i] is not None:
                k, v = torch.cat([past[i][0], k], dim=-2), torch.cat([past[i][1], v], dim=-2)
            past[i] = (k, v)
            w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dk)
            if ids.size(1) > 1:
                n = ids.size(1)
                w = w.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), torch.finfo(w.dtype).min)
            o = torch.matmul(torch.softmax(w, dim=-1), v).permute(0, 2, 1, 3).reshape(1, -1, d)
            h = h + a.c_proj(o)
            h = h + block.mlp(block.ln_2(h), "")
        return torch.nn.functional.linear(tr.ln_f(h[:, -1:]), tr.wte.weight)

    samples, extra = measure_greedy(forward, layers, prompt, new, args.budget)
    flops = sum(layers * (24 * d * d + 4 * (position + 1) * d) + (2 * d * vocab if position + 1 >= prompt_len else 0)
                for position in range(prompt_len + new - 1))
    params = {"layers": layers, "heads": heads, "d_model": d, "vocab": vocab, "prompt": prompt_len, "new_tokens": new}
    return [result("generate", params, samples, extra, flops, tokens_per_s=new / statistics.median(samples))]


def bench_attribute(args):
    """attn attribute's integrated gradients as Captum computes them at its best: the 50 Gauss-Legendre
    steps as one batch (internal_batch_size = n_steps) through a forward hook on the token embedding,
    autograd's input gradients alone (the weights frozen), the target's logit alone (ln_f's last row
    times its unembedding row, not the whole LM head), then F(input) and F(baseline) for the delta; the
    target is the top next token of a first forward. GPT-2-small-shaped random weights, 32 tokens."""
    P, R = torchgen("pretrained"), torchgen("attribution")
    layers, heads, d, vocab, seq, steps = (2, 4, 64, 1000, 8, 8) if args.quick else (12, 12, 768, 50257, 32, 50)
    config = dict(P.GPT2_CONFIG, n_embd=d, n_head=heads, n_layer=layers, n_positions=1024, vocab_size=vocab)
    model = P.GPT2LMHeadModel(config).eval().requires_grad_(False)
    for name, p in model.named_parameters():
        if ".ln_" not in name and "ln_f" not in name:
            p.normal_(0.0, 0.02)
    ids = torch.randint(0, vocab, (1, seq))
    tr = model.transformer

    def run():
        target = int(model(ids)[0, -1].argmax())
        unembed = model.unembedding()[target]

        def forward(embeds):
            hook = tr.wte.register_forward_hook(lambda m, a, out: embeds)
            try:
                return tr(ids.expand(embeds.shape[0], -1))[:, -1] @ unembed
            finally:
                hook.remove()
        with torch.enable_grad():
            return R.integrated_gradients(forward, tr.wte(ids), steps)
    samples, extra = measure(run, args.budget)
    rows = (steps + 2) * seq
    flops = 2 * layers * (rows * 24 * d * d + 4.0 * rows * seq * d)
    params = {"layers": layers, "heads": heads, "d_model": d, "vocab": vocab, "seq": seq, "steps": steps}
    return [result("attribute", params, samples, extra, flops)]


def llama(args):
    """attn bench's SmolLM2-135M-shaped Llama (tests/torchgen/decoder.py's modules, transformers' eager
    math) in float32, its weights N(0, 0.02) rounded to bfloat16 (the values a bfloat16 checkpoint holds),
    norms 1; with the params attn reports for both its weight types (PyTorch computes float32 either way)."""
    D = torchgen("decoder")
    layers, hidden, heads, kv, inter, vocab = (2, 64, 4, 2, 128, 1000) if args.quick else (30, 576, 9, 3, 1536, 49152)
    c = {"model_type": "llama", "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
         "num_key_value_heads": kv, "head_dim": hidden // heads, "intermediate_size": inter, "vocab_size": vocab,
         "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "tie_word_embeddings": True}
    model = D.LlamaForCausalLM(c).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.copy_(torch.randn_like(p).mul_(0.02).to(torch.bfloat16).float())
    params = [{"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv, "vocab": vocab, "weights": w}
              for w in ("bfloat16", "float32")]
    return D, c, model, params


def decoder_position_flops(c, context, logits):
    H, kv, I = c["hidden_size"], c["num_key_value_heads"] * c["head_dim"], c["intermediate_size"]
    return c["num_hidden_layers"] * (2 * H * (2 * H + 2 * kv) + 6 * H * I + 4 * context * H) + (2 * H * c["vocab_size"] if logits else 0)


def bench_decoder(args):
    """The Llama's forward on 128 tokens, every position's logits, as LlamaForCausalLM computes them."""
    D, c, model, params = llama(args)
    seq = 16 if args.quick else 128
    ids = torch.randint(0, c["vocab_size"], (1, seq))
    with torch.inference_mode():
        samples, extra = measure(lambda: model(ids), args.budget)
    flops = sum(decoder_position_flops(c, p + 1, True) for p in range(seq))
    return [result("decoder", dict(p, seq=seq), samples, extra, flops) for p in params]


def bench_decoder_generate(args):
    """attn generate's loop on the Llama as transformers' generate(use_cache=True) runs it at its best: the
    prompt once, then each new token one position through the modules with the key/value heads cached
    (repeat_kv at use), the last position's logits only; greedy; 16 prompt tokens, 64 new ones."""
    D, c, model, params = llama(args)
    prompt_len, new = (4, 4) if args.quick else (16, 64)
    inner, groups = model.model, c["num_attention_heads"] // c["num_key_value_heads"]
    prompt = torch.randint(0, c["vocab_size"], (1, prompt_len))

    def attend(a, h, cos, sin, past, i, start):
        B, S, _ = h.shape
        shape = (B, S, -1, c["head_dim"])
        q, k = a.q_proj(h).view(shape).transpose(1, 2), a.k_proj(h).view(shape).transpose(1, 2)
        v = a.v_proj(h).view(shape).transpose(1, 2)
        q, k = D.apply_rotary_pos_emb(q, k, cos, sin)
        if past[i] is not None:
            k, v = torch.cat([past[i][0], k], dim=-2), torch.cat([past[i][1], v], dim=-2)
        past[i] = (k, v)
        w = torch.matmul(q, D.repeat_kv(k, groups).transpose(2, 3)) * a.scaling
        if S > 1:
            w = w + D.causal_mask(S, None)
        o = torch.matmul(torch.softmax(w, dim=-1, dtype=torch.float32), D.repeat_kv(v, groups))
        return a.o_proj(o.transpose(1, 2).reshape(B, S, -1))

    def forward(ids, past, start):
        h = inner.embed_tokens(ids)
        cos, sin = inner.rotary_emb(torch.arange(start, start + ids.size(1))[None])
        for i, layer in enumerate(inner.layers):
            h = h + attend(layer.self_attn, layer.input_layernorm(h), cos, sin, past, i, start)
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return model.lm_head(inner.norm(h[:, -1:]))

    samples, extra = measure_greedy(forward, c["num_hidden_layers"], prompt, new, args.budget)
    flops = sum(decoder_position_flops(c, p + 1, p + 1 >= prompt_len) for p in range(prompt_len + new - 1))
    return [result("decoder-generate", dict(p, prompt=prompt_len, new_tokens=new), samples, extra, flops,
                   tokens_per_s=new / statistics.median(samples)) for p in params]


CASES = {"tutorial": bench_tutorial, "sdpa": bench_sdpa, "mha": bench_mha, "encoder": bench_encoder,
         "gemm": bench_gemm, "train": bench_train, "patch": bench_patch, "train-lm": bench_train_lm,
         "generate": bench_generate, "attribute": bench_attribute, "decoder": bench_decoder,
         "decoder-generate": bench_decoder_generate,
         "decoder-memory": lambda args: []}  # no peer: attn encode's peak memory is measured against the file's size


def blas_description():
    """Which BLAS (and OpenBLAS kernel) this process loaded, for the report."""
    try:
        from threadpoolctl import threadpool_info
        return ", ".join(f"{i['internal_api']} {i.get('architecture') or ''}".strip() for i in threadpool_info())
    except ImportError:
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("cases", nargs="*", help=", ".join(CASES))
    args = parser.parse_args()
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error("unknown case(s): " + ", ".join(unknown))
    args.budget = 0.05 if args.quick else 0.5
    torch.set_num_threads(args.threads)
    if threadpool_limits:
        threadpool_limits(args.threads)  # OpenBLAS's own pool, for this process
    torch.manual_seed(0)
    results = []
    with torch.no_grad():
        for name in args.cases or CASES:
            results += CASES[name](args)
    print(json.dumps({"torch": torch.__version__, "blas": blas_description(), "results": results}))


if __name__ == "__main__":
    main()
