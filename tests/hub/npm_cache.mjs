// The npm package @huggingface/hub (pinned in tests/hub/package.json, installed by scripts/deps.sh) on a
// Hub cache folder, for tests/hub_check.py's check that attnlab and huggingface.js share one cache:
//   node npm_cache.mjs ENDPOINT CACHE_DIR REPO REVISION FILE...
// downloadFileToCacheDir for each file (with a commit hash as the revision, a file already in that
// snapshot is taken from the cache with no request); the last line printed is {FILE: path in the cache}.
import { downloadFileToCacheDir } from '@huggingface/hub';

const [hubUrl, cacheDir, repo, revision, ...files] = process.argv.slice(2);
const paths = {};
for (const path of files) paths[path] = await downloadFileToCacheDir({ repo, path, revision, hubUrl, cacheDir });
console.log(JSON.stringify(paths));
