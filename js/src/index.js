// libgguf for JavaScript: gguf() and ggufAllShards(), as @huggingface/gguf 0.4.6 has them, over
// libgguf compiled to WebAssembly (dist/libgguf.wasm, the reader alone), and open(), a file
// kept open for its tensor values, tokenizer and chat templates (dist/libgguf-open.wasm, loaded
// only by open()). index.d.ts has the types.
import { header } from "./header.js";
import { sourceOf } from "./sources.js";
import { instantiate, openHeader } from "./wasm.js";

export { GGUFError } from "./errors.js";
export { open, GGUFModel } from "./open.js";

export const RE_GGUF_FILE = /\.gguf$/;
export const RE_GGUF_SHARD_FILE = /^(?<prefix>.*?)-(?<shard>\d{5})-of-(?<total>\d{5})\.gguf$/;
const PARALLEL_DOWNLOADS = 20;

/** @huggingface/gguf's gguf(), over libgguf: see index.d.ts. */
export async function gguf(source, options = {}) {
  const src = await sourceOf(source, options);
  try {
    const ex = await instantiate("libgguf.wasm");
    const h = await openHeader(ex, src);
    try {
      return header(ex, h, options);
    } finally {
      ex.lg_close(h);
    }
  } finally {
    await src.close();
  }
}

/** A shard's file name cut into its prefix, number and count, as @huggingface/gguf does. */
export function parseGgufShardFilename(filename) {
  const m = RE_GGUF_SHARD_FILE.exec(filename);
  return m?.groups ? { prefix: m.groups.prefix, shard: m.groups.shard, total: m.groups.total } : null;
}

// Runs the promises `factories` make, at most `concurrency` at once; their results in order.
async function queue(factories, concurrency) {
  const results = new Array(factories.length);
  const running = new Set();
  let next = 0;
  for (const factory of factories) {
    const i = next++;
    const p = factory().then((r) => {
      results[i] = r;
      running.delete(p);
    });
    running.add(p);
    if (running.size >= concurrency) await Promise.race(running);
  }
  await Promise.all(running);
  return results;
}

/** @huggingface/gguf's ggufAllShards(): every shard of a split model, read in parallel. */
export async function ggufAllShards(url, params = {}) {
  const parallel = params.parallelDownloads ?? PARALLEL_DOWNLOADS;
  if (parallel < 1) throw new TypeError("parallelDownloads must be greater than 0");
  const info = parseGgufShardFilename(url);
  if (!info) {
    const { metadata, tensorInfos, tensorDataOffset, littleEndian, parameterCount, tensorInfoByteRange } =
      await gguf(url, { ...params, computeParametersCount: true });
    return {
      shards: [{ metadata, tensorInfos, tensorDataOffset, littleEndian, tensorInfoByteRange }],
      parameterCount,
      urls: [url],
    };
  }
  const total = parseInt(info.total);
  const urls = [];
  for (let i = 1; i <= total; i++) {
    urls.push(`${info.prefix}-${i.toString().padStart(5, "0")}-of-${total.toString().padStart(5, "0")}.gguf`);
  }
  const shards = await queue(urls.map((u) => () => gguf(u, { ...params, computeParametersCount: true })), parallel);
  return { shards, parameterCount: shards.reduce((a, s) => a + s.parameterCount, 0), urls };
}

