// gguf() over HTTP range requests from a loopback server, deep-equal to @huggingface/gguf
// 0.4.6's over the same server; a server that ignores ranges is refused.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { gguf as hf } from "@huggingface/gguf";
import { gguf } from "../src/index.js";

const root = new URL("../..", import.meta.url).pathname;
const files = { "sample.gguf": join(root, "testdata/sample.gguf") };
const llama = process.env.GGUF_LLAMA_SRC_DIR;
if (llama) {
  for (const f of readdirSync(join(llama, "models"))) {
    if (/^ggml-vocab-(llama-bpe|gemma-4|llama-spm)\.gguf$/.test(f)) files[f] = join(llama, "models", f);
  }
}
let requests = 0;
const server = createServer((req, res) => {
  requests++;
  const [, kind, name] = req.url.split("/");
  const body = readFileSync(files[name]);
  const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
  if (kind !== "ranges" || !m) {
    res.writeHead(200, { "content-length": body.length });
    return res.end(body);
  }
  const start = Number(m[1]), end = Math.min(Number(m[2]), body.length - 1);
  if (start >= body.length) {
    res.writeHead(416, { "content-range": `bytes */${body.length}` });
    return res.end();
  }
  res.writeHead(206, { "content-range": `bytes ${start}-${end}/${body.length}`, "content-length": end - start + 1 });
  res.end(body.subarray(start, end + 1));
});
server.keepAliveTimeout = 600_000; // not closed between a test's requests on a loaded machine
await new Promise((r) => server.listen(0, "127.0.0.1", r));
after(() => server.close());
const base = `http://127.0.0.1:${server.address().port}`;

for (const name of Object.keys(files)) {
  test(`${name} over HTTP ranges: as @huggingface/gguf reads it`, async () => {
    const url = `${base}/ranges/${name}`;
    const want = await hf(url, { computeParametersCount: true });
    requests = 0;
    assert.deepStrictEqual(await gguf(url, { computeParametersCount: true }), want);
    assert.ok(requests <= 4, `${requests} requests`);
  });
}

test("a server that ignores ranges is refused", async () => {
  await assert.rejects(gguf(`${base}/whole/sample.gguf`), /HTTP 200/);
});
