#!/bin/sh
# ctest gui.layout: attn-gui --check-layout (every view: each stage, the model view, Masks, Positional
# encoding, Train, Generate) at 1280x800 and 1920x1080 under Xvfb, for the first tutorial, the Transformer and a
# Transformer of 16 heads on a long sentence with a long token beside a short one; fails on any label,
# legend or heatmap that overlaps another or is cut off. In Korean too (the first tutorial, the
# Transformer with the asked task in the Train tab, and the induction and text language models there), where
# every tour step is walked as well and any English UI word left in a frame fails it (names, option
# values and formulas aside: ui/strings.hpp).
#   tests/gui_layout.sh PATH/TO/attn-gui
long='model=transformer&num_heads=16&num_layers=2&d_model=64&max_len=64'
long="$long&s=나는%20오늘%20아침에%20학교에서%20친구와%20함께%20도서관에%20가서%20책을%20읽고%20공부한다%20그리고"
long="$long%20저녁에%20집에%20간다%20supercalifragilisticexpialidocious&s=짧은%20문장"
text='train.task=text&train.text=%EB%82%98%EB%8A%94%20%ED%95%99%EA%B5%90%EC%97%90%20%EA%B0%84%EB%8B%A4%0A'  # 나는 학교에 간다
exec xvfb-run -a -s '-screen 0 1920x1080x24' sh -c '
  for size in 1280x800 1920x1080; do
    for hash in "" "model=transformer&patch.label=1" "$1"; do
      "$0" --size "$size" --hash "$hash" --check-layout || exit 1
    done
    for hash in "" "model=transformer&train.task=asked&patch.label=1" "train.task=induction" "$2"; do
      "$0" --size "$size" --hash "$hash" --lang ko --check-layout || exit 1
    done
  done' "$1" "$long" "$text"
