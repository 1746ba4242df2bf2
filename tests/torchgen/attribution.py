"""The attribution methods of `attn attribute`, computed independently in PyTorch (Debian's python3-torch)
on the modules of tests/torchgen, as their reference implementations define them:

  integrated_gradients  Captum's IntegratedGradients (method="gausslegendre": numpy's leggauss nodes
                        mapped to alphas 0.5 (x + 1), weights 0.5 w), a zero baseline, gradients by
                        autograd, attributions summed over the embedding dimension; the convergence delta
  gradient_x_input      Captum's InputXGradient: x * dF/dx, summed over the embedding dimension
  rollout, flow         Abnar & Zuidema's attention_graph_util.py: heads averaged, the residual added as
                        identity, rows normalised; rollout their product, flow networkx's maximum flow
                        through the layer graph, each output's flows normalised to sum to 1
  logit_attribution     TransformerLens's decompose_resid / stack_head_results with apply_ln: each
                        component centred and divided by ln_final's cached scale, read along
                        ln_f.weight * W_U[:, target] (the folded unembedding)

`forward(embeds)` runs the model with its token embeddings replaced (a forward hook on the embedding
module, as Captum's LayerIntegratedGradients attributes to that layer) and returns F, the target's
logit, per row.
"""
import networkx as nx
import numpy as np
import torch


def integrated_gradients(forward, x, steps, baseline=None):
    """x [1, S, H]: the input's token embeddings; baseline the same shape (Captum's `baselines`), zeros when
    None. Returns (scores [S], F(x), F(baseline), delta)."""
    b = torch.zeros_like(x) if baseline is None else baseline
    nodes, w = np.polynomial.legendre.leggauss(steps)
    alphas, weights = 0.5 * (nodes + 1), 0.5 * w
    scaled = torch.cat([b + float(a) * (x - b) for a in alphas]).requires_grad_()
    grads, = torch.autograd.grad(torch.unbind(forward(scaled)), scaled)
    total = (grads.reshape(steps, -1) * torch.tensor(weights).float().view(steps, 1)).sum(0).view_as(x)
    scores = (total * (x - b)).sum(-1)[0].double()
    with torch.no_grad():
        at_input, at_baseline = float(forward(x)[0]), float(forward(b)[0])
    return scores, at_input, at_baseline, float(scores.sum()) - (at_input - at_baseline)


def gradient_x_input(forward, x):
    x = x.clone().requires_grad_()
    grad, = torch.autograd.grad(forward(x).sum(), x)
    return (x * grad).sum(-1)[0].double()


def residual_attention(weights):
    """[L, n, S, S] attention weights → [L, S, S]: heads averaged, + I, rows normalised."""
    a = weights.double().mean(dim=1).numpy()
    a = a + np.eye(a.shape[-1])[None]
    return a / a.sum(axis=-1, keepdims=True)


def rollout(weights):
    a = residual_attention(weights)
    joint = a[0]
    for layer in a[1:]:
        joint = layer @ joint
    return joint


def flow(weights, outputs):
    """Each output position's maximum flows from the input tokens, normalised; [len(outputs), S]."""
    a = residual_attention(weights)
    L, S = a.shape[0], a.shape[1]
    graph = nx.DiGraph()
    for l in range(L):
        for i in range(S):
            for j in range(S):
                if a[l, i, j] > 0:
                    graph.add_edge((l, j), (l + 1, i), capacity=float(a[l, i, j]))
    rows = []
    for o in outputs:
        values = np.array([nx.maximum_flow_value(graph, (0, j), (L, o)) if (0, j) in graph else 0.0 for j in range(S)])
        rows.append(values / values.sum())
    return np.array(rows)


def logit_attribution(model, stages, target, position):
    """GPT-2 (tests/torchgen/pretrained.py's GPT2LMHeadModel) and its recorded stages: the components'
    names and direct contributions, in attn's order."""
    t = model.transformer
    H, L = t.wte.weight.shape[1], len(t.h)
    n = t.h[0].attn.num_heads
    dk = H // n
    d = lambda name: stages[name][0, position].double() if stages[name].dim() == 3 else stages[name][position].double()
    resid = d(f"h.{L - 1}" if L else "embeddings")
    scale = torch.sqrt(resid.var(unbiased=False) + t.ln_f.eps)  # ln_final.hook_scale
    direction = (t.ln_f.weight.double() * t.wte.weight[target].double()).detach()
    apply_ln = lambda v: float(((v - v.mean()) / scale) @ direction)
    names, values = ["embed", "pos_embed"], [apply_ln(d("wte")), apply_ln(d("wpe"))]
    for l, block in enumerate(t.h):
        z, w_o = d(f"h.{l}.attn.merged"), block.attn.c_proj.weight.double().detach()  # Conv1D: [in, out]
        for h in range(n):
            cols = slice(h * dk, (h + 1) * dk)
            names.append(f"L{l}H{h}")
            values.append(apply_ln(z[cols] @ w_o[cols]))
        names += [f"L{l}.attn_bias", f"L{l}.mlp_out"]
        values += [apply_ln(block.attn.c_proj.bias.double().detach()), apply_ln(d(f"h.{l}.mlp.c_proj"))]
    names.append("ln_f.bias")
    values.append(float(t.ln_f.bias.double() @ t.wte.weight[target].double()))
    return names, values


def decoder_logit_attribution(model, c, stages, target, position):
    """A Llama-family model of tests/torchgen/decoder.py and its recorded stages (not Gemma: its branch
    norms are not additive): embed, each head through o_proj's columns, o_proj's bias, each MLP's output,
    model.norm's bias (LayerNorm); apply_ln with the cached scale, centred for LayerNorm only (TransformerLens's
    RMS apply_ln divides without centring)."""
    neox = hasattr(model, "gpt_neox")
    base = model.gpt_neox if neox else model.model
    final = base.final_layer_norm if neox else base.norm
    unembed = (model.embed_out if neox else model.lm_head).weight[target].double().detach()
    L, n, dk = c["num_hidden_layers"], c["num_attention_heads"], c["head_dim"]
    d = lambda name: stages[name][0, position].double()
    resid = d(f"model.layers.{L - 1}")
    centre = isinstance(final, torch.nn.LayerNorm)
    eps = final.eps if centre else final.variance_epsilon
    scale = torch.sqrt((resid - resid.mean() if centre else resid).pow(2).mean() + eps)
    direction = final.weight.double().detach() * unembed
    apply_ln = lambda v: float(((v - v.mean()) if centre else v) / scale @ direction)
    names, values = ["embed"], [apply_ln(d("model.embed_tokens"))]
    for l, layer in enumerate(base.layers):
        attention = layer.attention if neox else layer.self_attn
        o_proj = attention.dense if neox else attention.o_proj
        z, w_o = d(f"model.layers.{l}.self_attn.merged"), o_proj.weight.double().detach()  # [H, n·dk]
        for h in range(n):
            cols = slice(h * dk, (h + 1) * dk)
            names.append(f"L{l}H{h}")
            values.append(apply_ln(w_o[:, cols] @ z[cols]))
        if o_proj.bias is not None:
            names.append(f"L{l}.attn_bias")
            values.append(apply_ln(o_proj.bias.double().detach()))
        names.append(f"L{l}.mlp_out")
        values.append(apply_ln(d(f"model.layers.{l}.mlp.down_proj")))
    if centre:
        names.append("norm.bias")
        values.append(float(final.bias.double().detach() @ unembed))
    return names, values
