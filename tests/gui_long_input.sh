#!/bin/sh
# attn-gui on a 2048 x 2048 attention map (a text of 2,048 tokens, the first tutorial at max_len 2048),
# whole and zoomed 16x with its minimap: the UI's part of every frame from the third on within MAX_MS
# (0: not timed, as under ASan; the whole frame is printed), the last one idle, the screenshot showing
# the UI. Then the compare view (run A in the hash) drawn and idle.
# Usage: gui_long_input.sh ATTN_GUI MAX_MS CHECK_PNG.py
set -e
gui=$1 max_ms=$2 check_png=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
words=$(/usr/bin/python3 -c "print('%20'.join('w%d' % (i % 500) for i in range(2048)))")
for view in '{}' '{"zoom":[16,1000,900]}'; do
  status=0
  xvfb-run -a -s '-screen 0 1280x800x24' "$gui" --hash "max_len=2048&s=$words" --view "$view" \
    --screenshot "$out/long.png" --frames 30 --check-idle --max-frame-ms "$max_ms" > "$out/log" || status=$?
  cat "$out/log"
  [ $status -eq 0 ] || exit $status
  grep -q 'slowest frame from the 3rd on' "$out/log"
  /usr/bin/python3 "$check_png" "$out/long.png" 1280 800 >/dev/null || { echo "blank screenshot ($view)"; exit 1; }
done
xvfb-run -a -s '-screen 0 1280x800x24' "$gui" --tab compare --hash 'model=transformer&seed=2&compare=1&a.model=transformer&a.seed=1' \
  --screenshot "$out/compare.png" --frames 4 --check-idle
