// Threads in WebAssembly under node: attn-bench.js of the pthreads build (build-web-mt) on 1 and 2 threads,
// and of the build without threads (build-web), give the same bytes: the encoder's output and the first
// training steps' losses (their FNV-1a hashes, --json).
// Usage: node threads.test.js SINGLE/attn-bench.js THREADED/attn-bench.js
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');

const [single, threaded] = process.argv.slice(2);
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok' : 'FAILED'}: ${what}`);
  if (!ok) failures++;
}

function bench(script, threads) {
  const out = execFileSync(process.execPath, [script, '--quick', '--json', '--threads', String(threads), 'encoder', 'train'],
                           { encoding: 'utf8', timeout: 300000 });
  const doc = JSON.parse(out);
  const hashes = doc.results.map((r) => `${r.case} ${JSON.stringify(r.params)} ` +
                                        (r.output_fnv1a64 || r.losses_fnv1a64));
  return { threads: doc.threads, hashes };
}

for (const script of [single, threaded]) check(script && fs.existsSync(script), `${script} is built`);
if (failures === 0) {
  const one = bench(single, 1), mt1 = bench(threaded, 1), mt2 = bench(threaded, 2);
  console.log([...one.hashes, ...mt2.hashes].join('\n'));
  check(mt2.threads === 2, `the threaded build runs on 2 threads (it says ${mt2.threads})`);
  check(one.hashes.length === 3 && JSON.stringify(mt1.hashes) === JSON.stringify(one.hashes),
        'the threaded build on 1 thread gives the bytes of the build without threads');
  check(JSON.stringify(mt2.hashes) === JSON.stringify(one.hashes), 'on 2 threads too');
}
process.exit(failures ? 1 : 0);
