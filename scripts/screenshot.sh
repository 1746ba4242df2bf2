#!/usr/bin/env bash
# Renders the playground into docs/playground.png, the README's picture: attn-gui under Xvfb (Mesa's
# software OpenGL), 1280x800, in English whatever the locale, the first tutorial's attention weights; then recompresses the PNG
# (scripts/png_recompress.py) and checks it shows the UI and its heatmap (tests/check_png.py).
#   scripts/screenshot.sh [BUILD_DIR]    # default build/; configures it and builds attn-gui when missing
#   ATTN_GUI=path/to/attn-gui scripts/screenshot.sh    # an attn-gui built elsewhere
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build}
gui=${ATTN_GUI:-$build/native/gui/attn-gui}
if [ ! -x "$gui" ]; then
  "$root/scripts/deps.sh"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build "$build" -j "$(nproc)" --target attn-gui > /dev/null
fi
command -v xvfb-run > /dev/null || { echo "screenshot: xvfb-run missing (scripts/deps-gui.sh installs it)" >&2; exit 1; }
width=1280 height=800
out=docs/playground.png
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The X screen is twice the window: Xvfb puts the pointer in the screen's centre, outside the window, so no
# cell is hovered (a tooltip would cover it).
xvfb-run -a -s "-screen 0 $((2 * width))x$((2 * height))x24" "$gui" --size "${width}x${height}" --lang en --stage attention_weights \
  --screenshot "$tmp/playground.png" --frames 4
/usr/bin/python3 scripts/png_recompress.py "$tmp/playground.png" "$out"
/usr/bin/python3 tests/check_png.py "$out" "$width" "$height"
echo "screenshot: $out ($(stat -c %s "$out") bytes)"
