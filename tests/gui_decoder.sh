#!/bin/sh
# ctest gui.decoder: attn-gui on a Llama-family folder (Gemma 2's fixture: grouped key/value heads, capped
# scores, a sliding window; llama_tiny's tokenizer.json beside it) under Xvfb: every view's layout at
# 1280x800 in English and in Korean (no English UI word left), then a screenshot of the heads grid that
# must be idle and a real image.
#   tests/gui_decoder.sh PATH/TO/attn-gui FIXTURES_DIR PATH/TO/check_png.py
gui=$1 fixtures=$2 check_png=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/gemma2" && cp "$fixtures/pretrained/gemma2_cap/"* "$fixtures/pretrained/llama_tiny/tokenizer.json" "$dir/gemma2/" || exit 1
# Sentences of as many tokens each, and a one-token answer: the patching sweep has what it needs.
hash='s=cat%20sat%20on%20mat&s=dog%20sat%20on%20mat&patch.answer=mat&patch.wrong=cat'
xvfb-run -a -s '-screen 0 1920x1080x24' sh -c '
  for lang in en ko; do
    "$0" --model-dir "$1" --hash "$2" --size 1280x800 --lang "$lang" --check-layout || exit 1
  done
  "$0" --model-dir "$1" --hash "$2" --view "{\"model_view\":true}" --screenshot "$3/gui.png" --frames 4 --check-idle' \
  "$gui" "$dir/gemma2" "$hash" "$dir" || exit 1
/usr/bin/python3 "$check_png" "$dir/gui.png" 1280 800
