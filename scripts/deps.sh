#!/usr/bin/env bash
# Installs what attnlab needs on Debian 12 (bookworm), idempotently:
#  - Debian packages (compilers, clang and libFuzzer for the fuzz targets, Emscripten, Catch2, JSON,
#    CLI11, PyTorch for fixtures, pybind11 for the Python module and Jupyter's nbconvert for its notebook,
#    libcurl and OpenSSL's libcrypto for --model's Hub downloads);
#  - xtensor 0.25 / xtl 0.7.7 / xsimd 13.2 (header-only) from Debian trixie, unpacked into .deps/,
#    because bookworm's xsimd 8.1 has no WebAssembly SIMD backend.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/.deps"
. "$root/scripts/debian-archive.sh"

packages=(cmake ccache g++ make clang-14 libclang-rt-14-dev python3-torch python3-numpy python3-threadpoolctl python3-networkx emscripten nodejs catch2
          nlohmann-json3-dev libcli11-dev dpkg-dev ca-certificates python3-dev python3-pybind11 jupyter-nbconvert
          python3-nbclient python3-ipykernel libcurl4-openssl-dev libssl-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
command -v npm > /dev/null || missing+=(npm)  # Debian's npm, unless the machine's Node.js brings its own
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Pinned header-only packages from trixie, fetched with private apt lists (the system's apt config
# is left alone) from the archive the system's apt uses (scripts/debian-archive.sh).
pinned=(libxsimd-dev=13.2.0-1 libxtensor-dev=0.25.0-2 xtl-dev=0.7.7-1)
stamp="$deps/.stamp-$(echo "${pinned[*]}" | tr ' =' '_-')"
if [ ! -f "$stamp" ]; then
  rm -rf "$deps" && mkdir -p "$deps/apt/lists/partial" "$deps/debs"
  archive=$(debian_archive)
  printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$archive" > "$deps/apt/trixie.sources"
  O=(-o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$deps/apt"
     -o "Dir::State::Lists=$deps/apt/lists" -o "Dir::Cache=$deps/apt/cache" -o APT::Architecture=amd64
     -o APT::Sandbox::User=root)
  apt-get "${O[@]}" update -qq
  (cd "$deps/debs" && apt-get "${O[@]}" download "${pinned[@]}")
  for f in "$deps"/debs/*.deb; do dpkg-deb -x "$f" "$deps/root"; done
  # Emscripten must never see /usr/include: give it folders holding only the headers it needs.
  inc="$deps/include"; mkdir -p "$inc"
  for d in xtensor xtl xsimd; do ln -sfn "$deps/root/usr/include/$d" "$inc/$d"; done
  ln -sfn /usr/include/nlohmann "$inc/nlohmann"
  ln -sfn /usr/include/catch2 "$inc/catch2"
  ln -sfn /usr/include/CLI "$inc/CLI"
  touch "$stamp"
fi
# OpenBLAS for `attn bench --torch` only: unpacked, not installed, so Debian's PyTorch keeps the
# reference BLAS system-wide (the fixtures' bit-exact order) and the benchmark's PyTorch process gets
# the fast one through LD_LIBRARY_PATH (native/bench.cpp).
openblas=libopenblas0-pthread=0.3.21+ds-4
if [ ! -f "$deps/openblas/.stamp-$openblas" ]; then
  rm -rf "$deps/openblas" && mkdir -p "$deps/openblas"
  (cd "$deps/openblas" && apt-get -o APT::Sandbox::User=root download "$openblas" && dpkg-deb -x ./*.deb . && rm ./*.deb)
  touch "$deps/openblas/.stamp-$openblas"
fi
# utf8proc's sources (Unicode categories, case mapping, NFD for the BERT and GPT-2 tokenizers), compiled
# into the engine natively and in WebAssembly alike, so both tokenise with the same Unicode tables.
fetch_source utf8proc=2.8.0-1 bookworm "$deps/utf8proc"
test -f "$deps/utf8proc/utf8proc.c" && test -f "$deps/utf8proc/utf8proc_data.c"
# PCRE2's sources (tokenizer.json's Split and Replace patterns: Unicode classes, lookahead), compiled into
# the engine natively and in WebAssembly alike (core/text/regex.hpp says why PCRE2).
fetch_source pcre2=10.42-1 bookworm "$deps/pcre2"
test -f "$deps/pcre2/src/pcre2_compile.c"
# The independent tokenizers tests/tokenizers/check.mjs compares with (exact versions from its lock file).
if [ ! -d "$root/tests/tokenizers/node_modules/gpt-3-encoder" ]; then
  (cd "$root/tests/tokenizers" && npm ci --no-audit --no-fund --loglevel=error)
fi
# huggingface.js's Hub client, whose cache attnlab's must share (tests/hub_check.py; its lock file's versions).
if [ ! -d "$root/tests/hub/node_modules/@huggingface/hub" ]; then
  (cd "$root/tests/hub" && npm ci --no-audit --no-fund --loglevel=error)
fi
"$root/scripts/deps-gui.sh"  # the playground: GLFW, Xvfb, Chromium, fonts, ImGui sources, playwright-core
