// window.attnlab: the playground's JS API, and the glue between the page and the C++ shell
// (--post-js: runs inside the Emscripten module, so it sees Module, FS, ccall and GLFW).
(function () {
  if (typeof window === 'undefined') return;  // a Web Worker of the threaded build: no page there
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

  // ImGui's Emscripten backend listens for the wheel on the whole document and prevents its default, which
  // a passive listener (Chrome's default there) cannot: an error each time. Its listener gets the canvas's
  // wheel events only, unpassive (zooming a heatmap does not scroll the page; the text field scrolls).
  const addListener = document.addEventListener;
  document.addEventListener = function (type, handler, options) {
    if (type !== 'wheel' && type !== 'mousewheel') return addListener.call(this, type, handler, options);
    const onCanvas = function (e) { if (e.target && e.target.id === 'canvas') return handler.call(this, e); };
    const capture = options === true || Boolean(options && options.capture);
    return addListener.call(this, type, onCanvas, { capture, passive: false });
  };

  // The font is a static file next to the page, fetched while the wasm compiles; it must be in the
  // file system before main runs. Module.locateFile (Emscripten's hook, as for index.wasm) may put it
  // elsewhere: a page with everything inlined (python/attnlab/_playground.py) gives a blob: URL.
  const font = fetch(locateFile('NanumGothic-subset.ttf')).then((r) => {
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

  // Model files: written into MEMFS, read by the C++ side (which sorts an array of files into weights,
  // config and vocabulary by name and content), then removed (the loaded model holds its own copy).
  let loads = 0;
  function loadFiles(entries) {  // [{name, bytes}] or {weights: {name, bytes}, config: …, vocab: …}
    const dir = '/models/' + (++loads);
    FS.mkdirTree(dir);
    const write = (f) => {
      const p = dir + '/' + String(f.name).replace(/[\/\0]/g, '_');
      FS.writeFile(p, f.bytes);
      return p;
    };
    let arg;
    if (Array.isArray(entries)) arg = entries.map(write);
    else {
      arg = {};
      for (const role of Object.keys(entries)) arg[role] = write(entries[role]);
    }
    try {
      return call('attnlab_load_model', 'string', ['string'], [JSON.stringify(arg)]);
    } finally {
      for (const name of FS.readdir(dir)) if (name !== '.' && name !== '..') FS.unlink(dir + '/' + name);
      FS.rmdir(dir);
    }
  }
  // Of a checkpoint folder's files: true for those the model is read from, false for a pickle (named only),
  // null for the rest.
  function checkpointFile(name) {
    if (/^(config\.json|vocab\.txt|vocab\.json|merges\.txt|tokenizer_config\.json|tokenizer\.json|model\.safetensors\.index\.json)$|\.safetensors$/.test(name)) return true;
    return /\.(bin|pt|pth)$/.test(name) ? false : null;
  }
  function toBytes(value, role) {
    if (value instanceof Uint8Array) return value;
    if (value instanceof ArrayBuffer) return new Uint8Array(value);
    if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    if (typeof value === 'string') return new TextEncoder().encode(value);
    if (value && typeof value === 'object') return new TextEncoder().encode(JSON.stringify(value));
    throw new Error(role + ': expected bytes, a JSON string or an object');
  }

  let applyingHash = false;
  let pageLang = null;
  let pageTexts = {};
  // A page message in the UI's language: the table's text with each %s filled in turn.
  const say = (key, ...args) => (pageTexts[key] || key).replace(/%s/g, () => String(args.shift()));
  // The page's own labels (elements with data-tr="page_…"; data-tr-title for their tooltips) in the UI's
  // language: the texts come from the UI's table (ui/strings_table.inc).
  function translatePage(lang, labels) {
    if (lang === null || lang === pageLang) return;
    pageLang = lang;
    document.documentElement.lang = lang;
    const texts = pageTexts = JSON.parse(labels);
    for (const el of document.querySelectorAll('[data-tr]')) {
      const text = texts[el.dataset.tr];
      if (text !== undefined) el.textContent = text;
    }
  }
  Module.attnlabConfigChanged = function (hash, sentences, lang, labels) {
    translatePage(lang, labels);
    // An absolute URL: a relative one resolves against the base URL, which in an about:srcdoc frame (a
    // notebook's output) is the parent's, and replaceState refuses another document's URL.
    const target = location.href.split('#')[0] + (hash ? '#' + hash : '');
    if ((location.hash || '') !== (hash ? '#' + hash : '')) {
      applyingHash = true;
      try {
        history.replaceState(null, '', target);
      } catch (e) {  // a frame whose URL cannot change: the settings stay in state().hash
        console.info('attnlab: the URL hash cannot follow the settings here (' + e.message + ')');
      } finally {
        applyingHash = false;
      }
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

  // Copy CSV / Copy LaTeX: the system clipboard where the page may write it (the click just happened);
  // the text also stays in attnlab.copied (for tests, and for pages the clipboard refuses).
  Module.attnlabCopy = function (text) {
    window.attnlab.copied = text;
    if (navigator.clipboard && navigator.clipboard.writeText)
      navigator.clipboard.writeText(text).catch((e) => console.info('attnlab: clipboard: ' + e.message));
  };

  // Training data: kept in MEMFS (a reset reads it again), one folder per file chosen.
  let dataFiles = 0;
  function writeDataFile(value) {  // {name, bytes} | bytes | string: returns its MEMFS path
    const f = value && typeof value === 'object' && 'bytes' in value ? value : { name: 'data.jsonl', bytes: value };
    const dir = '/train-data/' + (++dataFiles);
    FS.mkdirTree(dir);
    const path = dir + '/' + String(f.name || 'data.jsonl').replace(/[\/\0]/g, '_');
    FS.writeFile(path, toBytes(f.bytes, 'data'));
    return path;
  }
  function train(settings) {
    const s = Object.assign({}, settings || {});
    if (s.data != null && typeof s.data !== 'string') s.data = writeDataFile(s.data);
    else if (typeof s.data === 'string' && !s.data.startsWith('/train-data/')) s.data = writeDataFile({ name: 'data.jsonl', bytes: s.data });
    const error = call('attnlab_train', 'string', ['string'], [JSON.stringify(s)]);
    if (error) throw new Error(error);
  }
  const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

  window.attnlab = {
    ready,
    firstFrameMs: null,
    copied: null,  // the last text Copy CSV / Copy LaTeX put on the clipboard
    runtimeReadyMs: null,
    // The trace document of the current state: `attn tutorial --json` or `attn encode --json`; trace('a'):
    // the compare view's pinned run A's.
    trace(which) {
      if (which === 'a') {
        const a = call('attnlab_pinned_trace', 'string', [], []);
        if (!a) throw new Error('no run is pinned as A (compare())');
        return JSON.parse(a);
      }
      const text = call('attnlab_trace', 'string', [], []);
      if (!text) throw new Error(JSON.parse(call('attnlab_state', 'string', [], [])).error);
      return JSON.parse(text);
    },
    // compare({a, b, rtol, atol}): pins run A — the current settings with `a`'s applied (set()'s keys), or
    // without `a` the current run as it is — then applies `b`'s settings to the current run (B), and shows
    // the Compare tab: the selected stage of A and B side by side and B − A. Returns `attn diff A B --json`'s
    // document ({rtol, atol, compared, first_differing, passed, stages: [{name, status, max_abs, max_rel,
    // max_ulps, …}]}). In the URL hash as compare=1&a.KEY=VALUE. compare(null) clears A. Throws with the
    // reason settings are refused (nothing changed then).
    compare(request) {
      const out = JSON.parse(call('attnlab_compare', 'string', ['string'], [JSON.stringify(request === undefined ? {} : request)]));
      if (out.error) throw new Error(out.error);
      return out;
    },
    // set({sentences, seed, d_model, num_heads, num_layers, d_ff, max_len, num_classes, mask, dropout,
    //      train, norm_first, model, hub, lang, tour, ablate, ablate_mlp, ablation}); model: 'tutorial',
    //      'transformer', 'loaded' or a Hub model 'ORG/NAME[@REVISION]' (downloaded, as openModel); hub: the
    //      Hub's address ('' for huggingface.co); lang: 'en', 'ko' or '' (the
    //      browser's language); tour: the guided tour's step, as selectView({tour}); ablate: heads 'L.H,…',
    //      ablate_mlp: layers 'L,…', ablation: 'zero' | 'mean'; throws on unknown keys or bad values;
    //      returns stats() (cheap: state() serialises the view, which timing a change must not include).
    set(settings) {
      const error = call('attnlab_set', 'string', ['string'], [JSON.stringify(settings)]);
      if (error) throw new Error(error);
      return this.stats();
    },
    // ablate(heads, {kind, mlps}): ablates heads ('0.1,1.3' or [[0, 1], [1, 3]]; [] restores them all) and
    // feed-forward blocks (mlps: [layer, …], default none) with zeros or, kind 'mean', their means over the
    // sentences; every stage and the outputs follow (the Interventions tab). Returns stats().
    ablate(heads, options) {
      const list = Array.isArray(heads) ? heads.map((h) => (Array.isArray(h) ? h.join('.') : String(h))).join(',') : String(heads || '');
      const o = options || {};
      return this.set({ ablate: list, ablate_mlp: (o.mlps || []).join(','), ablation: o.kind || 'zero' });
    },
    // The head detectors' scores on the current sentences, as `attn heads --json` gives them:
    // {previous_token: {axes: ['layer', 'head'], scores: [[…]]}, duplicate_token: …, induction: …}.
    detectHeads() {
      const out = JSON.parse(call('attnlab_detect_heads', 'string', [], []));
      if (out.error) throw new Error(out.error);
      return out.detectors;
    },
    // generate({prompt, max_new_tokens, temperature, top_k, top_p, seed}): the loaded GPT-2 or Llama-family
    // decoder continues the prompt as attn generate does (docs/generate.md); returns its --json document; throws with the reason.
    generate(settings) {
      const out = JSON.parse(call('attnlab_generate', 'string', ['string'], [JSON.stringify(settings || {})]));
      if (out.error) throw new Error(out.error);
      return out;
    },
    // await patch({clean, corrupted, answer, wrong, label}): activation patching from the clean into the
    // corrupted sentence (empty: the first two sentences) with GPT-2's logit difference (answer, wrong: one
    // token each) or a classifier's label margin, as the Interventions tab's Run button; the inputs join
    // the settings (patch.*). Runs in slices, yielding to the page, and resolves with `attn patch --json`'s
    // document ({model, clean, corrupted, metric, runs, layers_run, layers_full, patches}).
    async patch(settings) {
      const s = {};
      for (const k of ['clean', 'corrupted', 'answer', 'wrong', 'label']) {
        if (settings && settings[k] != null) s['patch.' + k] = String(settings[k]);
      }
      this.set(s);
      let out = JSON.parse(call('attnlab_patch_start', 'string', [], []));
      while (!out.error && !out.patches) {
        await pause();
        out = JSON.parse(call('attnlab_patch_steps', 'string', ['number'], [20]));
      }
      if (out.error) throw new Error(out.error);
      return out;
    },
    // {settings, hash, lang (the UI's language), error, status, loaded_model, loaded_hub (a Hub model's
    //  ORG/NAME[@REVISION]), compute_ms, compute_count, frames, last_frame_ms, frame_allocations, view: {tab,
    //  stage, tour, lang, hub: {name, running, error, file, done, total}, …}, training}
    state() { return JSON.parse(call('attnlab_state', 'string', [], [])); },
    // {frames, last_frame_ms, frame_allocations, compute_ms, compute_count}: cheap, for polling.
    stats() { return JSON.parse(call('attnlab_stats', 'string', [], [])); },
    selectStage(name) { call('attnlab_select_stage', null, ['string'], [name]); },
    // selectView({tab: 'stage'|'masks'|'positional_encoding'|'interventions'|'train'|'generate'|'tour', stage,
    // batch, layer, head, tour, train_score, generate, generate_token, generate_layer}): what the canvas shows
    // from the next frame on (indices clamped); tour: the guided tour's step (1 to 15; it selects the step's
    // stage, and the model it needs; 0 ends the tour); generate: the Generate tab's {prompt, max_new_tokens,
    // temperature, top_k, top_p, seed}, generated a token a frame (state().view.generate follows it).
    // Throws on unknown keys and settings the generation refuses.
    selectView(view) {
      const error = call('attnlab_select_view', 'string', ['string'], [JSON.stringify(view)]);
      if (error) throw new Error(error);
    },
    // The views a layout check visits: [{tab, stage, model_view}, …] for selectView; after two frames,
    // state().view.layout is {boxes, problems} of what the canvas drew (labels, legends or heatmaps that
    // overlap or are cut off).
    layoutViews() { return JSON.parse(call('attnlab_layout_views', 'string', [], [])); },
    // train({task, data, text, steps, batch_size, optimizer, lr, seed, eval_every, seq_len, d_model, …}):
    // attn train's options without dashes (inner dashes as underscores); `data` is a labelled file's bytes or
    // text, or {name, bytes} (a .txt name with task 'text': a language model of it); `text` a language
    // model's text itself (task 'text' or 'korean'). Resets the run (paused at step 0); throws with the
    // reason settings are refused.
    train(settings) { train(settings); return this.state().training; },
    // Runs n steps (in chunks, yielding to the page between them) and resolves with their log records,
    // as `attn train --log` writes them.
    async trainSteps(n) {
      const records = [];
      for (let left = Math.max(0, Math.floor(n)); left > 0;) {
        const chunk = Math.min(left, 50);
        const out = JSON.parse(call('attnlab_train_steps', 'string', ['number'], [chunk]));
        if (out.error) throw new Error(out.error);
        for (const r of out.records) records.push(r);
        if (!out.records.some((r) => 'loss' in r)) break;  // the run is over
        left -= chunk;
        await pause();
      }
      return records;
    },
    // play / pause / reset, as the Train tab's buttons.
    trainControl(what) {
      const error = call('attnlab_train_control', 'string', ['string'], [String(what)]);
      if (error) throw new Error(error);
    },
    // Every record of the run so far.
    trainingLog() { return JSON.parse(call('attnlab_training_log', 'string', [], [])); },
    // await openModel('ORG/NAME[@REVISION]', {endpoint}): a Hugging Face Hub model downloaded (web/hub.js: kept
    // in the browser's Cache Storage, so a reload asks nothing) and switched to, as the "Hugging Face model"
    // field does; set({model, hub}) with the link's keys (model=ORG/NAME&hub=ENDPOINT). Resolves with state()
    // once the model is read; rejects with the reason it was not.
    async openModel(name, options) {
      const s = { model: String(name) };
      if (options && options.endpoint != null) s.hub = String(options.endpoint);
      this.set(s);
      const wanted = this.state().settings.model;  // the name as links write it (no @main)
      const error = call('attnlab_hub_open', 'string', [], []);
      if (error) throw new Error(error);
      for (;;) {
        const st = this.state();
        const hub = st.view.hub;
        if (st.loaded_hub === wanted) return st;
        if (hub.name === wanted && !hub.running && hub.error) throw new Error(hub.error);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    // The Hub download's Cancel button: openModel rejects, the model shown before stays.
    cancelDownload() { call('attnlab_hub_cancel', null, [], []); },
    // loadModel({weights, config, vocab}): the files of `attn encode --weights/--config/--vocab`, each an
    // ArrayBuffer or typed array, a JSON string or a plain object; weights required. Or an array of
    // {name, bytes}: files sorted by name and content, as the Model files… picker does (a BERT / GPT-2
    // checkpoint: config.json, model.safetensors, vocab.txt or vocab.json + merges.txt; a Llama-family
    // decoder's: config.json, model.safetensors or its shards and their index, tokenizer.json). Switches to the
    // model (settings.model 'loaded'); throws with the reason a file is refused; returns stats().
    loadModel(files) {
      if (Array.isArray(files)) {
        const error = loadFiles(files.map((f, i) => ({ name: String((f && f.name) || 'file' + i), bytes: toBytes(f && f.bytes, 'file ' + i) })));
        if (error) throw new Error(error);
        return this.stats();
      }
      const ext = { weights: '.safetensors', config: '.json', vocab: '.json' };
      const entries = {};
      // No destructuring here: Debian's Emscripten minifier (acorn-optimizer) drops `for (const [a, b] of …)`.
      for (const role of Object.keys(files || {})) {
        const value = files[role];
        if (!(role in ext)) throw new Error('unknown model file role ' + role + ' (weights, config, vocab)');
        if (value != null) entries[role] = { name: role + ext[role], bytes: toBytes(value, role) };
      }
      const error = loadFiles(entries);
      if (error) throw new Error(error);
      return this.stats();
    },
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
    for (const id of ['model-files', 'model-folder']) {
      const picker = document.getElementById(id);
      if (picker) picker.addEventListener('change', async () => {
        // A folder holds more than the model needs (another format's weights, a README): only the files
        // a checkpoint is read from are read, and a pickle only by name, for the message saying to convert it.
        const files = id === 'model-files' ? [...picker.files] : [...picker.files].filter((f) => checkpointFile(f.name) !== null);
        picker.value = '';  // choosing the same files again fires 'change' again
        if (!files.length) return;
        const note = document.getElementById('model-note');
        const show = (text) => {
          if (!note) return;
          note.textContent = note.title = text;
          delete note.dataset.tr;  // a message now, not the label to translate
        };
        // How far a large checkpoint has got: the files' bytes as they arrive, then the engine's check.
        const read = (f) => id === 'model-folder' && !checkpointFile(f.name) ? 0 : f.size;
        const mib = (n) => (n / 1048576).toFixed(1);
        const total = files.reduce((n, f) => n + read(f), 0);
        let done = 0;
        show(say('page_reading', mib(total)));
        const chosen = await Promise.all(files.map(async (f) => {
          const bytes = read(f) ? new Uint8Array(await f.arrayBuffer()) : new Uint8Array(0);
          done += bytes.length;
          show(say('page_reading_of', mib(done), mib(total)));
          return { name: f.name, bytes };
        }));
        show(say('page_checking'));
        await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));  // shown before the engine runs
        const error = loadFiles(chosen);
        // The model's name lists the files it was read from (not a folder's README or pickle).
        show(error ? say('page_not_loaded', error) : say('page_loaded', window.attnlab.state().loaded_model));
      });
    }
    // A text file as the sentences (one a line): long inputs need not be pasted.
    const textPicker = document.getElementById('sentences-file');
    if (textPicker) textPicker.addEventListener('change', async () => {
      const file = textPicker.files[0];
      textPicker.value = '';
      if (!file) return;
      const text = await file.text();
      if (f) f.value = text;
      call('attnlab_set_sentences', null, ['string'], [text]);
    });
    const dataPicker = document.getElementById('train-data');
    if (dataPicker) dataPicker.addEventListener('change', async () => {
      const f = dataPicker.files[0];
      dataPicker.value = '';
      if (!f) return;
      const note = document.getElementById('train-note');
      if (note) delete note.dataset.tr;  // a message from here on, not the label to translate
      try {
        // A plain text trains a character language model (the task text); else a labelled file the classifier.
        const data = { name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) };
        train(/\.txt$/i.test(f.name) ? { task: 'text', data } : { data });
        if (note) note.textContent = note.title = say('page_training_on', f.name);
        window.attnlab.selectView({ tab: 'train' });
      } catch (e) {
        if (note) note.textContent = note.title = say('page_not_used', e.message);
      }
    });
    window.addEventListener('hashchange', () => {
      if (applyingHash) return;
      const error = call('attnlab_set_hash', 'string', ['string'], [location.hash]);
      if (error) console.warn('attnlab: ' + error);
    });
  }
  const previous = Module.onRuntimeInitialized;
  Module.onRuntimeInitialized = function () {
    window.attnlab.runtimeReadyMs = performance.now();  // wasm compiled and the font in MEMFS
    if (previous) previous();
    bindPage();
  };
})();
