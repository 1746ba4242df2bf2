#!/usr/bin/python3
"""The Python module against the CLI and PyTorch.

    PYTHONPATH=BUILD/python ATTN=BUILD/native/attn /usr/bin/python3 tests/python/test_attnlab.py

Each Python call is compared with the `attn` command of the same options: its --json output byte for
byte, its error message word for word (exit 2, "attn: MESSAGE"). Parameters go through PyTorch's
load_state_dict(strict=True) into the fixture generators' modules (tests/torchgen), and the seeded
tutorial is compared with the PyTorch fixture. A seeded random test feeds every kind of argument value.
"""
import gc
import importlib.util
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

import attnlab

HERE = pathlib.Path(__file__).resolve().parent
TESTS = HERE.parent
FIXTURES = TESTS / "fixtures"
GPT2 = FIXTURES / "pretrained" / "gpt2_tiny"
BERT = FIXTURES / "pretrained" / "bert_tiny"
ATTN = os.environ["ATTN"]


def cli(*args):
    """attn ARGS: (exit status, stdout, stderr)."""
    r = subprocess.run([ATTN, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def cli_json(*args):
    status, out, err = cli(*args, "--json")
    assert status == 0, err
    return out


def torchgen(name):
    # By path: PyTorch ships a package named `torchgen`.
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", TESTS / "torchgen" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ByName(unittest.TestCase):
    def test_a_hub_name_loads_what_its_folder_does(self):
        """attnlab.load("ORG/NAME") against tests/hub/hub_server.py (hub_check.py's Server): the files
        land in HF_HUB_CACHE and the model runs as the fixture's folder does; a second load makes no request."""
        spec = importlib.util.spec_from_file_location("hub_check", TESTS / "hub_check.py")
        hub = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hub)
        server = hub.Server()
        saved = dict(os.environ)
        try:
            with tempfile.TemporaryDirectory() as home:
                os.environ.update(HF_ENDPOINT=server.endpoint, HF_HOME=home, HF_HUB_CACHE=os.path.join(home, "hub"))
                server.reset()
                model = attnlab.load("attnlab-test/llama-tiny", quiet=True)
                folder = attnlab.load(FIXTURES / "pretrained" / "llama_tiny")
                self.assertEqual(model("the cat sat").to_json(), folder("the cat sat").to_json())
                self.assertTrue(any(e["path"].endswith("/tokenizer.json") for e in server.log()))
                # The notebook view reads the same files from the cache's snapshot (nothing downloaded again:
                # "main" is checked with HEAD requests, as huggingface_hub checks a branch online).
                server.reset()
                _, files, missing = attnlab._playground_settings("encode", model("the cat sat")._options)
                shown = attnlab._model_files(files)
                self.assertEqual((sorted(shown), missing), (["config.json", "model.safetensors", "tokenizer.json"], []))
                self.assertIn(os.path.join(home, "hub", "models--attnlab-test--llama-tiny", "snapshots"), str(shown["config.json"]))
                self.assertEqual([e for e in server.log() if e["method"] != "HEAD"], [])
                attnlab.load("attnlab-test/llama-tiny@" + server.commit("attnlab-test/llama-tiny"), quiet=True)
                self.assertEqual(server.log(), [])
                with self.assertRaises(ValueError):
                    attnlab.load("attnlab-test/llama-tiny", model="attnlab-test/llama-tiny")
        finally:
            os.environ.clear()
            os.environ.update(saved)
            server.stop()


class SameNumbers(unittest.TestCase):
    def test_tutorial_equals_the_cli(self):
        cases = [({}, []),
                 (dict(seed=1, mask="none"), ["--seed", "1", "--mask", "none"]),
                 (dict(sentences=["나는 학교에 간다", "오늘 비가 온다"], d_model=8, mask="padding+causal"),
                  ["--sentence", "나는 학교에 간다", "--sentence", "오늘 비가 온다", "--d-model", "8", "--mask", "padding+causal"]),
                 (dict(seed=-3, ablate="0.0", ablation="mean"), ["--seed", "-3", "--ablate", "0.0", "--ablation", "mean"])]
        for options, args in cases:
            with self.subTest(options=options):
                self.assertEqual(attnlab.tutorial(**options).to_json() + "\n", cli_json("tutorial", *args))

    def test_tutorial_equals_pytorch(self):
        fixture = json.loads((FIXTURES / "tutorial_default.json").read_text())
        trace = attnlab.tutorial()
        for stage in fixture["stages"]:
            with self.subTest(stage=stage["name"]):
                ours = trace[stage["name"]]
                self.assertEqual(list(ours.shape), stage["shape"])
                want = np.array(stage["data"], dtype=ours.dtype).reshape(stage["shape"])
                self.assertTrue(np.array_equal(ours, want))

    def test_encode_equals_the_cli(self):
        cases = [({}, []),
                 (dict(num_heads=2, num_layers=2, seed=5, mask="causal"),
                  ["--num-heads", "2", "--num-layers", "2", "--seed", "5", "--mask", "causal"]),
                 (dict(ids=[[1, 2, 3], [4, 5]], vocab_size=9), ["--ids", "1 2 3", "--ids", "4 5", "--vocab-size", "9"]),
                 (dict(num_heads=2, ablate=[(0, 1)], ablation="mean", logit_lens=True),
                  ["--num-heads", "2", "--ablate", "0.1", "--ablation", "mean", "--logit-lens"]),
                 (dict(norm_first=True, activation="gelu", train=True, dropout=0.3),
                  ["--norm-first", "--activation", "gelu", "--train", "--dropout", "0.3"])]
        for options, args in cases:
            with self.subTest(options=options):
                self.assertEqual(attnlab.encode(**options).to_json() + "\n", cli_json("encode", *args))

    def test_checkpoints_equal_the_cli(self):
        for folder, sentences in ((GPT2, ["the cat sat", "a dog"]), (BERT, ["hello world"])):
            model = attnlab.load(folder)
            args = ["--model-dir", str(folder)] + [a for s in sentences for a in ("--sentence", s)]
            with self.subTest(model=folder.name):
                self.assertEqual(model(sentences).to_json() + "\n", cli_json("encode", *args))
                # the checkpoint stays loaded: a second call computes the same
                self.assertEqual(model(sentences).to_json() + "\n", cli_json("encode", *args))
                self.assertEqual(model(sentences, ablate="0.1").to_json() + "\n",
                                 cli_json("encode", *args, "--ablate", "0.1"))
        gpt2 = attnlab.load(GPT2)
        self.assertEqual(gpt2("the cat", logit_lens=True).to_json() + "\n",
                         cli_json("encode", "--model-dir", str(GPT2), "--sentence", "the cat", "--logit-lens"))
        files = attnlab.load(weights=GPT2 / "model.safetensors", config=GPT2 / "config.json",
                             vocab=GPT2 / "vocab.json", merges=GPT2 / "merges.txt")
        self.assertEqual(files("hi").to_json(), attnlab.load(GPT2)("hi").to_json())

    def test_generation_and_interventions_equal_the_cli(self):
        model = attnlab.load(GPT2)
        self.assertEqual(model.generate("the cat", max_new_tokens=5, top_k=3, temperature=0.7, seed=2),
                         json.loads(cli_json("generate", "--model-dir", str(GPT2), "--prompt", "the cat",
                                             "--max-new-tokens", "5", "--top-k", "3", "--temperature", "0.7", "--seed", "2")))
        self.assertEqual(model.heads(seq_len=8, batch=2),
                         json.loads(cli_json("heads", "--model-dir", str(GPT2), "--seq-len", "8", "--batch", "2")))
        self.assertEqual(model.patch("the cat sat", "the dog sat", answer=" sat", wrong=" cat", sweep="heads"),
                         json.loads(cli_json("patch", "--model-dir", str(GPT2), "--clean", "the cat sat",
                                             "--corrupted", "the dog sat", "--answer", " sat", "--wrong", " cat", "--sweep", "heads")))
        self.assertEqual(model.attribute("the cat sat", "integrated-gradients", steps=8, target_id=5),
                         json.loads(cli_json("attribute", "--model-dir", str(GPT2), "--sentence", "the cat sat",
                                             "--method", "integrated-gradients", "--steps", "8", "--target-id", "5")))
        a, b = attnlab.tutorial(), attnlab.tutorial(seed=1)
        with tempfile.TemporaryDirectory() as tmp:
            for name, trace in (("a", a), ("b", b)):
                pathlib.Path(tmp, name + ".json").write_text(trace.to_json())
            status, out, _ = cli("diff", os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json"), "--json")
        self.assertEqual(status, 1)
        self.assertEqual(attnlab.diff(a, b), json.loads(out))


class Arrays(unittest.TestCase):
    def test_views_are_zero_copy_read_only_and_outlive_the_trace(self):
        trace = attnlab.tutorial()
        weights = trace["attention_weights"]
        self.assertEqual(weights.dtype, np.float32)
        self.assertTrue(np.shares_memory(weights, trace["attention_weights"]))  # both view the engine's tensor
        self.assertFalse(weights.flags.writeable)
        with self.assertRaises(ValueError):
            weights[0, 0, 0] = 1
        copy = weights.copy()
        del trace
        gc.collect()
        attnlab.tutorial(seed=9)  # the allocator reuses freed memory: a dangling view would change
        self.assertTrue(np.array_equal(weights, copy))
        np.testing.assert_allclose(weights.sum(axis=-1), 1, rtol=1e-6)

    def test_ids_and_masks_are_integers_and_booleans(self):
        trace = attnlab.tutorial()
        self.assertEqual(trace["token_ids"].dtype, np.int64)
        doc = {s["name"]: s for s in json.loads(trace.to_json())["stages"]}
        self.assertEqual(trace["token_ids"].reshape(-1).tolist(), doc["token_ids"]["data"])
        masks = [n for n in trace if trace[n].dtype == np.bool_]
        self.assertTrue(masks)
        for name in masks:
            self.assertEqual(trace[name].reshape(-1).astype(int).tolist(), doc[name]["data"])

    def test_names_tokens_and_summary(self):
        trace = attnlab.tutorial(["a b c", "d e"])
        self.assertEqual(trace.tokens, json.loads(trace.to_json())["tokens"])
        self.assertEqual(trace.stages, [s["name"] for s in json.loads(trace.to_json())["stages"]])
        self.assertIn("attention_weights", trace)
        self.assertLess(len(repr(trace)), 200)
        self.assertIn("attention_weights [2, 3, 3]", repr(trace))
        self.assertEqual(attnlab.tutorial(part=2, seed=1), json.loads(cli_json("tutorial", "--part", "2", "--seed", "1")))
        with self.assertRaisesRegex(KeyError, "attention_weights"):
            trace["attention_weight"]
        self.assertEqual(trace.text(), cli("tutorial", "--sentence", "a b c", "--sentence", "d e")[1])


class StateDict(unittest.TestCase):
    def load_strict(self, module, state):
        import torch
        module.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
        return module

    def test_classifier_loads_into_pytorch(self):
        import torch
        transformer = torchgen("transformer")
        with tempfile.TemporaryDirectory() as tmp:
            weights = os.path.join(tmp, "w.safetensors")
            trace = attnlab.encode(num_heads=2, num_layers=2, mask="none", save_weights=weights)
            model = attnlab.load(weights=weights, config=self.config_file(tmp, trace), vocab=self.vocab_file(tmp, trace),
                                 mask="none")
            state = model.state_dict()
        config = json.loads(trace.to_json())["config"]
        torch_model = transformer.TransformerClassifier(
            vocab_size=config["vocab_size"], d_model=config["d_model"], num_heads=config["num_heads"],
            num_layers=config["num_layers"], num_classes=config["num_classes"], d_ff=config["d_ff"],
            max_len=config["max_len"], dropout=config["dropout"])
        self.load_strict(torch_model, state).eval()
        with torch.no_grad():
            logits = torch_model(torch.from_numpy(trace["token_ids"]))
        # LayerNorm rounds differently in its last bit (docs/fidelity.md): the tests' tolerance
        np.testing.assert_allclose(logits.numpy(), trace["logits"], rtol=1e-5, atol=1e-5)
        self.assertTrue(np.array_equal(transformer.STAGES["layers.0.self_attn.attention_weights"].numpy(),
                                       trace["layers.0.self_attn.attention_weights"]))

    def config_file(self, tmp, trace):
        path = os.path.join(tmp, "config.json")
        pathlib.Path(path).write_text(json.dumps(json.loads(trace.to_json())["config"]))
        return path

    def vocab_file(self, tmp, trace):
        path = os.path.join(tmp, "vocab.json")
        pathlib.Path(path).write_text(json.dumps(json.loads(trace.to_json())["vocab"]))
        return path

    def test_checkpoints_load_into_pytorch(self):
        pretrained = torchgen("pretrained")
        for folder, module in ((BERT, pretrained.BertModel), (GPT2, pretrained.GPT2LMHeadModel)):
            with self.subTest(model=folder.name):
                config = json.loads((folder / "config.json").read_text())
                self.load_strict(module(config), attnlab.load(folder).state_dict())

    def test_decoders_load_into_pytorch_and_run_as_the_cli(self):
        import torch
        decoder = torchgen("decoder")
        for name in ("llama_tiny", "llama3_gqa"):
            folder = FIXTURES / "pretrained" / name
            with self.subTest(model=name):
                config = json.loads((folder / "config.json").read_text())
                model = attnlab.load(folder)
                module = decoder.LlamaForCausalLM(decoder.with_head_dim(config))
                keys = module.load_state_dict({k: torch.from_numpy(v) for k, v in model.state_dict().items()}, strict=False)
                self.assertEqual((keys.missing_keys, keys.unexpected_keys),
                                 (["lm_head.weight"] if config["tie_word_embeddings"] else [], []))
                self.assertEqual(model.generate(prompt_ids="5 17 42", max_new_tokens=4, temperature=0.8, seed=3),
                                 json.loads(cli_json("generate", "--model-dir", str(folder), "--prompt-ids", "5 17 42",
                                                     "--max-new-tokens", "4", "--temperature", "0.8", "--seed", "3")))
        llama = FIXTURES / "pretrained" / "llama_tiny"
        self.assertEqual(attnlab.load(llama)("the cat", ablate="kv1.0").to_json() + "\n",
                         cli_json("encode", "--model-dir", str(llama), "--sentence", "the cat", "--ablate", "kv1.0"))


class Training(unittest.TestCase):
    OPTIONS = dict(task="duplicate", steps=6, batch_size=8, seed=3)

    def test_log_and_model_equal_the_cli(self):
        seen = []
        result = attnlab.train(progress=seen.append, **self.OPTIONS)
        with tempfile.TemporaryDirectory() as tmp:
            log, weights = os.path.join(tmp, "log.jsonl"), os.path.join(tmp, "w.safetensors")
            status, _, err = cli("train", "--task", "duplicate", "--steps", "6", "--batch-size", "8", "--seed", "3",
                                 "--log", log, "--save-weights", weights, "--quiet")
            self.assertEqual(status, 0, err)
            self.assertEqual(result.log, [json.loads(line) for line in pathlib.Path(log).read_text().splitlines()])
            self.assertEqual(seen, result.log)
            with open(weights, "rb") as ours, open(os.path.join(result.files, "model.safetensors"), "rb") as theirs:
                self.assertEqual(ours.read(), theirs.read())
        self.assertEqual(len(result.steps), 6)

    def test_language_model(self):
        result = attnlab.train(task="induction", steps=3, batch_size=4, seed=1)
        self.assertEqual(len(result.steps), 3)
        self.assertIn("h.0.attn.attn_weights", result.model("abcabc"))

    def test_ctrl_c_stops_cleanly_and_resumes_to_the_same_bytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            options = dict(self.OPTIONS, steps=40, checkpoint=os.path.join(tmp, "run"))
            seen = []

            def interrupt_at_step_5(record):
                seen.append(record)
                if len(seen) == 5:
                    threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()
                    threading.Event().wait(0.5)  # the signal arrives while this step's callback runs

            with self.assertRaises(KeyboardInterrupt):
                attnlab.train(progress=interrupt_at_step_5, **options)
            self.assertLess(len(seen), 40)
            resumed = attnlab.train(**options, resume=True)
            whole = attnlab.train(**dict(options, checkpoint=os.path.join(tmp, "whole")))
            self.assertEqual(resumed.log[-1], whole.log[-1])
            for name, value in whole.model.state_dict().items():
                self.assertTrue(np.array_equal(value, resumed.model.state_dict()[name]), name)


class BadInput(unittest.TestCase):
    def assertCliError(self, call, *args):
        status, _, err = cli(*args)
        self.assertEqual(status, 2, err)
        with self.assertRaises(ValueError) as raised:
            call()
        self.assertEqual("attn: " + str(raised.exception), err.splitlines()[0])

    def test_errors_carry_the_cli_message(self):
        self.assertCliError(lambda: attnlab.tutorial(seed="x"), "tutorial", "--seed", "x")
        self.assertCliError(lambda: attnlab.tutorial(mask="diagonal"), "tutorial", "--mask", "diagonal")
        self.assertCliError(lambda: attnlab.encode(d_model=0), "encode", "--d-model", "0")
        self.assertCliError(lambda: attnlab.load("/nonexistent"), "encode", "--model", "/nonexistent")
        self.assertCliError(lambda: attnlab.load(model_dir="/nonexistent"), "encode", "--model-dir", "/nonexistent")
        self.assertCliError(lambda: attnlab.encode(ablate="9.9"), "encode", "--ablate", "9.9")
        self.assertCliError(lambda: attnlab.train(task="nope"), "train", "--task", "nope")
        self.assertCliError(lambda: attnlab.load(GPT2).generate("x", top_p=2), "generate", "--model-dir", str(GPT2),
                            "--prompt", "x", "--top-p", "2")

    def test_unknown_options_and_wrong_types(self):
        with self.assertRaisesRegex(ValueError, "no option 'dmodel'.*d_model"):
            attnlab.encode(dmodel=3)
        with self.assertRaisesRegex(TypeError, "seed: .*dict"):
            attnlab.tutorial(seed={})
        with self.assertRaisesRegex(TypeError, "logit_lens is a flag"):
            attnlab.encode(logit_lens="yes")
        with self.assertRaisesRegex(TypeError, "a bool"):
            attnlab.tutorial(seed=True)
        with self.assertRaisesRegex(TypeError, "stage is named by a string"):
            attnlab.tutorial()[0]
        with self.assertRaisesRegex(ValueError, "view is"):
            attnlab.show(attnlab.tutorial(), view="nope")

    def test_seeded_random_arguments(self):
        """Every combination either computes what the CLI computes or fails as it fails; never a crash."""
        rng = random.Random(20261206)
        pools = {
            "seed": [0, 1, -7, 2**63, 2**64, "12", "x", 1.5, np.int64(4), None, [1], b"1"],
            "d_model": [2, 6, 7, 0, -2, "8", 4.0, np.uint8(4), "", None, 10**9],
            "mask": ["none", "padding", "causal", "padding+causal", "PADDING", "", 3, None],
            "max_len": [1, 3, 100, 0, "5", None, 1e400],
            "sentences": [None, ["a b"], ["나는 간다", "x"], [], [""], "one sentence", ["a\0b"], [1, 2], ("a", "b c d")],
            "ablate": [None, "0.0", "0.1", "1.0", "x", (0, 0), [(0, 0)], ""],
            "ablation": [None, "zero", "mean", "half", 0],
        }
        for case in range(120):
            options = {k: rng.choice(v) for k, v in pools.items() if rng.random() < 0.5}
            with self.subTest(case=case, options=options):
                self.check_against_cli(options)

    def check_against_cli(self, options):
        try:
            args = attnlab._tutorial_argv(**options)
        except (TypeError, ValueError) as conversion:
            with self.assertRaises(type(conversion)):
                attnlab.tutorial(**options)
            return
        status, out, err = cli(*args, "--json")
        if status == 0:
            self.assertEqual(attnlab.tutorial(**options).to_json() + "\n", out)
        else:
            self.assertEqual(status, 2, err)
            with self.assertRaises(ValueError) as raised:
                attnlab.tutorial(**options)
            self.assertEqual("attn: " + str(raised.exception), err.splitlines()[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
