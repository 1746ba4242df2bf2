// The page's Hugging Face Hub client (web/hub.js) in headless Chromium, against tests/hub/hub_server.py
// (started here on 127.0.0.1, stopped at the end): a link with model=ORG/NAME&hub=ENDPOINT opens a Llama
// folder equal to attn encode --model-dir's; only the model's files are asked for; a reload opens it
// with no request (Cache Storage); a dropped connection is resumed with a Range request; Cancel stops a
// download and keeps the model shown; a corrupted file, a gated or missing repository, a server that is no Hub and a malformed name are messages, and a
// corrupted file is not kept.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const readline = require('readline');

const fixtures = path.join(__dirname, '..', 'fixtures', 'pretrained');

async function startHub() {
  const proc = spawn('/usr/bin/python3', [path.join(__dirname, '..', 'hub', 'hub_server.py'), fixtures],
                     { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    readline.createInterface({ input: proc.stdout }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error('hub_server.py exited with ' + code)));
  });
  const endpoint = 'http://127.0.0.1:' + line.trim().split(' ')[0];
  const post = (what, body) => fetch(endpoint + what, { method: 'POST', body: JSON.stringify(body || {}) });
  return {
    endpoint,
    async reset(faults) {
      await post('/_reset');
      if (faults) await post('/_control', faults);
    },
    async log() { return (await fetch(endpoint + '/_log')).json(); },
    stop() { proc.stdin.end(); proc.kill(); },
  };
}

// openModel's outcome in the page: {state} or {error}.
function open(page, name, endpoint) {
  return page.evaluate(async (a) => {
    try {
      return { state: await attnlab.openModel(a.name, { endpoint: a.endpoint }) };
    } catch (e) {
      return { error: e.message };
    }
  }, { name, endpoint });
}

async function checkHub(browser, url, errors, t) {
  const hub = await startHub();
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });  // its own Cache Storage
  try {
    const page = await context.newPage();
    // The refusals below are failed loads, which Chromium logs as errors: only the others count.
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    const llama = 'attnlab-test/llama-tiny';
    const sentences = ['the cat sat on the mat', 'a dog ran'];
    const link = url + '#model=' + encodeURIComponent(llama) + '&hub=' + encodeURIComponent(hub.endpoint) +
                 sentences.map((s) => '&s=' + encodeURIComponent(s)).join('');
    const opened = async () => {
      await page.goto(link);
      await page.waitForFunction((name) => window.attnlab && attnlab.firstFrameMs !== null &&
                                           attnlab.state().loaded_hub === name && attnlab.state().error === '', llama,
                                 { timeout: 30000 });
      return page.evaluate(() => ({ state: attnlab.state(), trace: attnlab.trace() }));
    };
    const first = await opened();
    const cli = t.cliJson(['encode', '--model-dir', path.join(fixtures, 'llama_tiny'), ...sentences.flatMap((s) => ['--sentence', s])]);
    const near = cli ? t.closeToFixture(first.trace, cli) : { problems: [], worst: 0 };
    t.check(first.state.error === '' && first.state.loaded_model === 'LlamaForCausalLM: ' + llama &&
            near.problems.length === 0 && /model=attnlab-test%2Fllama-tiny/.test(first.state.hash) && /hub=/.test(first.state.hash),
            `a link with model=${llama}&hub=… opens it from the Hub` + (cli ? `, attn encode --model-dir's within ${near.worst.toExponential(2)}` : '') +
            ` (${first.state.loaded_model}; ${first.state.error} ${near.problems.slice(0, 3).join('; ')})`);
    const asked = (await hub.log()).map((r) => r.method + ' ' + r.path.split('?')[0]);
    const files = asked.filter((r) => r.includes('/resolve/')).map((r) => r.split('/').pop()).sort();
    t.check(asked.some((r) => r.startsWith('GET /api/models/' + llama + '/revision/main')) &&
            JSON.stringify(files) === JSON.stringify(fs.readdirSync(path.join(fixtures, 'llama_tiny')).sort()),
            'the page asked for the revision\'s file list and the model\'s files alone: ' + files.join(', '));

    await hub.reset();
    const again = await opened();
    const requests = await hub.log();
    t.check(again.state.loaded_hub === llama && requests.length === 0,
            `a reload opens ${llama} from the browser's Cache Storage with no request (${requests.length} made)`);

    // A dropped connection in the middle of the weights (streamed in 4 KiB pieces): resumed with a Range request.
    const gpt2 = 'attnlab-test/gpt2-tiny';
    await hub.reset({ drop_after: 65536, drop_times: 1, delay: 0.01 });
    const resumed = await open(page, gpt2, hub.endpoint);
    const cdnGets = (await hub.log()).filter((r) => r.server === 'cdn' && r.method === 'GET').map((r) => r.headers.range || 'whole');
    t.check(resumed.state && resumed.state.loaded_hub === gpt2 && cdnGets.length === 2 && /^bytes=[1-9][0-9]*-$/.test(cdnGets[1]),
            `a connection dropped after 64 KiB is resumed with a Range request (${resumed.error || cdnGets.join(', ')})`);

    // A corrupted byte: refused and not kept (the next try downloads it again, whole).
    const bert = 'attnlab-test/bert-tiny';
    await hub.reset({ corrupt: true });
    const corrupt = await open(page, bert, hub.endpoint);
    await hub.reset();
    const clean = await open(page, bert, hub.endpoint);
    const weights = (await hub.log()).filter((r) => r.server === 'cdn' && r.method === 'GET');
    t.check(/is corrupt: its SHA-256 is [0-9a-f]{64}, the Hub says/.test(corrupt.error || '') && clean.state &&
            clean.state.loaded_hub === bert && weights.length === 1,
            `a corrupted file is refused and not kept: "${corrupt.error}"; then ${clean.error || 'opened with the weights asked again'}`);

    // Cancel in the middle of the weights (slowed down): openModel rejects, the model shown before stays.
    await hub.reset({ delay: 0.2 });
    const cancelled = page.evaluate((a) => attnlab.openModel(a.name, { endpoint: a.endpoint }).then(() => 'opened', (e) => e.message),
                                    { name: 'attnlab-test/gpt2-sharded', endpoint: hub.endpoint });
    await page.waitForFunction(() => attnlab.state().view.hub.done > 0 && /safetensors$/.test(attnlab.state().view.hub.file),
                               null, { timeout: 20000 });
    await page.evaluate(() => attnlab.cancelDownload());
    const cancelMessage = await cancelled;
    const afterCancel = await page.evaluate(() => attnlab.state());
    t.check(/download cancelled/.test(cancelMessage) && afterCancel.loaded_hub === bert && afterCancel.error === '',
            `Cancel stops a download, the model shown before stays: ${cancelMessage} (loaded ${afterCancel.loaded_hub}, ` +
            `error "${afterCancel.error}")`);
    await hub.reset();

    const refusals = [
      ['attnlab-test/gated-gpt2', hub.endpoint, /gated or private, and the page sends no token/],
      ['attnlab-test/no-such-model', hub.endpoint, /was not found at .*RepoNotFound/],
      ['attnlab-test/gpt2-tiny@v9', hub.endpoint, /has no revision 'v9'/],
      ['attnlab-test/gpt2-no-merges', hub.endpoint, /has no file merges\.txt/],
      [gpt2, hub.endpoint + '/plain', /is not JSON \(is .* a Hugging Face Hub\?\)/],
      ['bad//name', hub.endpoint, /repository/],
    ];
    for (const [name, endpoint, pattern] of refusals) {
      const r = await open(page, name, endpoint);
      t.check(pattern.test(r.error || ''), `openModel('${name}') is refused: ${r.error || 'opened'}`);
    }
    const shown = await page.evaluate(() => attnlab.state());
    t.check(shown.loaded_hub === bert && shown.error === '', 'after the refusals the last model opened stays shown');
    await page.close();
  } finally {
    await context.close();
    hub.stop();
  }
}

module.exports = { checkHub };
