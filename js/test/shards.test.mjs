// ggufAllShards() deep-equal to @huggingface/gguf 0.4.6's: a split model's shards over HTTP
// range requests and as local paths, and a file that is not a shard.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as hf from "@huggingface/gguf";
import { ggufAllShards, parseGgufShardFilename, RE_GGUF_FILE, RE_GGUF_SHARD_FILE } from "../src/index.js";
import { serve } from "../test-support/server.js";

const root = new URL("../..", import.meta.url).pathname;
const sample = join(root, "testdata/sample.gguf");

// The vocabulary files of llama.cpp's sources, when GGUF_LLAMA_SRC_DIR names them.
function llamaVocabs() {
  const llama = process.env.GGUF_LLAMA_SRC_DIR;
  if (!llama) return [];
  const dir = join(llama, "models");
  return readdirSync(dir).sort().filter((f) => /^ggml-vocab-.*\.gguf$/.test(f)).map((f) => join(dir, f));
}
const parts = [sample, ...llamaVocabs().slice(0, 4)];
while (parts.length < 3) parts.push(sample);
const n = String(parts.length).padStart(5, "0");
const names = parts.map((_, i) => `model-${String(i + 1).padStart(5, "0")}-of-${n}.gguf`);
const dir = mkdtempSync(join(tmpdir(), "libgguf-shards-"));
names.forEach((name, i) => symlinkSync(parts[i], join(dir, name)));
after(() => rmSync(dir, { recursive: true, force: true }));

const { server, base } = await serve(Object.fromEntries(names.map((name) => [name, join(dir, name)])));
after(() => server.close());

test(`${parts.length} shards over HTTP, from any shard's URL, as @huggingface/gguf reads them`, async () => {
  const want = await hf.ggufAllShards(`${base}/${names[0]}`);
  assert.equal(want.shards.length, parts.length);
  assert.deepStrictEqual(await ggufAllShards(`${base}/${names[0]}`), want);
  assert.deepStrictEqual(await ggufAllShards(`${base}/${names[1]}`, { parallelDownloads: 1 }), want);
});

test("shards as local paths, and a file that is not a shard", async () => {
  const local = join(dir, names[0]);
  assert.deepStrictEqual(await ggufAllShards(local, { allowLocalFile: true }), await hf.ggufAllShards(local, { allowLocalFile: true }));
  assert.deepStrictEqual(await ggufAllShards(sample, { allowLocalFile: true }), await hf.ggufAllShards(sample, { allowLocalFile: true }));
});

test("parallelDownloads below 1, and the shard names, as @huggingface/gguf has them", async () => {
  await assert.rejects(ggufAllShards(`${base}/${names[0]}`, { parallelDownloads: 0 }), TypeError);
  for (const f of ["a/b-00002-of-00010.gguf", "x.gguf", "x-1-of-2.gguf", "-00001-of-00001.gguf"]) {
    assert.deepStrictEqual(parseGgufShardFilename(f), hf.parseGgufShardFilename(f), f);
    assert.equal(RE_GGUF_FILE.test(f), hf.RE_GGUF_FILE.test(f));
    assert.equal(RE_GGUF_SHARD_FILE.test(f), hf.RE_GGUF_SHARD_FILE.test(f));
  }
});
