#!/bin/sh
# Throughput of `attn batch` against a PyTorch loop doing the same job (Debian's python3-torch):
# the second tutorial's classifier (vocab 10000, d_model 128, 8 heads, 4 layers) and the d_model 512 /
# 6-layer encoder, over sentences of 4-32 words, batch size 32 (attn's fast path packs 32 items of any
# lengths; PyTorch, which has no unpadded mixed-length batch for this model, gets the same 256-line
# windows in equal-length batches of up to 32: the same numbers, nothing padded; eval mode,
# inference_mode, and as many intra-op threads as attn gets threads, with its best
# settings as in `attn bench --torch`: OpenBLAS from .deps/openblas, OPENBLAS_CORETYPE/L2_SIZE unset,
# its pool limited by threadpoolctl, OMP_WAIT_POLICY=PASSIVE at 2 threads). attn runs the fast path
# (--backend cpu) unless --exact. Reports sentences/s at 1 and 2 threads and attn's peak RSS.
# `--model tiny` (not by default): the first tutorial's size (d_model 6, one head, one layer), where both
# sides are bound by per-sentence overhead rather than arithmetic. A benchmark, not a test.
#   scripts/bench-batch.sh [--count N] [--big] [--model tiny|tutorial|encoder] [--exact] [--attn PATH]
#   --big: 100000 sentences; --model: only that model (default: tutorial and encoder)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
count=2000
attn="$here/build/native/attn"
path="--backend cpu"
models="tutorial encoder"
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count=$2; shift 2 ;;
    --big) count=100000; shift ;;
    --exact) path=""; shift ;;
    --model) models=$2; shift 2 ;;
    --attn) attn=$2; shift 2 ;;
    *) echo "usage: $0 [--count N] [--big] [--model tiny|tutorial|encoder] [--exact] [--attn PATH]" >&2; exit 2 ;;
  esac
done
for m in $models; do
  case $m in tiny | tutorial | encoder) ;; *) echo "unknown model '$m' (tiny, tutorial or encoder)" >&2; exit 2 ;; esac
done
[ -x "$attn" ] || { echo "no attn at $attn: build first (cmake --build build)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work" "$count" <<'EOF'
import json, random, sys
work, count = sys.argv[1], int(sys.argv[2])
words = [f"w{i}" for i in range(9999)]
json.dump({t: i for i, t in enumerate(["[PAD]"] + words)}, open(f"{work}/vocab.json", "w"))
rng = random.Random(0)
with open(f"{work}/input.txt", "w") as f:
    for _ in range(count):
        f.write(" ".join(rng.choice(words) for _ in range(rng.randint(4, 32))) + "\n")
EOF

tiny="--d-model 6 --num-heads 1 --num-layers 1 --num-classes 5"
tutorial="--d-model 128 --num-heads 8 --num-layers 4 --num-classes 5"
encoder="--d-model 512 --num-heads 8 --num-layers 6 --num-classes 5"
echo "$count sentences of 4-32 words, batch size 32, --stages logits, attn ${path:-exact path}"
printf '%-9s %-8s %14s %14s %9s %12s\n' model threads "attn sent/s" "torch sent/s" ratio "attn peakRSS"
for size in $models; do
  eval "flags=\$$size"
  for threads in 1 2; do
    start=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then
      # shellcheck disable=SC2086
      /usr/bin/time -v -o "$work/time" "$attn" batch "$work/input.txt" -o "$work/out.jsonl" --quiet \
        --vocab "$work/vocab.json" $flags $path --stages logits --threads "$threads" --batch-size 32
      rss="$(awk -F': ' '/Maximum resident/ {printf "%.0f MiB", $2 / 1024}' "$work/time")"
    else
      # shellcheck disable=SC2086
      "$attn" batch "$work/input.txt" -o "$work/out.jsonl" --quiet --vocab "$work/vocab.json" $flags $path \
        --stages logits --threads "$threads" --batch-size 32
      rss="n/a"
    fi
    end=$(date +%s.%N)
    ours=$(echo "$count / ($end - $start)" | bc -l)
    # shellcheck disable=SC2086
    wait_policy=""
    [ "$threads" = 2 ] && wait_policy="OMP_WAIT_POLICY=PASSIVE"
    # shellcheck disable=SC2086
    theirs=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $wait_policy \
      LD_LIBRARY_PATH="$here/.deps/openblas/usr/lib/x86_64-linux-gnu/openblas-pthread" \
      /usr/bin/python3 - "$here" "$work" "$threads" $flags <<'EOF'
import importlib.util, json, sys, time
import torch
here, work, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
flags = dict(zip(sys.argv[4::2], map(int, sys.argv[5::2])))
spec = importlib.util.spec_from_file_location("t", f"{here}/tests/torchgen/transformer.py")
T = importlib.util.module_from_spec(spec); spec.loader.exec_module(T)
T.rec = lambda name, t: None  # the fixture generator's stage recording: not part of the job
torch.set_num_threads(threads)
from threadpoolctl import threadpool_limits
threadpool_limits(threads)
vocab = json.load(open(f"{work}/vocab.json"))
torch.manual_seed(0)
model = T.TransformerClassifier(vocab_size=len(vocab), d_model=flags["--d-model"], num_heads=flags["--num-heads"],
                                num_layers=flags["--num-layers"], num_classes=flags["--num-classes"]).eval()
start = time.perf_counter()
window, done = [], 0
def flush():
    by_len = {}
    for ids in window: by_len.setdefault(len(ids), []).append(ids)
    for length in sorted(by_len):
        group = by_len[length]
        for i in range(0, len(group), 32):
            x = torch.tensor(group[i:i + 32])
            model(x, T.make_mask("padding", x).unsqueeze(1)).tolist()
with torch.inference_mode():
    for line in open(f"{work}/input.txt"):
        window.append([vocab[w] for w in line.split()]); done += 1
        if len(window) == 256: flush(); window = []
    flush()
print(done / (time.perf_counter() - start))
EOF
)
    printf '%-9s %-8s %14.1f %14.1f %8.2fx %12s\n' "$size" "$threads" "$ours" "$theirs" \
      "$(echo "$ours / $theirs" | bc -l)" "$rss"
  done
done
