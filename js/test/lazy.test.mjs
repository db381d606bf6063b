// options.lazyArrays: large metadata arrays decoded on first access, the result deep-equal to
// @huggingface/gguf 0.4.6's; the sample and llama.cpp's vocabulary files (GGUF_LLAMA_SRC_DIR).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { gguf as hf } from "@huggingface/gguf";
import { gguf, open } from "../src/index.js";

const root = new URL("../..", import.meta.url).pathname;
const sample = join(root, "testdata/sample.gguf");

// The vocabulary files of llama.cpp's sources, when GGUF_LLAMA_SRC_DIR names them.
function llamaVocabs() {
  const llama = process.env.GGUF_LLAMA_SRC_DIR;
  if (!llama) return [];
  const dir = join(llama, "models");
  return readdirSync(dir).sort().filter((f) => /^ggml-vocab-.*\.gguf$/.test(f)).map((f) => join(dir, f));
}

for (const f of [sample, ...llamaVocabs()]) {
  test(`${f}: lazyArrays reads as @huggingface/gguf reads it`, async () => {
    const want = await hf(f, { allowLocalFile: true, computeParametersCount: true });
    const got = await gguf(f, { allowLocalFile: true, computeParametersCount: true, lazyArrays: f === sample ? 256 : true });
    assert.deepStrictEqual(Object.keys(got.metadata), Object.keys(want.metadata));
    const tokens = Object.getOwnPropertyDescriptor(got.metadata, "tokenizer.ggml.tokens");
    assert.equal(typeof tokens.get, "function", "the token array is not decoded yet");
    assert.deepStrictEqual(got, want);
    const kept = Object.getOwnPropertyDescriptor(got.metadata, "tokenizer.ggml.tokens");
    assert.equal(kept.get, undefined, "decoded once, then kept");
    assert.equal(got.metadata["tokenizer.ggml.tokens"], got.metadata["tokenizer.ggml.tokens"]);
  });
}

test("lazyArrays: a minimum length, eager arrays below it, a value set over a lazy one", async () => {
  const all = await gguf(sample, { allowLocalFile: true, lazyArrays: 0 });
  const none = await gguf(sample, { allowLocalFile: true, lazyArrays: 1e9 });
  for (const [k, v] of Object.entries(none.metadata)) {
    const d = Object.getOwnPropertyDescriptor(all.metadata, k);
    assert.equal(typeof d.get === "function", Array.isArray(v), k);
    assert.equal(Object.getOwnPropertyDescriptor(none.metadata, k).get, undefined, k);
  }
  all.metadata["tokenizer.ggml.scores"] = [1];
  assert.deepStrictEqual(all.metadata["tokenizer.ggml.scores"], [1]);
  const m = await open(sample, { allowLocalFile: true, lazyArrays: true });
  try {
    assert.deepStrictEqual(m.metadata, none.metadata);
  } finally {
    await m.close();
  }
  await assert.rejects(gguf(sample, { allowLocalFile: true, lazyArrays: "yes" }), TypeError);
});
