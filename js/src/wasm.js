// The package's two WebAssembly modules (built from js/wasm by build.sh): dist/libgguf.wasm,
// the reader gguf() loads, and dist/libgguf-open.wasm, the reader with the tensor values, the
// tokenizer and the chat templates, which only open() loads. Each is compiled once, on first
// use; each call instantiates its own instance. The header is parsed in the instance from a
// prefix of the file; the module says how long a prefix it needs when the header goes on past
// one (source::next_header_len).
import { GGUFError } from "./errors.js";
import { isNode } from "./sources.js";

const FIRST_CHUNK = 2 * 1024 * 1024;

const compiled = new Map();
function wasmModule(file) {
  if (!compiled.has(file)) {
    const url = new URL(`../dist/${file}`, import.meta.url);
    const p = (async () => {
      if (isNode) {
        const { readFile } = await import("node:fs/promises");
        return WebAssembly.compile(await readFile(url));
      }
      return WebAssembly.compile(await (await fetch(url)).arrayBuffer());
    })();
    p.catch(() => compiled.delete(file));
    compiled.set(file, p);
  }
  return compiled.get(file);
}

/** A new instance of module `file`: its exports. */
export async function instantiate(file) {
  return (await WebAssembly.instantiate(await wasmModule(file), imports)).exports;
}

// What libgguf-open.wasm imports: the clock chat templates read (strftime_now, llama-server's
// datetime), in seconds.
const imports = { libgguf: { lg_now: () => Date.now() / 1000 } };

export function lastError(ex) {
  const bytes = new Uint8Array(ex.memory.buffer, ex.lg_error_ptr(), ex.lg_error_len());
  return new GGUFError(new TextDecoder().decode(bytes), ex.lg_error_code());
}

/** `bytes` copied into the instance's memory (lg_alloc): the address. */
export function put(ex, bytes) {
  const ptr = ex.lg_alloc(bytes.length);
  new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
  return ptr;
}

/** A blob the instance returned, copied out and freed; the instance's error for 0. */
export function take(ex, b) {
  if (b === 0) throw lastError(ex);
  try {
    return new Uint8Array(ex.memory.buffer, ex.lg_blob_ptr(b), ex.lg_blob_len(b)).slice();
  } finally {
    ex.lg_blob_free(b);
  }
}

/** The header parsed in instance `ex` from growing prefixes of `src`: a handle. */
export async function openHeader(ex, src) {
  let have = await src.read(0, src.size === undefined ? FIRST_CHUNK : Math.min(src.size, FIRST_CHUNK));
  const name = new TextEncoder().encode(src.name);
  const namePtr = put(ex, name);
  try {
    for (;;) {
      const ptr = put(ex, have);
      const h = ex.lg_open(ptr, have.length, src.size ?? have.length, namePtr, name.length);
      if (h !== 0) return h;
      const need = ex.lg_need();
      if (need === 0) throw lastError(ex);
      const more = await src.read(have.length, need - have.length);
      if (more.length === 0) throw new GGUFError(`gguf: ${src.name}: the source ended at ${have.length} bytes`, 10);
      const grown = new Uint8Array(have.length + more.length);
      grown.set(have);
      grown.set(more, have.length);
      have = grown;
    }
  } finally {
    ex.lg_free(namePtr, name.length);
  }
}
