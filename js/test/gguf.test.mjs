// gguf() deep-equal to @huggingface/gguf 0.4.6's for the same file, read as a local path and
// given as bytes: the bundled sample, and llama.cpp's vocabulary files when GGUF_LLAMA_SRC_DIR
// names llama.cpp's sources (make llama-src).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { gguf as hf } from "@huggingface/gguf";
import { gguf } from "../src/index.js";

const root = new URL("../..", import.meta.url).pathname;
const files = [join(root, "testdata/sample.gguf")];
const llama = process.env.GGUF_LLAMA_SRC_DIR;
if (llama) {
  const dir = join(llama, "models");
  for (const f of readdirSync(dir).sort()) if (/^ggml-vocab-.*\.gguf$/.test(f)) files.push(join(dir, f));
}

for (const f of files) {
  test(`${f}: as @huggingface/gguf reads it`, async () => {
    const want = await hf(f, { allowLocalFile: true, computeParametersCount: true });
    assert.deepStrictEqual(await gguf(f, { allowLocalFile: true, computeParametersCount: true }), want);
    assert.deepStrictEqual(await gguf(readFileSync(f), { computeParametersCount: true }), want);
  });
}

test("a local path needs allowLocalFile, as in @huggingface/gguf", async () => {
  await assert.rejects(gguf(files[0]), /allowLocalFile/);
});

test("a file that is not GGUF is refused with libgguf's message and code", async () => {
  await assert.rejects(gguf(new Uint8Array(64)), (e) => e.code === 11 && /GGUF/.test(e.message));
});
