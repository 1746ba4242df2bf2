"""The web playground in a notebook's output: one self-contained HTML fragment for _repr_html_.

The fragment is an <iframe srcdoc="..."> whose document is the playground's page (site/index.html) with
index.js, index.wasm and the Hangul font inlined (gzipped, base64: about 1.9 MB), so it needs no server
and no network: in a srcdoc frame a relative URL would resolve against the notebook's own address. Each
iframe is a document of its own (its own Module, wasm instance and WebGL context), so several on one
page are independent. Needs DecompressionStream (Chrome 80, Firefox 113, Safari 16.4).
"""
from __future__ import annotations

import base64
import functools
import gzip
import html
import json
import os
import pathlib
import re

_FILES = ("index.html", "index.js", "index.wasm", "NanumGothic-subset.ttf")
_ROLES = {"weights", "config", "vocab"}


def site_dir() -> str | None:
    """The playground's files: $ATTNLAB_PLAYGROUND_SITE if set, else playground/ beside this file if it
    holds index.js, else None."""
    env = os.environ.get("ATTNLAB_PLAYGROUND_SITE")
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "playground")
    return here if os.path.isfile(os.path.join(here, "index.js")) else None


def _script_json(text: str) -> str:
    """JSON text for a <script> element: '<', '>' and '&' (found only inside JSON strings, where \\u003c
    means the same) escaped, so no text can close the element."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _js(value) -> str:
    return _script_json(json.dumps(value, ensure_ascii=False))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# The page's scripts. The wasm, the font and index.js travel gzipped (3.2 times smaller: a notebook keeps
# every output) and are inflated with DecompressionStream; index.js runs once Module.wasmBinary and the
# font's blob: URL are set (Emscripten's hooks: wasmBinary instead of fetching index.wasm, locateFile for
# the font, which web/api.js fetches from locateFile('NanumGothic-subset.ttf')).
_LOADER = """<script>
  const attnlabBytes = (b64) => {
    const text = atob(b64), out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; ++i) out[i] = text.charCodeAt(i);
    return out;
  };
  const attnlabInflate = (id) => {
    const gz = new Blob([attnlabBytes(document.getElementById(id).textContent)]);
    return new Response(gz.stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer();
  };
  const attnlabLoaded = Promise.all(['attnlab-wasm', 'attnlab-font', 'attnlab-js'].map(attnlabInflate))
    .then(([wasm, font, js]) => {
      Module.wasmBinary = new Uint8Array(wasm);
      const fontUrl = URL.createObjectURL(new Blob([font], { type: 'font/ttf' }));
      Module.locateFile = (path) => (path === 'NanumGothic-subset.ttf' ? fontUrl : path);
      const script = document.createElement('script');
      script.textContent = new TextDecoder().decode(js);
      document.body.appendChild(script);  // runs index.js now: window.attnlab exists after this
    });
</script>
"""


@functools.lru_cache(maxsize=2)
def _page(site: str, stamp: tuple) -> tuple[str, str, str]:
    """The page before index.js's <script> tag, what replaces the tag (the files inlined and their loader),
    the page after it (cached while the files' modification times stay the same)."""
    del stamp  # the cache key only
    read = lambda name: pathlib.Path(site, name).read_bytes()  # noqa: E731
    page = read("index.html").decode("utf-8")
    # The threaded build (mt/) cannot come along: no probe for it, which would request a relative URL.
    page = page.replace("if (self.crossOriginIsolated && ", "if (false && ", 1)
    tag = re.search(r'<script[^>]*\bsrc="index\.js"[^>]*>\s*</script>', page)
    if not tag:
        raise RuntimeError(f"{site}/index.html: no <script src=\"index.js\"> to inline")
    data = "".join(f'<script type="application/octet-stream" id="attnlab-{key}">'
                   f"{_b64(gzip.compress(read(name), 9, mtime=0))}</script>\n"
                   for key, name in (("wasm", "index.wasm"), ("font", "NanumGothic-subset.ttf"), ("js", "index.js")))
    return page[:tag.start()], data + _LOADER, page[tag.end():]


def _model_entries(model_files: dict) -> dict:
    """{"roles": true, files: [[role, base64]]} for {"weights", "config", "vocab"}; else a checkpoint's files
    by name ({"config.json": …, "model.safetensors": …}), sorted by the page as Model files… sorts them."""
    files = [[str(name), _b64(pathlib.Path(path).read_bytes())] for name, path in model_files.items()]
    return {"roles": set(model_files) <= _ROLES, "files": files}


def _not_installed(site: str | None, missing: str | None = None) -> str:
    where = (f"<code>{html.escape(site)}</code> has no <code>{html.escape(missing)}</code>" if site
             else "they are not installed with this package")
    return ('<div class="attnlab-playground-missing" style="padding: 8px; border: 1px solid #c96; border-radius: 4px">'
            f"The attnlab playground's files are missing: {where}. Build the web playground "
            "(<code>build-web/web/site</code>, see the project's README and docs/building.md) and set "
            "<code>ATTNLAB_PLAYGROUND_SITE</code> to that folder, or install a package that ships it.</div>")


def playground_html(hash: str, view: dict | None = None, model_files: dict | None = None, height: int = 720,
                    expected_json: str | None = None) -> str:
    """An HTML fragment showing the playground in a notebook output, with nothing fetched from anywhere.

    hash: the playground's URL-hash settings ("seed=1&mask=none"; docs/playground.md), applied at start.
    view: given to attnlab.selectView once the first frame is drawn ({"model_view": True}).
    model_files: the files' paths by role ({"weights", "config", "vocab"}), or a checkpoint's by file name,
      loaded with attnlab.loadModel before the view is selected.
    height: the iframe's height in CSS pixels.
    expected_json: a trace document (text) attached beside the iframe as
      <script type="application/json" class="attnlab-trace">, for tests to compare with attnlab.trace().
    """
    site = site_dir()
    if site is None:
        return _not_installed(None)
    missing = next((f for f in _FILES if not os.path.isfile(os.path.join(site, f))), None)
    if missing:
        return _not_installed(site, missing)
    stamp = tuple(os.stat(os.path.join(site, f)).st_mtime_ns for f in _FILES)
    before, inlined, tail = _page(os.path.abspath(site), stamp)
    hash = (hash or "").removeprefix("#")
    model = _model_entries(model_files) if model_files else None
    # The settings go into the frame's own URL (about:srcdoc#…), which the page reads at start and keeps in
    # step with history.replaceState (an absolute URL there: a relative one would name the notebook's). A
    # browser refusing it gets them after the first frame instead. window.attnlabEmbedded resolves, once the
    # model files and the view are applied and drawn, to null or the error (for tests; the page shows it).
    setup = f"""<script type="application/json" id="attnlab-model">{_js(model)}</script>
<script>
  const attnlabHash = {_js(hash)};
  let attnlabHashSet = !attnlabHash;
  try {{
    history.replaceState(null, '', location.href.split('#')[0] + '#' + attnlabHash);
    attnlabHashSet = attnlabHashSet || location.hash === '#' + attnlabHash;
  }} catch (e) {{ /* applied after the first frame */ }}
  window.attnlabEmbedded = attnlabLoaded.then(() => window.attnlab.ready).then(async (api) => {{
    if (!attnlabHashSet) {{
      const error = Module.ccall('attnlab_set_hash', 'string', ['string'], ['#' + attnlabHash]);
      if (error) throw new Error('hash: ' + error);
    }}
    const model = JSON.parse(document.getElementById('attnlab-model').textContent);
    if (model) {{
      const files = model.files.map(([name, b64]) => ({{ name, bytes: attnlabBytes(b64) }}));
      api.loadModel(model.roles ? Object.fromEntries(files.map((f) => [f.name, f.bytes])) : files);
    }}
    const view = {_js(view)};
    if (view) api.selectView(view);
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    return null;
  }}).catch((e) => {{
    console.error('attnlab: ' + e.message);
    const help = document.getElementById('help');
    if (help) help.textContent = 'attnlab: ' + e.message;
    return String(e.message);
  }});
</script>
"""
    doc = before + inlined + setup + tail
    out = (f'<div class="attnlab-playground-output">'
           f'<iframe class="attnlab-playground" title="attnlab playground" srcdoc="{html.escape(doc, quote=True)}" '
           f'style="width: 100%; height: {int(height)}px; border: 1px solid #444; border-radius: 3px"></iframe>')
    if expected_json is not None:
        out += f'<script type="application/json" class="attnlab-trace">{_script_json(expected_json)}</script>'
    return out + "</div>"
