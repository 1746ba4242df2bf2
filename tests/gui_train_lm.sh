#!/bin/sh
# ctest gui.train_lm: attn-gui's Train tab trains the induction task's GPT-2 for 30 steps and its log is
# attn train --log's of the same settings byte for byte (the playground runs core/train's run builder);
# the tab draws (a screenshot that shows the UI) and its last frame is idle. Then the Generate tab with
# a GPT-2 checkpoint: a token a frame until done, drawn, the last frame idle.
#   tests/gui_train_lm.sh PATH/TO/attn-gui PATH/TO/attn
set -e
here=$(dirname "$0")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
screen='-screen 0 1280x800x24'
xvfb-run -a -s "$screen" "$1" --tab train --hash 'train.task=induction&train.steps=30&train.eval_every=10' \
  --train-steps 30 --train-log "$out/gui.jsonl" --screenshot "$out/train.png" --frames 4 --check-idle
"$2" train --task induction --steps 30 --eval-every 10 --log "$out/cli.jsonl" --quiet
cmp "$out/gui.jsonl" "$out/cli.jsonl"
echo "ok: attn-gui's log of $(wc -l < "$out/gui.jsonl") records is attn train --log's, byte for byte"
/usr/bin/python3 "$here/check_png.py" "$out/train.png" 1280 800
xvfb-run -a -s "$screen" "$1" --model-dir "$here/fixtures/pretrained/gpt2_tiny" --tab generate \
  --view '{"generate": {"prompt": "Hello world", "max_new_tokens": 6, "temperature": 0}}' \
  --screenshot "$out/generate.png" --frames 10 --check-idle
/usr/bin/python3 "$here/check_png.py" "$out/generate.png" 1280 800
