// gguf() over HTTP range requests from a loopback server, deep-equal to @huggingface/gguf
// 0.4.6's over the same server; a server that ignores ranges is refused.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { gguf as hf } from "@huggingface/gguf";
import { gguf } from "../src/index.js";
import { serve } from "../test-support/server.js";

const root = new URL("../..", import.meta.url).pathname;
const files = { "sample.gguf": join(root, "testdata/sample.gguf") };
const llama = process.env.GGUF_LLAMA_SRC_DIR;
if (llama) {
  for (const f of readdirSync(join(llama, "models"))) {
    if (/^ggml-vocab-(llama-bpe|gemma-4|llama-spm)\.gguf$/.test(f)) files[f] = join(llama, "models", f);
  }
}
// /ranges/NAME with Range support, /whole/NAME ignoring Range.
let requests = 0;
const { server, base } = await serve(files, { prefix: "/ranges/", onRequest: () => requests++ });
after(() => server.close());

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
