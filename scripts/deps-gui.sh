#!/usr/bin/env bash
# Installs what the playground (ui/, web/, attn-gui) and its tests need on Debian 12, idempotently:
#  - Debian packages: GLFW + OpenGL (attn-gui), Xvfb (headless native test), Chromium (browser test),
#    NanumGothic (Hangul glyphs) + fonttools' pyftsubset (font subset for the web), stb (PNG writer);
#  - the Dear ImGui 1.90.1 sources from Debian trixie's source package, unpacked into .deps/imgui
#    (one ImGui version for both shells);
#  - playwright-core (pinned in tests/browser/package-lock.json) into tests/browser/node_modules.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/.deps"
. "$root/scripts/debian-archive.sh"

packages=(libglfw3-dev libgl-dev libegl-dev libgl1-mesa-dri xvfb xauth chromium fonts-nanum fonttools libstb-dev
          dpkg-dev ca-certificates)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
command -v npm > /dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps-gui: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "${missing[@]}"
fi

# Dear ImGui sources (the +ds tarball: core, backends, misc; no examples/libs), pinned.
fetch_source imgui=1.90.1+ds-1 trixie "$deps/imgui"
test -f "$deps/imgui/imgui.cpp" && test -f "$deps/imgui/backends/imgui_impl_opengl3.cpp"

# playwright-core for the browser test (exact version from the committed lock file).
if [ ! -d "$root/tests/browser/node_modules/playwright-core" ]; then
  (cd "$root/tests/browser" && npm ci --no-audit --no-fund --loglevel=error)
fi

# stb_image_write (PNG export) for both builds; Emscripten must never see /usr/include, so a folder
# holding only stb.
mkdir -p "$deps/gui-include"
ln -sfn /usr/include/stb "$deps/gui-include/stb"
