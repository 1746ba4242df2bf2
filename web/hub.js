// The page's Hugging Face Hub client (docs/hub.md), behind the playground's "Hugging Face model" field and
// links with model=ORG/NAME@REVISION (web/main.cpp's WebHubDownload starts it; --post-js, beside api.js).
// As huggingface_hub's snapshot_download: the revision's commit and files from the Hub's API
// (GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true, as model_info(files_metadata=True)),
// then each file the model needs (core/model/hub_cache.hpp's list, asked of the engine) from
// {endpoint}/{repo}/resolve/{commit}/{file}, checked against the API's size and digest (an LFS file's
// SHA-256, a small file's git blob SHA-1) and kept in the browser's Cache Storage under that URL; the API's
// answer is kept last, so a reload or a second tab finds every file and opens the model with no request.
// A dropped connection is resumed with a Range request. The page sends no token.
(function () {
  if (typeof window === 'undefined') return;  // a Web Worker of the threaded build
  const CACHE = 'attnlab-hub-v1';
  const DEFAULT_ENDPOINT = 'https://huggingface.co';
  const RESUMES = 3;  // Range requests after a dropped connection, per file
  const downloads = new Map();  // id → AbortController
  const call = (name, ret, types, args) => Module.ccall(name, ret, types, args);

  // An error whose message is the user's to read (no "resume" of it).
  function refusal(message) {
    const e = new Error(message);
    e.refusal = true;
    return e;
  }

  // Why the server refused, in the words attn --model uses (native/hub.cpp's refuse).
  function refused(r, repo, revision, endpoint, file) {
    const code = r.headers.get('x-error-code') || '';
    const status = 'HTTP ' + r.status + (code ? ', ' + code : '');
    const what = "repository '" + repo + "'";
    if (code === 'RepoNotFound')
      return refusal(what + ' was not found at ' + endpoint + ' (' + status + '): check its name; a private repository ' +
                     'cannot be opened here (the page sends no token)');
    if (code === 'GatedRepo' || r.status === 401 || r.status === 403)
      return refusal(what + ' refused ' + file + ' (' + status + '): it is gated or private, and the page sends no ' +
                     'token: download it with attn --model (HF_TOKEN) and open the folder');
    if (code === 'RevisionNotFound') return refusal(what + " has no revision '" + revision + "' (" + status + ')');
    if (r.status === 404) return refusal(what + ' has no file ' + file + " at revision '" + revision + "' (" + status + ')');
    return refusal(file + ' of ' + repo + ': ' + status + ' from ' + endpoint);
  }

  async function get(url, init, ctx, file) {
    let r;
    try {
      r = await fetch(url, init);
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      const error = new Error('cannot reach ' + ctx.endpoint + ' for ' + file + ' of ' + ctx.repo + ' (' + e.message +
                              '): offline, or the server does not allow this page (CORS)');
      error.dropped = true;
      throw error;
    }
    if (!r.ok) throw refused(r, ctx.repo, ctx.revision, ctx.endpoint, file);
    return r;
  }

  // The revision's commit and files: {sha, siblings: [{rfilename, size, blobId, lfs: {sha256, size}}]}.
  async function repoInfo(ctx, cache) {
    const hit = cache && await cache.match(ctx.infoUrl);
    if (hit) return { info: await hit.json(), cached: true };
    const r = await get(ctx.infoUrl, { signal: ctx.signal }, ctx, 'its file list');
    let info;
    try {
      info = await r.json();
    } catch (e) {
      throw refusal('the answer of ' + ctx.endpoint + ' about ' + ctx.repo + ' is not JSON (is ' + ctx.endpoint +
                    ' a Hugging Face Hub?)');
    }
    if (!info || !/^[0-9a-f]{40}$/.test(String(info.sha)) || !Array.isArray(info.siblings))
      throw refusal('the answer of ' + ctx.endpoint + ' about ' + ctx.repo + ' has no commit or file list (is ' +
                    ctx.endpoint + ' a Hugging Face Hub?)');
    return { info, cached: false };
  }

  const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

  // The file's bytes against the API's size and digest: an LFS file's SHA-256, else git's blob SHA-1 (of
  // "blob <size>\0" + bytes). crypto.subtle exists on secure pages (https, localhost); elsewhere the size alone.
  async function verify(bytes, meta, file, ctx) {
    const size = meta.lfs ? meta.lfs.size : meta.size;
    if (typeof size === 'number' && bytes.length !== size)
      throw refusal(file + ' of ' + ctx.repo + ': the server sent ' + bytes.length + ' bytes, not the ' + size +
                    ' its file list gives; nothing was kept');
    if (!(window.crypto && crypto.subtle)) return;
    let kind, expected, digest;
    if (meta.lfs && meta.lfs.sha256) {
      kind = 'SHA-256', expected = meta.lfs.sha256;
      digest = hex(await crypto.subtle.digest('SHA-256', bytes));
    } else if (meta.blobId) {
      kind = 'git blob SHA-1', expected = meta.blobId;
      const head = new TextEncoder().encode('blob ' + bytes.length + '\0');
      const whole = new Uint8Array(head.length + bytes.length);
      whole.set(head);
      whole.set(bytes, head.length);
      digest = hex(await crypto.subtle.digest('SHA-1', whole));
    } else {
      return;
    }
    if (digest !== expected)
      throw refusal(file + ' of ' + ctx.repo + ' is corrupt: its ' + kind + ' is ' + digest + ', the Hub says ' +
                    expected + '; nothing was kept');
  }

  // GET into memory, resumed from the bytes received with a Range request when the connection drops.
  async function download(url, file, size, ctx) {
    const chunks = [];
    let have = 0;
    for (let attempt = 0; ; ++attempt) {
      try {
        const r = await get(url, { signal: ctx.signal, headers: have ? { Range: 'bytes=' + have + '-' } : {} }, ctx, file);
        if (have && r.status !== 206) chunks.length = 0, have = 0;  // the range ignored: the whole file again
        const reader = r.body.getReader();
        for (;;) {
          const part = await reader.read();
          if (part.done) break;
          chunks.push(part.value);
          have += part.value.length;
          ctx.report(file, have, size);
        }
        if (typeof size !== 'number' || have >= size) break;
        throw new Error('the server sent no more');
      } catch (e) {
        if (e.name === 'AbortError' || e.refusal) throw e;
        if (attempt >= RESUMES)
          throw refusal(file + ' of ' + ctx.repo + ': the download stopped at ' + have + ' of ' + size + ' bytes (' +
                        e.message + ')');
        console.info('attnlab: ' + file + ': the connection closed at ' + have + ' bytes: resuming');
      }
    }
    const bytes = new Uint8Array(have);
    let at = 0;
    for (const c of chunks) bytes.set(c, at), at += c.length;
    return bytes;
  }

  // The files the model needs, by its config (the engine's list) and its weights (one file, or the index
  // and the shards it names).
  function neededFiles(ctx, listed, config) {
    const ask = (fn, arg) => JSON.parse(call(fn, 'string', ['string', 'string'], [ctx.repo, arg]));
    const tokenizer = ask('attnlab_hub_files', config);
    if (tokenizer.error) throw refusal(tokenizer.error);
    for (const f of tokenizer.required)
      if (!listed.has(f)) throw refusal("repository '" + ctx.repo + "' has no file " + f + " at revision '" + ctx.revision + "'");
    const optional = tokenizer.optional.filter((f) => listed.has(f));
    if (listed.has('model.safetensors')) return { weights: ['model.safetensors'], rest: tokenizer.required.concat(optional) };
    if (!listed.has('model.safetensors.index.json'))
      throw refusal("the repository holds neither model.safetensors nor model.safetensors.index.json of " + ctx.repo +
                    " at revision '" + ctx.revision + "': attnlab reads safetensors weights");
    return { index: true, rest: tokenizer.required.concat(optional) };
  }

  async function snapshot(id, ctx) {
    const cache = window.caches ? await caches.open(CACHE).catch(() => null) : null;
    const got = await repoInfo(ctx, cache);
    const commit = got.info.sha;
    const listed = new Map(got.info.siblings.map((s) => [String(s.rfilename), s]));
    let earlier = 0;
    ctx.report = (file, done, total) => call('attnlab_hub_progress', null, ['number', 'string', 'number', 'number', 'number'],
                                             [id, file, done, total || 0, earlier]);
    const fetchFile = async (file) => {
      const meta = listed.get(file);
      if (!meta) throw refusal("repository '" + ctx.repo + "' has no file " + file + " at revision '" + ctx.revision + "'");
      const url = ctx.endpoint + '/' + ctx.repo + '/resolve/' + commit + '/' + file.split('/').map(encodeURIComponent).join('/');
      const size = meta.lfs ? meta.lfs.size : meta.size;
      ctx.report(file, 0, 0);
      const hit = cache && await cache.match(url);
      let bytes;
      if (hit) {
        bytes = new Uint8Array(await hit.arrayBuffer());
      } else {
        bytes = await download(url, file, size, ctx);
        await verify(bytes, meta, file, ctx);
        if (cache) await cache.put(url, new Response(bytes)).catch((e) => console.warn('attnlab: not kept: ' + e.message));
      }
      ctx.report(file, bytes.length, bytes.length);
      earlier += bytes.length;
      return bytes;
    };
    const files = new Map();
    files.set('config.json', await fetchFile('config.json'));
    const need = neededFiles(ctx, listed, new TextDecoder().decode(files.get('config.json')));
    let weights = need.weights;
    if (need.index) {
      const index = await fetchFile('model.safetensors.index.json');
      files.set('model.safetensors.index.json', index);
      const shards = JSON.parse(call('attnlab_hub_shards', 'string', ['string', 'string'], [ctx.repo, new TextDecoder().decode(index)]));
      if (shards.error) throw refusal(shards.error);
      weights = shards.shards;
    }
    for (const f of weights.concat(need.rest)) files.set(f, await fetchFile(f));
    // Last: with the file list cached, a reload asks nothing (every file it names is cached before it).
    if (cache && !got.cached) await cache.put(ctx.infoUrl, new Response(JSON.stringify(got.info))).catch(() => {});
    const folder = '/hub/' + id;
    FS.mkdirTree(folder);
    files.forEach((bytes, name) => FS.writeFile(folder + '/' + name, bytes));
    return folder;
  }

  Module.attnlabHubStart = function (id, repo, revision, endpoint) {
    const controller = new AbortController();
    downloads.set(id, controller);
    endpoint = String(endpoint || DEFAULT_ENDPOINT).replace(/\/+$/, '');
    const ctx = {
      repo, revision, endpoint, signal: controller.signal,
      infoUrl: endpoint + '/api/models/' + repo + '/revision/' + encodeURIComponent(revision) + '?blobs=true',
    };
    const finish = (folder, error) => {
      if (!downloads.has(id)) return;  // cancelled: the engine forgot it
      downloads.delete(id);
      call('attnlab_hub_finished', null, ['number', 'string', 'string'], [id, folder, error]);
    };
    snapshot(id, ctx).then((folder) => finish(folder, ''), (e) => finish('', e.message || String(e)));
  };
  Module.attnlabHubCancel = function (id) {
    const controller = downloads.get(id);
    downloads.delete(id);
    if (controller) controller.abort();
  };
  // The engine has read the model (or given up on it): its MEMFS copy goes.
  Module.attnlabHubForget = function (id) {
    const folder = '/hub/' + id;
    try {
      for (const name of FS.readdir(folder)) if (name !== '.' && name !== '..') FS.unlink(folder + '/' + name);
      FS.rmdir(folder);
    } catch (e) { /* nothing was written */ }
  };
})();
