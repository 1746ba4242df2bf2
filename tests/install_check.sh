#!/bin/sh
# install.prefix: `cmake --install BUILD --prefix` into a temporary folder, then attn and attn-gui run from
# there, from another working folder, with no path into the build tree in them (RPATH/RUNPATH); and
# `cpack -G DEB` makes a package holding them, with its library dependencies declared.
# Usage: install_check.sh BUILD_DIR
set -eu
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
cd "$tmp"
for bin in "$tmp"/prefix/bin/attn "$tmp"/prefix/bin/attn-gui; do
  [ -x "$bin" ] || { echo "install_check: $bin was not installed" >&2; exit 1; }
  if readelf -d "$bin" | grep -E 'RPATH|RUNPATH' | grep -qF "$build"; then
    echo "install_check: $bin still points into the build tree" >&2; exit 1
  fi
done
"$tmp/prefix/bin/attn" tutorial | grep -q "attention weights shape" || { echo "install_check: attn tutorial printed no attention weights" >&2; exit 1; }
xvfb-run -a -s '-screen 0 1280x800x24' "$tmp/prefix/bin/attn-gui" --screenshot "$tmp/gui.png" --frames 4 > /dev/null
[ -s "$tmp/gui.png" ] || { echo "install_check: attn-gui wrote no screenshot" >&2; exit 1; }
[ -x "$tmp/prefix/bin/attn-playground" ] && [ -f "$tmp/prefix/share/attnlab/serve.py" ]
# The Python module, when built: imported by Debian's python3 from the prefix, its playground linked there.
if [ -d "$build/python/attnlab" ]; then
  PYTHONPATH="$tmp/prefix/lib/python3/dist-packages" /usr/bin/python3 -c "
import attnlab, os, sys
assert attnlab.__file__.startswith('$tmp/prefix/'), attnlab.__file__
assert attnlab.tutorial()['attention_weights'].shape == (4, 4, 4)
site = attnlab._playground.site_dir()
assert site is None or os.path.realpath(site) == os.path.realpath('$tmp/prefix/share/attnlab/web'), site
" || { echo "install_check: the installed package attnlab does not work" >&2; exit 1; }
fi
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/deb" > "$tmp/cpack.log"
deb=$(ls "$tmp"/deb/attnlab_*.deb)
dpkg-deb -f "$deb" Depends | grep -q 'libglfw3' || { echo "install_check: $deb declares no libglfw3 dependency" >&2; exit 1; }
dpkg-deb -c "$deb" | grep -q './usr/bin/attn$' || { echo "install_check: $deb holds no /usr/bin/attn" >&2; exit 1; }
if [ -d "$build/python/attnlab" ]; then
  dpkg-deb -c "$deb" | grep -q './usr/lib/python3/dist-packages/attnlab/_attnlab.*\.so$' ||
    { echo "install_check: $deb holds no Python module" >&2; exit 1; }
fi
echo "install_check: attn, attn-gui, attn-playground and the Python module installed and run from $tmp/prefix; $(basename "$deb") built"
