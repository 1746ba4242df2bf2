// A static file server on 127.0.0.1 (a free port) for the browser checks (playground.test.js,
// tests/ort/bench.js). `resolve(name)` maps a URL path, without its leading slash, to a file, or null;
// every response carries `headers` (the cross-origin isolation ones, where a page needs threads).
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');

const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
                '.wasm': 'application/wasm', '.ttf': 'font/ttf' };

const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

// `name` under `root`, or null where it would leave it.
function inside(root, name) {
  const file = path.join(root, path.normalize(name));
  return file.startsWith(root) ? file : null;
}

function serveFiles(resolve, headers = {}) {
  const server = http.createServer((req, res) => {
    const file = resolve(decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, ''));
    if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404, headers);
      return res.end();
    }
    res.writeHead(200, Object.assign({ 'Content-Type': types[path.extname(file)] || 'application/octet-stream' }, headers));
    res.end(req.method === 'HEAD' ? undefined : fs.readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

module.exports = { serveFiles, inside, isolation };
