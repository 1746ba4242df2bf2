#!/usr/bin/env node
// A benchmark, not a test: how long the induction task's circuit takes to form in headless Chromium on
// the cross-origin isolated page (the threaded build training on a Web Worker over the machine's cores),
// its defaults played from a link (#train.task=induction) as a learner would. Prints, at each evaluation,
// the seconds since Play, the repeated segment's accuracy and the two heads' scores, then when the
// circuit formed (issue #53's bar: repeated accuracy >= 0.8, the induction and layer 0's previous-token
// scores >= 0.6) and the whole run's time.
//   node tests/browser/induction_time.js [SITE_DIR [THREADED_SITE_DIR]]
// (default build-web/web/site and build-web-mt/web/site; docs/training-lm.md quotes its output).
'use strict';
const fs = require('fs');
const path = require('path');
const { serveFiles, inside, isolation } = require('./static_server');
const { launchChromium } = require('./headless');

const root = path.join(__dirname, '..', '..');
const site = path.resolve(process.argv[2] || path.join(root, 'build-web', 'web', 'site'));
const threaded = path.resolve(process.argv[3] || path.join(root, 'build-web-mt', 'web', 'site'));

async function main() {
  for (const dir of [site, threaded])
    if (!fs.existsSync(path.join(dir, 'index.wasm'))) throw new Error(`no build in ${dir}`);
  const server = await serveFiles((name) => {
    const mt = name === 'mt' || name.startsWith('mt/');
    return inside(mt ? threaded : site, (mt ? name.slice(3) : name) || 'index.html');
  }, isolation);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    await page.goto(`http://127.0.0.1:${server.address().port}/#train.task=induction`);
    await page.waitForURL(/\/mt\//, { timeout: 30000 });
    await page.waitForFunction(() => window.attnlab && window.attnlab.firstFrameMs !== null, null, { timeout: 30000 });
    const setup = await page.evaluate(() => ({ isolated: self.crossOriginIsolated, cores: navigator.hardwareConcurrency,
                                               steps: attnlab.state().training.steps }));
    console.log(`isolated page: ${setup.isolated}, ${setup.cores} cores, ${setup.steps} steps`);
    const start = Date.now();
    await page.evaluate(() => attnlab.trainControl('play'));
    let seen = 0, formed = null;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const s = await page.evaluate(() => {
        const t = attnlab.state().training;
        return { step: t.step, steps: t.steps, threads: t.threads, evals: attnlab.trainingLog().filter((r) => 'val_loss' in r) };
      });
      const seconds = (Date.now() - start) / 1000;
      for (const e of s.evals.slice(seen)) {
        console.log(`${seconds.toFixed(1)} s  step ${e.step}: repeated accuracy ${e.val_repeated_accuracy.toFixed(3)}, ` +
                    `induction ${e.induction_score.toFixed(3)}, layer 0 previous-token ${e.previous_token_score.toFixed(3)}`);
        if (formed === null && e.val_repeated_accuracy >= 0.8 && e.induction_score >= 0.6 && e.previous_token_score >= 0.6)
          formed = { seconds, step: e.step };
      }
      seen = s.evals.length;
      if (s.step >= s.steps) {
        console.log(`the circuit formed by step ${formed ? formed.step : '—'} (${formed ? formed.seconds.toFixed(1) : '—'} s); ` +
                    `${s.steps} steps in ${seconds.toFixed(1)} s on ${s.threads} threads`);
        break;
      }
    }
  } finally {
    await browser.close();
    server.close();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
