#!/bin/sh
# python.notebook: executes python/examples/attnlab.ipynb with Debian's `jupyter nbconvert --execute` (the
# package from the native build, the playground from the WebAssembly build), then opens every view in
# headless Chromium (notebook_check.mjs).
# Usage: notebook.sh PYTHONPATH PLAYGROUND_SITE
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -d "$1/attnlab" ] || { echo "notebook.sh: no package attnlab in $1 (build the native tree first)" >&2; exit 1; }
PYTHONPATH="$1" ATTNLAB_PLAYGROUND_SITE="$2" PYDEVD_DISABLE_FILE_VALIDATION=1 /usr/bin/jupyter nbconvert --to notebook --execute \
  --ExecutePreprocessor.timeout=300 --output-dir "$out" "$here/../../python/examples/attnlab.ipynb"
node "$here/notebook_check.mjs" "$out/attnlab.ipynb"
