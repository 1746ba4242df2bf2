"""attnlab: transformer attention computed step by step, with PyTorch's numbers, from Python.

The same C++ engine as the `attn` command line and the playground. Every function takes the options of
the `attn` subcommand of the same name as keywords (`d_model=8` is `--d-model 8`), with the CLI's
defaults, checks and messages: bad input is a ValueError carrying the CLI's message, a wrong type a
TypeError. docs/python.md is the reference.

    import attnlab
    trace = attnlab.tutorial()                    # the first tutorial, seed 0
    trace["attention_weights"]                    # a NumPy array, [4, 4, 4]
    model = attnlab.load("path/to/gpt2")          # a Hugging Face BERT or GPT-2 folder
    model(["The cat sat on the"])["h.0.attn.attn_weights"]
"""
import atexit
import json
import math
import os
import shutil
import tempfile

from . import _attnlab
from ._arguments import argv as _argv
from . import _playground

__all__ = ["Trace", "Model", "TrainResult", "tutorial", "encode", "load", "train", "heads", "patch", "attribute", "generate",
           "diff", "batch", "show", "help"]

_SENTENCES = {"sentences": "sentence"}


# --- traces ---

class Trace:
    """What a run computed: its stages by name, in order, each a NumPy array.

    `trace["attention_weights"]` is a read-only view of the engine's float32 tensor (no copy; it keeps
    the trace alive); stages holding token ids or masks come as int64 or bool copies. `to_json()` is the
    CLI's `--json` document, `text()` its printed report.
    """

    def __init__(self, native, command, options):
        self._native = native
        self._command = command
        self._options = options

    @property
    def stages(self):
        """The stage names, in the order the pipeline computed them."""
        return self._native.stages

    @property
    def tokens(self):
        """Each item's tokens, as the tokenizer split them (with the padding)."""
        return self._native.tokens

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"a stage is named by a string, not {type(name).__name__}")
        return self._native.array(name)

    def __contains__(self, name):
        return isinstance(name, str) and name in self._native.stages

    def __iter__(self):
        return iter(self._native.stages)

    def __len__(self):
        return len(self._native.stages)

    def keys(self):
        return list(self._native.stages)

    def items(self):
        return [(name, self[name]) for name in self._native.stages]

    def to_json(self):
        """The CLI's --json document of the same run (`attn ... --json`, without its final newline)."""
        return self._native.to_json()

    def text(self):
        """The CLI's printed report of the same run (PyTorch's print() of every stage)."""
        return self._native.text()

    def __repr__(self):
        shape = lambda name: "[" + ", ".join(map(str, self._native.shape(name))) + "]"
        weights = [name for name in self.stages if name.endswith(("attention_weights", "attn_weights", "attention_probs"))]
        shown = f"; {weights[0]} {shape(weights[0])}" if weights else ""
        return (f"<attnlab.Trace of attn {self._command}: {len(self)} stages, {len(self.tokens)} items{shown}; "
                f"trace.stages lists them>")

    def _repr_html_(self):
        return _trace_html(self, None)


def _trace(command, options, renames=_SENTENCES, checkpoint=None):
    _, text, native = _attnlab.run(_argv(command, options, renames), checkpoint)
    if native is None:  # the second tutorial prints its own document
        return json.loads(text)
    return Trace(native, command, options)


def tutorial(sentences=None, seed=0, d_model=6, mask="padding", **options):
    """The first tutorial's single-head attention (`attn tutorial`), stage by stage: a Trace.

    sentences: a list of strings (default: the tutorial's four). Other keywords: attn tutorial's
    options (max_len, ablate="0.0", ablation="mean", plot=..., svg=...). part=2 runs the second
    tutorial's script and returns its JSON document as a dict.
    """
    return _trace("tutorial", _tutorial_options(sentences, seed, d_model, mask, options))


def _tutorial_options(sentences, seed, d_model, mask, options):
    # d_model and mask at their defaults are left to the CLI: --part 2 refuses them.
    options = dict(sentences=_sentence_list(sentences), seed=seed, d_model=None if d_model == 6 else d_model,
                   mask=None if mask == "padding" else mask, **_heads_option(options))
    if options.get("part") in (2, "2"):
        options["json"] = True
    return options


def _tutorial_argv(sentences=None, *, seed=0, d_model=6, mask="padding", **options):
    """The arguments tutorial() runs (for the tests)."""
    return _argv("tutorial", _tutorial_options(sentences, seed, d_model, mask, options), _SENTENCES)


def encode(sentences=None, **options):
    """The second tutorial's Transformer classifier, or a BERT / GPT-2 checkpoint (`attn encode`): a Trace.

    sentences: a list of strings (default: the first tutorial's four); ids=[[1, 2, 3], ...] gives token
    ids instead. Keywords: attn encode's options (seed, d_model, num_heads, num_layers, mask, weights,
    config, vocab, model_dir, ablate, ablate_mlp, ablation, logit_lens, backend, ...).
    """
    return _trace("encode", dict(sentences=_sentence_list(sentences), **_heads_option(options)))


def _sentence_list(sentences):
    if isinstance(sentences, str):
        return [sentences]
    return sentences


def _heads_option(options):
    # ablate=[(layer, head), ...] as the CLI's "L.H,L.H".
    heads = options.get("ablate")
    if isinstance(heads, (list, tuple)) and heads and all(isinstance(h, (list, tuple)) for h in heads):
        if any(len(h) != 2 for h in heads):
            raise ValueError("ablate: each head is a (layer, head) pair")
        options = dict(options, ablate=",".join(f"{int(l)}.{int(h)}" for l, h in heads))
    return options


# --- models ---

class Model:
    """A model loaded once: the tutorial's classifier from files, a BERT / GPT-2 checkpoint, or a decoder
    of the Llama family (Llama, Mistral, Qwen2, Qwen3; docs/decoders.md).

    `model(sentences)` runs it (a Trace, as attn encode with the model's files); `state_dict()` gives
    its tensors under PyTorch's names; `generate`, `heads` and `patch` run the other commands on it.
    """

    def __init__(self, options):
        self._options = options
        self._checkpoint = _attnlab.Checkpoint()
        # Loaded now, so a bad file fails at load(); a checkpoint stays loaded for the next calls.
        _attnlab.load(_argv("encode", options), self._checkpoint)

    def __call__(self, sentences=None, **options):
        """The sentences through the model (attn encode's options as keywords): a Trace."""
        options = dict(self._options, sentences=_sentence_list(sentences), **_heads_option(options))
        return _trace("encode", options, checkpoint=self._checkpoint)

    def state_dict(self):
        """Every tensor under the name PyTorch gives it (NumPy float32 copies), in the modules' order:
        `model.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=True)` takes it
        (the classifier: TransformerClassifier with its `pos_encoding.pe` buffer; BERT: BertModel;
        GPT-2: GPT2LMHeadModel without the tied lm_head; a decoder: its *ForCausalLM, a tied lm_head
        left out)."""
        return _attnlab.state_dict(_argv("encode", self._options), self._checkpoint)

    def generate(self, prompt=None, **options):
        """GPT-2 or a decoder continues `prompt` (attn generate): its --json document as a dict."""
        return generate(prompt, **self._options, **options)

    def heads(self, **options):
        """Every head scored by the head detectors (attn heads): its --json document as a dict."""
        return heads(**self._options, **options)

    def patch(self, clean, corrupted, **options):
        """Activation patching from `clean` into `corrupted` (attn patch): its --json document."""
        return patch(clean=clean, corrupted=corrupted, **self._options, **options)

    def attribute(self, sentence, method, **options):
        """`sentence`'s tokens (or the heads and MLPs) attributed by `method` (attn attribute): its --json document."""
        return attribute(sentence=sentence, method=method, **self._options, **options)

    def __repr__(self):
        files = ", ".join(f"{k}={v!r}" for k, v in self._options.items() if v is not None)
        return f"<attnlab.Model ({files})>"

    def _repr_html_(self):
        return _trace_html(self(), None)


def load(name=None, *, model_dir=None, model=None, weights=None, config=None, vocab=None, merges=None, **options):
    """A model from files: by name (`name` or `model`: a folder, else a Hub repository id such as
    "openai-community/gpt2", "@revision" optional, downloaded into the Hub's cache as attn's --model
    does: `load("HuggingFaceTB/SmolLM2-135M")`), a Hugging Face BERT, GPT-2 or Llama-family folder
    (`model_dir`), or the files one at a time (weights=model.safetensors,
    config=config.json, vocab=vocab.txt / vocab.json, merges=merges.txt), or the tutorial's classifier
    as attn train saves it (weights, config, vocab). Other keywords: attn encode's model options (mask,
    seed). Bad files raise ValueError naming the problem."""
    if name is not None and model is not None:
        raise ValueError("load: give the model's name once (as the first argument or model=)")
    model = model if name is None else name
    files = dict(model_dir=model_dir, model=model, weights=weights, config=config, vocab=vocab, merges=merges)
    if all(v is None for v in files.values()):
        raise ValueError("load: give a name (a folder or a Hub repository id) or model_dir, or weights (with config and vocab)")
    return Model({k: (os.fspath(v) if isinstance(v, os.PathLike) else v) for k, v in files.items()} | options)


# --- training ---

class TrainResult:
    """A finished run: `log` (every record attn train --log writes: steps, evaluations), `model` (the
    trained model, a Model), and `files` (the folder holding its saved files)."""

    def __init__(self, log, model, files):
        self.log, self.model, self.files = log, model, files

    @property
    def steps(self):
        return [r for r in self.log if "loss" in r and "val_loss" not in r]

    def __repr__(self):
        last = self.steps[-1] if self.steps else {}
        return (f"<attnlab.TrainResult: {len(self.steps)} steps, last loss {last.get('loss')}; "
                f".log, .model, .files>")


_runs = []  # the folders of this session's trained models, removed at exit
atexit.register(lambda: [shutil.rmtree(d, ignore_errors=True) for d in _runs])


def train(progress=None, **options):
    """Trains as `attn train` does (its options as keywords: task, data, steps, lr, ...), bit for bit.

    progress: called with each log record (a dict) as it is written. Ctrl-C (KeyboardInterrupt) stops
    the run after the current step, as attn train stops (with checkpoint=DIR the checkpoint is written
    and resume=True continues it), and is raised. Returns a TrainResult (log, model).
    """
    for key in ("save_weights", "save_config", "save_vocab", "save_merges", "save_model_dir", "quiet"):
        if key in options:
            raise ValueError(f"train: {key} is set by attnlab.train (the model comes back as .model; "
                             f"model.state_dict() or attn train save files)")
    base = _argv("train", options)
    files = tempfile.mkdtemp(prefix="attnlab-train-")
    _runs.append(files)
    lm = _attnlab.trains_language_model(base)
    saves = ({"save_model_dir": os.path.join(files, "model")} if lm else
             {"save_weights": os.path.join(files, "model.safetensors"), "save_config": os.path.join(files, "config.json"),
              "save_vocab": os.path.join(files, "vocab.json")})
    log = []

    def on_record(text):
        record = json.loads(text)
        log.append(record)
        if progress is not None:
            progress(record)

    _attnlab.train(base + _argv("train", dict(saves, quiet=True))[1:], on_record)
    model = (load(saves["save_model_dir"]) if lm else
             load(weights=saves["save_weights"], config=saves["save_config"], vocab=saves["save_vocab"],
                  mask=options.get("mask")))
    return TrainResult(log, model, files)


# --- the other commands ---

def _document(command, options, renames=None):
    _, text, _ = _attnlab.run(_argv(command, dict(options, json=True), renames))
    return json.loads(text)


def heads(**options):
    """Every head scored as a previous-token, duplicate-token or induction head (attn heads): a dict."""
    return _document("heads", options, _SENTENCES)


def patch(**options):
    """Activation patching from a clean into a corrupted input (attn patch: clean, corrupted, answer,
    wrong, label, sweep, ...): its --json document as a dict."""
    return _document("patch", options)


def attribute(**options):
    """Attribution of the output to the input tokens, heads and MLPs (attn attribute: sentence or ids,
    method, target_id, steps, ...): its --json document as a dict."""
    return _document("attribute", options)


def generate(prompt=None, **options):
    """GPT-2 or a Llama-family decoder continues `prompt` (or prompt_ids="1 2 3") token by token (attn
    generate: model_dir, max_new_tokens, temperature, top_k, top_p, seed): its --json document as a dict."""
    return _document("generate", dict(options, prompt=prompt))


def diff(a, b, *, rtol=None, atol=None):
    """Two traces compared stage by stage (attn diff): its --json document as a dict. a, b: Traces,
    trace JSON files, or folders of .npy tensors."""
    with tempfile.TemporaryDirectory(prefix="attnlab-diff-") as tmp:
        def path(t, name):
            if not isinstance(t, Trace):
                return t
            file = os.path.join(tmp, name + ".json")
            with open(file, "w", encoding="utf-8") as f:
                f.write(t.to_json())
            return file
        return _document("diff", dict(a=path(a, "a"), b=path(b, "b"), rtol=rtol, atol=atol))


def batch(**options):
    """attn batch over a file (input, output, format, stages, ...); returns its exit status (0, or 3 when
    some items were bad: the output lists them)."""
    return _attnlab.run(_argv("batch", dict(options, quiet=True)))[0]


def help(command):
    """attn COMMAND's options, as `attn COMMAND --help` prints them."""
    return _attnlab.help(command)


# --- the notebook view ---

# The playground's URL-hash keys for attn tutorial's and attn encode's options (docs/playground.md).
_TUTORIAL_KEYS = {"seed", "d_model", "max_len", "mask", "ablate", "ablation"}
_ENCODER_KEYS = {"seed", "d_model", "num_heads", "num_layers", "d_ff", "max_len", "num_classes", "dropout", "train",
                 "norm_first", "mask", "ablate", "ablate_mlp", "ablation"}
_FILE_KEYS = {"weights", "config", "vocab", "model_dir", "merges", "model"}
_MAX_EMBEDDED_JSON = 2 << 20  # a larger trace's document is not put beside its view


def _hash_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _playground_settings(command, options):
    """(hash, model files, options the playground cannot take) for a trace's run."""
    from urllib.parse import quote
    given = {k: v for k, v in options.items() if v is not None and v is not False and k != "quiet"}  # quiet: downloads
    files = {k: given.pop(k) for k in list(given) if k in _FILE_KEYS}
    if "model" in files:  # a name: its folder (a Hub id's snapshot in the cache, fetched when the model loaded)
        files["model_dir"] = _attnlab.model_folder(files.pop("model"))
    sentences = given.pop("sentences", None) or []
    keys = _TUTORIAL_KEYS if command == "tutorial" else _ENCODER_KEYS
    missing = sorted(k for k in given if k not in keys)
    if command == "tutorial":
        pairs = []
    else:
        pairs = [("model", "loaded" if files else "transformer")]
        if files:  # a loaded model's sizes are the file's: only these join its link
            missing += sorted(k for k in given if k not in {"seed", "mask", "train", "ablate", "ablate_mlp", "ablation"})
    pairs += [(k, _hash_value(v)) for k, v in given.items() if k in keys]
    pairs += [("s", s) for s in sentences]
    text = "&".join(f"{k}={quote(v, safe='')}" for k, v in pairs)
    return text, files, sorted(set(missing))


_MAX_EMBEDDED_MODEL = 64 << 20  # model files larger than this are not inlined in a cell


def _model_files(files):
    """The files the page's loadModel takes: the classifier's by role, a checkpoint's by file name."""
    import pathlib
    if "model_dir" in files:  # the files the page's folder picker reads
        folder = pathlib.Path(files["model_dir"])
        wanted = {"config.json", "vocab.txt", "vocab.json", "merges.txt", "tokenizer_config.json", "tokenizer.json",
                  "model.safetensors.index.json"}
        return {p.name: p for p in sorted(folder.iterdir())
                if p.is_file() and (p.name in wanted or p.suffix == ".safetensors")}
    if "merges" in files or "vocab" in files and str(files["vocab"]).endswith(".txt"):  # a checkpoint's
        names = {"weights": "model.safetensors", "config": "config.json", "merges": "merges.txt"}
        return {names.get(role, pathlib.Path(path).name): pathlib.Path(path) for role, path in files.items()}
    return {role: pathlib.Path(path) for role, path in files.items()}


def _note(text, trace):
    from html import escape
    return f"<p>attnlab: {escape(text)}</p><pre>{escape(repr(trace))}</pre>"


def _trace_html(trace, view):
    hash, files, missing = _playground_settings(trace._command, trace._options)
    if missing:
        return _note(f"the playground cannot show this run (it has no {', '.join(missing)} setting)", trace)
    model = _model_files(files) if files else None
    if model and sum(os.path.getsize(p) for p in model.values()) > _MAX_EMBEDDED_MODEL:
        return _note(f"the model's files are over {_MAX_EMBEDDED_MODEL >> 20} MiB: too large to inline in a cell", trace)
    floats = sum(math.prod(trace._native.shape(name)) for name in trace)  # about 12 bytes each as JSON
    document = trace.to_json() if floats * 12 < _MAX_EMBEDDED_JSON else None
    return _playground.playground_html(hash, view, model, expected_json=document)


def show(trace, view="stage"):
    """The playground itself showing `trace` (a Trace or a Model), for a notebook: the WebAssembly build
    inlined in the cell (no network). view: "stage" (the attention weights) or "model" (every head at
    once). Returns an IPython HTML object (without IPython: the HTML text)."""
    views = {"stage": None, "model": {"model_view": True}}
    if view not in views:
        raise ValueError(f"show: view is 'stage' or 'model', not {view!r}")
    if isinstance(trace, Model):
        trace = trace()
    if not isinstance(trace, Trace):
        raise TypeError(f"show: expected a Trace or a Model, got {type(trace).__name__}")
    html = _trace_html(trace, views[view])
    try:
        from IPython.display import HTML
    except ImportError:
        return html
    return HTML(html)
