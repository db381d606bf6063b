// libgguf for JavaScript: gguf(), as @huggingface/gguf 0.4.6 has it, over libgguf compiled to
// WebAssembly (dist/libgguf.wasm, built from js/wasm by build.sh). The header is parsed in the
// module from a prefix of the file, read by range (bytes, a Blob, a local file or HTTP); the
// module says how long a prefix it needs when the header goes on past one
// (source::next_header_len). js/wasm/src/describe.rs documents the description read here.
const isNode = typeof process !== "undefined" && !!process.versions?.node &&
  typeof window === "undefined";
const FIRST_CHUNK = 2 * 1024 * 1024;

let compiled;
async function wasmModule() {
  if (!compiled) {
    const url = new URL("../dist/libgguf.wasm", import.meta.url);
    compiled = (async () => {
      if (isNode) {
        const { readFile } = await import("node:fs/promises");
        return WebAssembly.compile(await readFile(url));
      }
      return WebAssembly.compile(await (await fetch(url)).arrayBuffer());
    })();
  }
  return compiled;
}

export class GGUFError extends Error {
  constructor(message, code) {
    super(message);
    this.name = "GGUFError";
    this.code = code;
  }
}

function lastError(ex) {
  const bytes = new Uint8Array(ex.memory.buffer, ex.lg_error_ptr(), ex.lg_error_len());
  return new GGUFError(new TextDecoder().decode(bytes), ex.lg_error_code());
}

// Sources: { name, size, read(offset, length) -> Promise<Uint8Array>, close() }.
function bytesSource(bytes, name) {
  return { name, size: bytes.length, read: async (o, n) => bytes.subarray(o, o + n), close() {} };
}
function blobSource(blob) {
  return {
    name: blob.name || "<blob>", size: blob.size,
    read: async (o, n) => new Uint8Array(await blob.slice(o, o + n).arrayBuffer()), close() {},
  };
}
async function fileSource(path) {
  const { open } = await import("node:fs/promises");
  const fh = await open(path, "r");
  const { size } = await fh.stat();
  return {
    name: path, size,
    async read(o, n) {
      const buf = new Uint8Array(Math.max(0, Math.min(n, size - o)));
      let done = 0;
      while (done < buf.length) {
        const { bytesRead } = await fh.read(buf, done, buf.length - done, o + done);
        if (bytesRead === 0) break;
        done += bytesRead;
      }
      return buf.subarray(0, done);
    },
    close: () => fh.close(),
  };
}
function urlSource(url, options) {
  const f = options.fetch ?? fetch;
  const src = {
    name: url, size: undefined,
    async read(o, n) {
      const last = o + n - 1;
      const r = await f(url, { headers: { ...(options.additionalFetchHeaders ?? {}), Range: `bytes=${o}-${last}` } });
      if (r.status !== 206) throw new GGUFError(`gguf: ${url}: HTTP ${r.status} for bytes ${o}-${last}`, 1);
      const total = r.headers.get("content-range")?.match(/^bytes (\d+)-(\d+)\/(\d+)$/);
      if (!total || Number(total[1]) !== o) {
        throw new GGUFError(`gguf: ${url}: HTTP 206 for bytes ${o}-${last} with a Content-Range that does not answer it`, 1);
      }
      src.size = Number(total[3]);
      const body = new Uint8Array(await r.arrayBuffer());
      if (body.length !== Number(total[2]) - o + 1) {
        throw new GGUFError(`gguf: ${url}: HTTP 206 for bytes ${o}-${last} with ${body.length} bytes, not the ${Number(total[2]) - o + 1} its Content-Range says`, 1);
      }
      return body;
    },
    close() {},
  };
  return src;
}

async function sourceOf(source, options) {
  if (typeof source === "string") {
    if (/^https?:\/\//.test(source)) return urlSource(source, options);
    if (!isNode) {
      if (options.allowLocalFile) throw new Error("allowLocalFile cannot be used on browser");
      return urlSource(source, options);
    }
    if (!options.allowLocalFile) throw new Error("Access to local file is not enabled, please set allowLocalFile to true");
    return fileSource(source);
  }
  if (source instanceof ArrayBuffer) return bytesSource(new Uint8Array(source), "<memory>");
  if (ArrayBuffer.isView(source)) return bytesSource(new Uint8Array(source.buffer, source.byteOffset, source.byteLength), "<memory>");
  if (typeof Blob !== "undefined" && source instanceof Blob) return blobSource(source);
  throw new TypeError("gguf: the source must be a URL, a path, a Blob, an ArrayBuffer or a Uint8Array");
}

// The header parsed in instance `ex` from growing prefixes of `src`: a handle.
async function openHeader(ex, src) {
  let have = await src.read(0, src.size === undefined ? FIRST_CHUNK : Math.min(src.size, FIRST_CHUNK));
  const name = new TextEncoder().encode(src.name);
  const namePtr = ex.lg_alloc(name.length);
  new Uint8Array(ex.memory.buffer, namePtr, name.length).set(name);
  try {
    for (;;) {
      const ptr = ex.lg_alloc(have.length);
      new Uint8Array(ex.memory.buffer, ptr, have.length).set(have);
      const h = ex.lg_open(ptr, have.length, src.size ?? have.length, namePtr, name.length);
      if (h !== 0) return { h, prefix: have };
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

function part(ex, d, i) {
  return new Uint8Array(ex.memory.buffer, ex.lg_part_ptr(d, i), ex.lg_part_len(d, i));
}

// The description of handle `h` made into @huggingface/gguf's result.
function build(ex, h, options) {
  const d = ex.lg_describe(h);
  let w, f32, numbers, text, raw;
  try {
    const wb = part(ex, d, 0).slice().buffer;
    w = new Uint32Array(wb);
    f32 = new Float32Array(wb);
    numbers = part(ex, d, 1).slice().buffer;
    text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(part(ex, d, 2));
    raw = part(ex, d, 3).slice();
  } finally {
    ex.lg_describe_free(d);
  }
  const u64 = new BigUint64Array(numbers, 0, numbers.byteLength >> 3);
  const i64 = new BigInt64Array(numbers, 0, numbers.byteLength >> 3);
  const f64 = new Float64Array(numbers, 0, numbers.byteLength >> 3);
  const rawDecoder = new TextDecoder();
  let p = 0;
  const str = () => {
    const a = w[p], b = w[p + 1];
    p += 2;
    return a & 0x80000000 ? rawDecoder.decode(raw.subarray(a & 0x7fffffff, (a & 0x7fffffff) + b)) : text.slice(a, a + b);
  };
  const numeric = (t, at, n) => {
    switch (t) {
      case 0: return Array.from(new Uint8Array(numbers, at, n));
      case 1: return Array.from(new Int8Array(numbers, at, n));
      case 2: return Array.from(new Uint16Array(numbers, at, n));
      case 3: return Array.from(new Int16Array(numbers, at, n));
      case 4: return Array.from(new Uint32Array(numbers, at, n));
      case 5: return Array.from(new Int32Array(numbers, at, n));
      case 6: return Array.from(new Float32Array(numbers, at, n));
      case 7: return Array.from(new Uint8Array(numbers, at, n), (x) => x !== 0);
      case 10: return Array.from(new BigUint64Array(numbers, at, n));
      case 11: return Array.from(new BigInt64Array(numbers, at, n));
      case 12: return Array.from(new Float64Array(numbers, at, n));
    }
    throw new GGUFError(`gguf: element type ${t}`, 7);
  };
  const value = () => {
    const t = w[p++];
    switch (t) {
      case 0: case 2: case 4: return w[p++];
      case 1: case 3: case 5: return w[p++] | 0;
      case 6: return f32[p++];
      case 7: return w[p++] !== 0;
      case 8: return str();
      case 10: return u64[w[p++] >> 3];
      case 11: return i64[w[p++] >> 3];
      case 12: return f64[w[p++] >> 3];
      case 9: {
        const et = w[p++], n = w[p++];
        if (et === 8) { const out = new Array(n); for (let i = 0; i < n; i++) out[i] = str(); return out; }
        if (et === 9) { const out = new Array(n); for (let i = 0; i < n; i++) out[i] = value(); return out; }
        return numeric(et, w[p++], n);
      }
    }
    throw new GGUFError(`gguf: value type ${t}`, 7);
  };
  const version = w[0], littleEndian = w[1] === 1, kvs = w[2], nt = w[3], s = w[4] >> 3;
  p = 5;
  const metadata = { version, tensor_count: u64[s], kv_count: u64[s + 1] };
  for (let i = 0; i < kvs; i++) {
    const key = str();
    metadata[key] = value();
  }
  const tensorInfos = new Array(nt);
  for (let i = 0; i < nt; i++) {
    const name = str(), n_dims = w[p], dtype = w[p + 1], at = w[p + 2] >> 3;
    p += 3;
    const shape = Array.from(u64.subarray(at, at + n_dims));
    tensorInfos[i] = { name, n_dims, shape, dtype, offset: u64[at + n_dims] };
  }
  const result = {
    metadata, tensorInfos, tensorDataOffset: u64[s + 2], littleEndian,
    tensorInfoByteRange: [Number(u64[s + 4]), Number(u64[s + 5])],
  };
  if (options.computeParametersCount) result.parameterCount = parameterCount(tensorInfos, Number(u64[s + 6]));
  return result;
}

// As @huggingface/gguf counts them, with its check against the file's size.
function parameterCount(tensorInfos, fileSize) {
  const n = tensorInfos.map(({ shape }) => shape.reduce((acc, v) => acc * Number(v), 1)).reduce((a, v) => a + v, 0);
  if (!Number.isFinite(n) || n < 0) throw new Error(`Computed parameter count is not a valid number (${n})`);
  const max = fileSize * 8;
  if (n > max) {
    throw new Error(`Declared tensor shapes imply ${n} parameters, which cannot fit in a ${fileSize}-byte file ` +
      `(at most ${max} at 1 bit per parameter). The file is malformed.`);
  }
  return n;
}

/** @huggingface/gguf's gguf(), over libgguf: see index.d.ts. */
export async function gguf(source, options = {}) {
  const src = await sourceOf(source, options);
  try {
    const ex = (await WebAssembly.instantiate(await wasmModule(), {})).exports;
    const { h } = await openHeader(ex, src);
    try {
      return build(ex, h, options);
    } finally {
      ex.lg_close(h);
    }
  } finally {
    await src.close();
  }
}
