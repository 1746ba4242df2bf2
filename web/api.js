// window.attnlab: the playground's JS API, and the glue between the page and the C++ shell
// (--post-js: runs inside the Emscripten module, so it sees Module, FS, ccall and GLFW).
(function () {
  const call = (name, ret, types, args) => Module.ccall(name, ret, types, args);
  let resolveReady;
  const ready = new Promise((resolve) => { resolveReady = resolve; });
  const field = () => document.getElementById('sentences');

  // Keys typed into the page's text fields must not reach GLFW's window-wide key listeners (they would
  // preventDefault Backspace/Tab there): wrap the handlers before glfwInit installs them.
  if (typeof GLFW !== 'undefined') {
    for (const name of ['onKeydown', 'onKeyPress', 'onKeyup']) {
      const original = GLFW[name];
      GLFW[name] = function (event) {
        const t = event.target;
        if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT')) return;
        return original.call(this, event);
      };
    }
  }

  // The font is a static file next to the page, fetched while the wasm compiles; it must be in the
  // file system before main runs.
  const font = fetch('NanumGothic-subset.ttf').then((r) => {
    if (!r.ok) throw new Error('font: HTTP ' + r.status);
    return r.arrayBuffer();
  });
  Module.preRun = Module.preRun || [];
  Module.preRun.push(function () {
    addRunDependency('attnlab-font');
    font.then((bytes) => FS.writeFile('/font.ttf', new Uint8Array(bytes)))
      .catch((e) => console.warn('attnlab: no Hangul font (' + e.message + ')'))
      .finally(() => removeRunDependency('attnlab-font'));
  });

  let applyingHash = false;
  Module.attnlabConfigChanged = function (hash, sentences) {
    const target = hash ? '#' + hash : location.pathname + location.search;
    if ((location.hash || '') !== (hash ? '#' + hash : '')) {
      applyingHash = true;
      history.replaceState(null, '', target);
      applyingHash = false;
    }
    const f = field();
    if (sentences !== null && f && f.value !== sentences) f.value = sentences;
  };
  Module.attnlabFirstFrame = function () {
    const ms = performance.now();
    window.attnlab.firstFrameMs = ms;
    document.title = 'attnlab playground';
    resolveReady(window.attnlab);
  };
  Module.attnlabDownload = function (name, bytes, mime) {
    const url = URL.createObjectURL(new Blob([bytes], { type: mime }));
    const a = document.createElement('a');
    a.href = url;
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };

  window.attnlab = {
    ready,
    firstFrameMs: null,
    // The trace document of the current state: `attn tutorial --json` or `attn encode --json`.
    trace() {
      const text = call('attnlab_trace', 'string', [], []);
      if (!text) throw new Error(JSON.parse(call('attnlab_state', 'string', [], [])).error);
      return JSON.parse(text);
    },
    // set({sentences, seed, d_model, num_heads, num_layers, d_ff, max_len, num_classes, mask, dropout,
    //      train, norm_first, model}); throws on unknown keys or bad values; returns the state.
    set(settings) {
      const error = call('attnlab_set', 'string', ['string'], [JSON.stringify(settings)]);
      if (error) throw new Error(error);
      return this.state();
    },
    // {settings, hash, error, compute_ms, compute_count, frames, last_frame_ms, view}
    state() { return JSON.parse(call('attnlab_state', 'string', [], [])); },
    selectStage(name) { call('attnlab_select_stage', null, ['string'], [name]); },
  };

  function bindPage() {
    const f = field();
    if (f) {
      let composing = false;
      f.addEventListener('compositionstart', () => { composing = true; });
      f.addEventListener('compositionend', () => { composing = false; call('attnlab_set_sentences', null, ['string'], [f.value]); });
      f.addEventListener('input', (e) => {
        if (composing || e.isComposing) return;
        call('attnlab_set_sentences', null, ['string'], [f.value]);
      });
    }
    window.addEventListener('hashchange', () => {
      if (applyingHash) return;
      const error = call('attnlab_set_hash', 'string', ['string'], [location.hash]);
      if (error) console.warn('attnlab: ' + error);
    });
  }
  const previous = Module.onRuntimeInitialized;
  Module.onRuntimeInitialized = function () {
    if (previous) previous();
    bindPage();
  };
})();
