#!/bin/sh
# ctest gui.checkpoints: attn-gui on Hugging Face folders under Xvfb. A Llama-family one (Gemma 2's fixture:
# grouped key/value heads, capped scores, a sliding window; llama_tiny's tokenizer.json beside it): every
# view's layout (its own views included) at 1280x800 in English and in Korean (no English UI word left),
# then a screenshot of the grouped heads grid that must be idle and a real image; GPT-2's and BERT's
# layouts in Korean.
#   tests/gui_checkpoints.sh PATH/TO/attn-gui FIXTURES_DIR PATH/TO/check_png.py
gui=$1 fixtures=$2 check_png=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/gemma2" && cp "$fixtures/pretrained/gemma2_cap/"* "$fixtures/pretrained/llama_tiny/tokenizer.json" "$dir/gemma2/" || exit 1
# Sentences of as many tokens each and one-token answers, so that the patching sweep has what it needs;
# no common English word in them (the Korean check would take it for an untranslated one).
sentences='s=cat%20sat%20on%20mat&s=dog%20sat%20on%20mat'
xvfb-run -a -s '-screen 0 1920x1080x24' sh -c '
  for lang in en ko; do
    "$0" --model-dir "$1" --hash "$2&patch.answer=mat&patch.wrong=cat" --size 1280x800 --lang "$lang" --check-layout || exit 1
  done
  for model in gpt2_tiny bert_tiny; do
    "$0" --model-dir "$4/pretrained/$model" --hash "$2&patch.answer=%20cat&patch.wrong=%20dog" --size 1280x800 --lang ko \
      --check-layout || exit 1
  done
  "$0" --model-dir "$1" --hash "$2" --view "{\"model_view\":true}" --screenshot "$3/gui.png" --frames 4 --check-idle' \
  "$gui" "$dir/gemma2" "$sentences" "$dir" "$fixtures" || exit 1
/usr/bin/python3 "$check_png" "$dir/gui.png" 1280 800
