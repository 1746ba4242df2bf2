"""pretrained/: tiny Hugging Face BERT and GPT-2 checkpoints in the real file layout, for core/model/pretrained.*.

`transformers` is not installed: BertModel and GPT2LMHeadModel are built here by hand in PyTorch under
transformers' own module names (so state_dict() gives the checkpoint names) and with its eager math:
  BERT: embeddings = LayerNorm((word + token_type) + position); scores = QK^T / sqrt(d) + extended mask,
      extended = (1 - attention_mask) * finfo(float32).min over the keys; erf GELU; post-LN; pooler =
      tanh(dense(hidden[:, 0])).
  GPT-2: Conv1D y = x @ W + b with W [in, out]; c_attn packs q, k, v along out; scores = QK^T / sqrt(d),
      then torch.where(causal, scores, finfo(float32).min); gelu_new; pre-LN; logits = ln_f @ wte^T.
Weights are random (seeded), LayerNorm weights and every bias too, so defaults cannot pass.
  bert_tiny/        config.json, model.safetensors (F32, BertModel names), vocab.txt, tokenizer_config.json,
                    special_tokens_map.json.
  bert_tiny_f16/, bert_tiny_bf16/: the same weights stored as F16 / BF16 (their stages are PyTorch's
                    from the weights converted back to float32).
  bert_prefixed/    the same weights as BertForSequenceClassification saves them: `bert.` before every
                    name, plus classifier.weight [2, H] and classifier.bias.
  gpt2_tiny/        config.json, model.safetensors (GPT2LMHeadModel names, lm_head tied to wte and not
                    stored), vocab.json, merges.txt (a byte-level BPE trained here on CORPUS),
                    tokenizer_config.json, special_tokens_map.json.
  gpt2_buffers/     the same weights as an old GPT2Model checkpoint: no `transformer.` prefix, and each
                    layer's attn.bias ([1, 1, n_positions, n_positions] lower-triangular ones, F32) and
                    attn.masked_bias (-1e4, 0-d) buffers.
  pretrained_stages.json: a list of cases, each {case, dir, input_ids, [token_type_ids, attention_mask,
                    text, tokens], stages: [{name, shape, data}, ...]} in the order PyTorch computed them.
"""
import importlib.util
import json
import math
import pathlib
import re

import torch
import torch.nn as nn
import torch.nn.functional as F


def _sibling(name):
    # By path, as gen_fixtures.load does: PyTorch ships a package named `torchgen`.
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", pathlib.Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_safetensors_file = _sibling("safetensors")._safetensors_file
stage = _sibling("transformer").stage

STAGES = {}  # name -> tensor, in the order computed


def rec(name, t):
    STAGES[name] = t.detach().clone()


# ------------------------------------------------------------------ BERT (transformers' modeling_bert.py)

BERT_CONFIG = {
    "architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1, "classifier_dropout": None,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 32, "initializer_range": 0.02,
    "intermediate_size": 64, "layer_norm_eps": 1e-12, "max_position_embeddings": 64, "model_type": "bert",
    "num_attention_heads": 4, "num_hidden_layers": 2, "pad_token_id": 0, "position_embedding_type": "absolute",
    "torch_dtype": "float32", "transformers_version": "4.40.0", "type_vocab_size": 2, "use_cache": True,
    "vocab_size": None,  # len(BERT_VOCAB)
}

BERT_VOCAB = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + list("!\"'(),-.:;?") + list("0123")
    + ("the a an is was it cat dog sat on mat hello world i you he she we they and not this that to of in "
       "with my good happy sad play run token attention model transform bert what how are be have do go new "
       "old big small time day").split()
    + "##s ##ing ##ed ##ly ##er ##ize ##izer ##able ##ness ##y ##re ##est ##a ##e ##i ##o ##t ##n".split()
    + "안녕 하 세요 나 는 학생 입니다 고양이 한국 사람 좋 아요 이 가 를 학교 오늘 집 책".split()
    + "##하 ##세요 ##는 ##입니다 ##이 ##가 ##어 ##요 ##아요 ##교 ##을 ##에".split()
    + ["中", "文"]
)
BERT_SPECIAL = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                "mask_token": "[MASK]"}
# strip_accents false: with do_lower_case alone BertTokenizer would NFD-split Hangul syllables into jamo.
BERT_TOKENIZER_CONFIG = {
    "clean_up_tokenization_spaces": True, "do_basic_tokenize": True, "do_lower_case": True,
    "model_max_length": 64, "never_split": None, "strip_accents": False, "tokenize_chinese_chars": True,
    "tokenizer_class": "BertTokenizer", **BERT_SPECIAL,
}

# Sentence pairs and their WordPiece tokens under BERT_VOCAB (lower-cased, accents kept); rows are padded
# on the right with [PAD], token type 0 and attention mask 0.
BERT_CASES = {
    "bert_tiny": [(("The cat sat.", "Playing sadly!"),
                   "[CLS] the cat sat . [SEP] play ##ing sad ##ly ! [SEP]"),
                  (("안녕하세요", "中文"), "[CLS] 안녕 ##하 ##세요 [SEP] 中 文 [SEP]")],
    "bert_tiny_f16": [(("나는 학생입니다", "고양이가 좋아요"),
                       "[CLS] 나 ##는 학생 ##입니다 [SEP] 고양이 ##가 좋 ##아요 [SEP]")],
    "bert_tiny_bf16": [(("Hello, world!", "Zebra?"), "[CLS] hello , world ! [SEP] [UNK] ? [SEP]")],
    "bert_prefixed": [(("We play with the dog.", None), "[CLS] we play with the dog . [SEP]")],
}


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, input_ids, token_type_ids):
        position_ids = torch.arange(input_ids.size(1))
        inputs_embeds = self.word_embeddings(input_ids); rec("embeddings.word_embeddings", inputs_embeds)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        rec("embeddings.token_type_embeddings", token_type_embeddings)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        rec("embeddings.position_embeddings", position_embeddings)
        embeddings = embeddings + position_embeddings
        embeddings = self.LayerNorm(embeddings); rec("embeddings", embeddings)
        return embeddings


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c["num_attention_heads"]
        self.attention_head_size = c["hidden_size"] // c["num_attention_heads"]
        self.query = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.key = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.value = nn.Linear(c["hidden_size"], c["hidden_size"])

    def transpose_for_scores(self, x):
        x = x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask, p):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        rec(p + "query", query_layer); rec(p + "key", key_layer); rec(p + "value", value_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        rec(p + "attention_scores", attention_scores)
        attention_probs = nn.functional.softmax(attention_scores, dim=-1); rec(p + "attention_probs", attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (hidden_states.size(-1),))
        rec(p + "context", context_layer)
        return context_layer


class BertSelfOutput(nn.Module):  # also BertOutput, from the intermediate size
    def __init__(self, c, in_features):
        super().__init__()
        self.dense = nn.Linear(in_features, c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, hidden_states, input_tensor, p):
        hidden_states = self.dense(hidden_states); rec(p + "dense", hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor); rec(p[:-1], hidden_states)
        return hidden_states


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c, c["hidden_size"])

    def forward(self, hidden_states, attention_mask, p):
        context = self.self(hidden_states, attention_mask, p + "self.")
        return self.output(context, hidden_states, p + "output.")


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, hidden_states, p):
        hidden_states = F.gelu(self.dense(hidden_states)); rec(p[:-1], hidden_states)  # "gelu": erf GELU
        return hidden_states


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertSelfOutput(c, c["intermediate_size"])

    def forward(self, hidden_states, attention_mask, p):
        attention_output = self.attention(hidden_states, attention_mask, p + "attention.")
        intermediate_output = self.intermediate(attention_output, p + "intermediate.")
        return self.output(intermediate_output, attention_output, p + "output.")


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, hidden_states, attention_mask):
        for i, layer in enumerate(self.layer):
            hidden_states = layer(hidden_states, attention_mask, f"encoder.layer.{i}.")
        return hidden_states


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, hidden_states):
        return torch.tanh(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)

    def forward(self, input_ids, token_type_ids, attention_mask):
        rec("input_ids", input_ids); rec("token_type_ids", token_type_ids); rec("attention_mask", attention_mask)
        # get_extended_attention_mask: [B, 1, 1, S], 0 where attended, finfo.min where masked.
        extended = attention_mask[:, None, None, :].to(torch.float32)
        extended = (1.0 - extended) * torch.finfo(torch.float32).min
        hidden = self.encoder(self.embeddings(input_ids, token_type_ids), extended)
        rec("last_hidden_state", hidden)
        pooled = self.pooler(hidden); rec("pooler_output", pooled)
        return hidden, pooled


class BertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, input_ids, token_type_ids, attention_mask):
        return self.classifier(self.bert(input_ids, token_type_ids, attention_mask)[1])


# ------------------------------------------------------------------ GPT-2 (transformers' modeling_gpt2.py)

GPT2_CONFIG = {
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
    "bos_token_id": None, "embd_pdrop": 0.1, "eos_token_id": None, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 64, "n_embd": 32, "n_head": 4, "n_inner": None,
    "n_layer": 2, "n_positions": 64, "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
    "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True, "summary_activation": None,
    "summary_first_dropout": 0.1, "summary_proj_to_labels": True, "summary_type": "cls_index",
    "summary_use_proj": True, "torch_dtype": "float32", "transformers_version": "4.40.0", "use_cache": True,
    "vocab_size": None,  # len(vocab)
}
ENDOFTEXT = "<|endoftext|>"
GPT2_SPECIAL = {"bos_token": ENDOFTEXT, "eos_token": ENDOFTEXT, "unk_token": ENDOFTEXT}
GPT2_TOKENIZER_CONFIG = {"add_bos_token": False, "add_prefix_space": False, "clean_up_tokenization_spaces": True,
                         "errors": "replace", "model_max_length": 64, "pad_token": None,
                         "tokenizer_class": "GPT2Tokenizer", **GPT2_SPECIAL}
MERGES = 60
CORPUS = ("the cat sat on the mat. the dog sat with the cat. then the cat and the dog ran there. "
          "hello world, hello there! 안녕하세요 세상. 안녕하세요, 고양이가 좋아요. 안녕 고양이. 고양이가 세상을 좋아요.")
GPT2_CASES = {"gpt2_tiny": ["the dog sat with 고양이!", "안녕하세요 the dog"], "gpt2_buffers": ["hello there, dog!"]}


def bytes_to_unicode():
    """GPT-2's table: printable bytes stand for themselves, the other 68 for chr(256 + n) in byte order.
    The dict's order (printable first) is the order of the vocabulary's first 256 ids."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


# GPT-2's pre-tokenizer, with Python re's classes for \p{L} and \p{N} (the `regex` module is not installed).
PRETOKEN = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def _symbols(word):
    table = bytes_to_unicode()
    return [table[b] for b in word.encode("utf-8")]


def train_bpe(corpus, merges):
    """Greedy BPE: merge the most frequent adjacent pair (ties: the smallest pair), never one whose result
    is already a token."""
    words = {}
    for w in PRETOKEN.findall(corpus):
        words[w] = words.get(w, 0) + 1
    seqs = [(_symbols(w), n) for w, n in words.items()]
    vocab = list(bytes_to_unicode().values())
    known, ranks = set(vocab), []
    for _ in range(merges):
        counts = {}
        for s, n in seqs:
            for pair in zip(s, s[1:]):
                if pair[0] + pair[1] not in known:
                    counts[pair] = counts.get(pair, 0) + n
        best = min(counts, key=lambda pair: (-counts[pair], pair))
        ranks.append(best)
        vocab.append(best[0] + best[1])
        known.add(vocab[-1])
        seqs = [(_merge(s, best), n) for s, n in seqs]
    return {t: i for i, t in enumerate(vocab + [ENDOFTEXT])}, ranks


def _merge(s, pair):
    out, i = [], 0
    while i < len(s):
        if i + 1 < len(s) and (s[i], s[i + 1]) == pair:
            out.append(s[i] + s[i + 1])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return out


def bpe_encode(text, ranks):
    """GPT-2's encode: per pre-token, merge the lowest-ranked adjacent pair until none is in the merges."""
    rank = {pair: r for r, pair in enumerate(ranks)}
    tokens = []
    for w in PRETOKEN.findall(text):
        s = _symbols(w)
        while len(s) > 1:
            pair = min(zip(s, s[1:]), key=lambda p: rank.get(p, len(rank)))
            if pair not in rank:
                break
            s = _merge(s, pair)
        tokens += s
    return tokens


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        # transformers writes x.view(-1, x.size(-1)), which cannot reshape an MLP of n_inner 0 (no
        # elements); flatten is the same reshape otherwise and keeps that width (addmm then adds the bias).
        size_out = x.size()[:-1] + (self.weight.size(-1),)
        return torch.addmm(self.bias, x.flatten(0, -2), self.weight).view(size_out)


class GPT2Attention(nn.Module):
    def __init__(self, c, old_buffers):
        super().__init__()
        n = c["n_positions"]
        causal = torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n)
        # Old checkpoints hold these buffers (as float32); today's transformers do not save them.
        self.register_buffer("bias", causal.float() if old_buffers else causal, persistent=old_buffers)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=old_buffers)
        self.num_heads, self.head_dim = c["n_head"], c["n_embd"] // c["n_head"]
        self.c_attn = Conv1D(3 * c["n_embd"], c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], c["n_embd"])

    def _split_heads(self, t):
        return t.view(t.size()[:-1] + (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)

    def forward(self, hidden_states, p):
        query, key, value = self.c_attn(hidden_states).split(hidden_states.size(-1), dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        rec(p + "query", query); rec(p + "key", key); rec(p + "value", value)
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        q_len, k_len = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, k_len - q_len:k_len, :k_len].bool()
        mask_value = torch.full([], torch.finfo(attn_weights.dtype).min, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value); rec(p + "scores", attn_weights)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1); rec(p + "attn_weights", attn_weights)
        attn_output = torch.matmul(attn_weights, value).permute(0, 2, 1, 3).contiguous()
        attn_output = attn_output.view(attn_output.size()[:-2] + (hidden_states.size(-1),))
        rec(p + "merged", attn_output)
        attn_output = self.c_proj(attn_output); rec(p + "c_proj", attn_output)
        return attn_output


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        inner = c["n_inner"] if c["n_inner"] is not None else 4 * c["n_embd"]  # 0: the MLP adds c_proj.bias
        self.c_fc = Conv1D(inner, c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], inner)

    def forward(self, hidden_states, p):
        hidden_states = self.c_fc(hidden_states); rec(p + "c_fc", hidden_states)
        hidden_states = gelu_new(hidden_states); rec(p + "act", hidden_states)
        hidden_states = self.c_proj(hidden_states); rec(p + "c_proj", hidden_states)
        return hidden_states


class GPT2Block(nn.Module):
    def __init__(self, c, old_buffers):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.attn = GPT2Attention(c, old_buffers)
        self.ln_2 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.mlp = GPT2MLP(c)

    def forward(self, hidden_states, p):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states); rec(p + "ln_1", hidden_states)
        hidden_states = self.attn(hidden_states, p + "attn.") + residual; rec(p + "residual", hidden_states)
        residual = hidden_states
        hidden_states = self.ln_2(hidden_states); rec(p + "ln_2", hidden_states)
        hidden_states = residual + self.mlp(hidden_states, p + "mlp."); rec(p[:-1], hidden_states)
        return hidden_states


class GPT2Model(nn.Module):
    def __init__(self, c, old_buffers=False):
        super().__init__()
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.h = nn.ModuleList([GPT2Block(c, old_buffers) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])

    def forward(self, input_ids):
        rec("input_ids", input_ids)
        inputs_embeds = self.wte(input_ids); rec("wte", inputs_embeds)
        position_embeds = self.wpe(torch.arange(input_ids.size(-1))); rec("wpe", position_embeds)
        hidden_states = inputs_embeds + position_embeds; rec("embeddings", hidden_states)
        for i, block in enumerate(self.h):
            hidden_states = block(hidden_states, f"h.{i}.")
        hidden_states = self.ln_f(hidden_states); rec("ln_f", hidden_states)
        return hidden_states


class GPT2LMHeadModel(nn.Module):
    """lm_head is tied to transformer.wte and save_pretrained leaves it out: here it is no module at all,
    unless tie_word_embeddings is false (then lm_head.weight is the model's own)."""
    def __init__(self, c, old_buffers=False):
        super().__init__()
        self.transformer = GPT2Model(c, old_buffers)
        if not c.get("tie_word_embeddings", True):
            self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)

    def unembedding(self):
        return self.lm_head.weight if hasattr(self, "lm_head") else self.transformer.wte.weight

    def forward(self, input_ids):
        logits = F.linear(self.transformer(input_ids), self.unembedding()); rec("logits", logits)
        rec("next_token_probs", nn.functional.softmax(logits[:, -1], dim=-1))
        return logits


# ------------------------------------------------------------------ weights, files, cases

def randomize(model, seed):
    """Every parameter random, in registration order: weights and embeddings N(0, 0.2), ten times the std
    transformers initialises them with, so that attention is far from uniform and GELU far from linear
    (at 0.02 erf GELU and gelu_new agree to 1e-5); biases 0.1 N(0, 1); LayerNorm weights 1 + 0.1 N(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if re.search(r"(LayerNorm|ln_\w+)\.weight$", name):
                p.copy_(1 + 0.1 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            else:
                p.copy_(0.2 * noise)
    return model.eval()


def _json(path, obj):
    # As transformers' save_pretrained writes config.json and tokenizer files.
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def _checkpoint(out, state_dict, dtype=torch.float32):
    """model.safetensors as safetensors' save_file writes it: format metadata, tensors sorted by name."""
    tensors = {k: (v.to(dtype) if v.is_floating_point() else v).contiguous()
               for k, v in sorted(state_dict.items())}
    (out / "model.safetensors").write_bytes(_safetensors_file(tensors, {"format": "pt"}))
    # What a loader reads, as float32 (integer buffers are not weights).
    return {k: v.float() for k, v in tensors.items() if v.is_floating_point()}


def _run(model, *inputs):
    STAGES.clear()
    with torch.no_grad():
        model(*inputs)
    return [stage(name, t) for name, t in STAGES.items()]


def bert_inputs(rows, vocab):
    ids = {t: i for i, t in enumerate(vocab)}
    token_rows = [tokens.split() for _, tokens in rows]
    S = max(map(len, token_rows))
    input_ids, types, mask = [], [], []
    for tokens in token_rows:
        first_sep = tokens.index("[SEP]")
        pad = S - len(tokens)
        input_ids.append([ids[t] for t in tokens] + [ids["[PAD]"]] * pad)
        types.append([0] * (first_sep + 1) + [1] * (len(tokens) - first_sep - 1) + [0] * pad)
        mask.append([1] * len(tokens) + [0] * pad)
    return {"text": [list(text) for text, _ in rows], "tokens": token_rows,
            "input_ids": input_ids, "token_type_ids": types, "attention_mask": mask}


def write_bert(root):
    cfg = dict(BERT_CONFIG, vocab_size=len(BERT_VOCAB))
    model = randomize(BertModel(cfg), seed=1)
    weights = {}
    variants = {"bert_tiny": ({}, torch.float32), "bert_tiny_f16": ({"torch_dtype": "float16"}, torch.float16),
                "bert_tiny_bf16": ({"torch_dtype": "bfloat16"}, torch.bfloat16),
                "bert_prefixed": ({"architectures": ["BertForSequenceClassification"],
                                   "id2label": {"0": "LABEL_0", "1": "LABEL_1"},
                                   "label2id": {"LABEL_0": 0, "LABEL_1": 1}}, torch.float32)}
    for name, (changes, dtype) in variants.items():
        out = root / name
        out.mkdir(parents=True, exist_ok=True)
        _json(out / "config.json", dict(cfg, **changes))
        (out / "vocab.txt").write_text("".join(t + "\n" for t in BERT_VOCAB), encoding="utf-8")
        _json(out / "tokenizer_config.json", BERT_TOKENIZER_CONFIG)
        _json(out / "special_tokens_map.json", BERT_SPECIAL)
        state = model.state_dict()
        if name == "bert_prefixed":
            head = randomize(nn.Linear(cfg["hidden_size"], 2), seed=2)
            # As transformers before 4.31 saved it: the position_ids buffer (I64) beside the weights.
            state = {**{"bert." + k: v for k, v in state.items()},
                     "bert.embeddings.position_ids": torch.arange(cfg["max_position_embeddings"]).unsqueeze(0),
                     "classifier.weight": head.weight.detach(), "classifier.bias": head.bias.detach()}
        weights[name] = _checkpoint(out, state, dtype)
    cases = []
    for name, rows in BERT_CASES.items():
        inputs = bert_inputs(rows, BERT_VOCAB)
        x = [torch.tensor(inputs[k]) for k in ("input_ids", "token_type_ids", "attention_mask")]
        case = {"case": name, "dir": name, **inputs}
        if name == "bert_prefixed":
            task = BertForSequenceClassification(dict(cfg, id2label={0: "LABEL_0", 1: "LABEL_1"})).eval()
            task.load_state_dict(weights[name])
            case["stages"] = _run(task, *x)
            with torch.no_grad():
                case["classifier_logits"] = stage("logits", task(*x))  # not a trace stage: the head is ignored
        else:
            loaded = BertModel(cfg).eval()
            loaded.load_state_dict(weights[name])
            case["stages"] = _run(loaded, *x)
        cases.append(case)
    return cases


def write_gpt2(root):
    vocab, ranks = train_bpe(CORPUS, MERGES)
    cfg = dict(GPT2_CONFIG, vocab_size=len(vocab), bos_token_id=vocab[ENDOFTEXT], eos_token_id=vocab[ENDOFTEXT])
    model = randomize(GPT2LMHeadModel(cfg), seed=3)
    old = GPT2LMHeadModel(cfg, old_buffers=True).eval()
    missing = old.load_state_dict(model.state_dict(), strict=False).missing_keys
    assert all(k.endswith((".attn.bias", ".attn.masked_bias")) for k in missing), missing
    models = {"gpt2_tiny": model, "gpt2_buffers": old}
    # An old GPT2Model checkpoint: the bare model's names, buffers included.
    variants = {"gpt2_tiny": ({}, model.state_dict()),
                "gpt2_buffers": ({"architectures": ["GPT2Model"]}, old.transformer.state_dict())}
    for name, (changes, state) in variants.items():
        out = root / name
        out.mkdir(parents=True, exist_ok=True)
        _json(out / "config.json", dict(cfg, **changes))
        _json(out / "vocab.json", vocab)
        (out / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in ranks), encoding="utf-8")
        _json(out / "tokenizer_config.json", GPT2_TOKENIZER_CONFIG)
        _json(out / "special_tokens_map.json", GPT2_SPECIAL)
        _checkpoint(out, state)
    cases = []
    for name, texts in GPT2_CASES.items():
        tokens = [bpe_encode(t, ranks) for t in texts]
        assert len({len(t) for t in tokens}) == 1, f"{name}: rows must have equal lengths (no padding): {tokens}"
        input_ids = [[vocab[t] for t in row] for row in tokens]
        cases.append({"case": name, "dir": name, "text": texts, "tokens": tokens, "input_ids": input_ids,
                      "stages": _run(models[name], torch.tensor(input_ids))})
    return cases


def generate(out_dir):
    root = out_dir / "pretrained"
    root.mkdir(parents=True, exist_ok=True)
    cases = write_bert(root) + write_gpt2(root)
    (root / "pretrained_stages.json").write_text(json.dumps(cases, separators=(",", ":"), ensure_ascii=False,
                                                            allow_nan=False) + "\n", encoding="utf-8")
