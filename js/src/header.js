// A handle's description (js/wasm/src/describe.rs documents it) made into @huggingface/gguf's
// result: four flat parts read with one text decode and typed-array reads. With
// `options.lazyArrays`, a metadata array of many elements is a getter that decodes it from the
// parts on first access (and keeps the result).
import { GGUFError } from "./errors.js";

const LAZY_MIN = 1024;

function part(ex, d, i) {
  return new Uint8Array(ex.memory.buffer, ex.lg_part_ptr(d, i), ex.lg_part_len(d, i));
}

/** The minimum length of an array decoded on access, or Infinity (options.lazyArrays). */
function lazyMin(lazyArrays) {
  if (lazyArrays === undefined || lazyArrays === false) return Infinity;
  if (lazyArrays === true) return LAZY_MIN;
  if (typeof lazyArrays === "number" && lazyArrays >= 0) return lazyArrays;
  throw new TypeError("gguf: lazyArrays must be a boolean or a minimum array length");
}

/** The header of handle `h` in instance `ex`, as @huggingface/gguf's gguf() returns it. */
export function header(ex, h, options) {
  const minLazy = lazyMin(options.lazyArrays);
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
  // A metadata value: decoded now, or, for an array of strings or numbers of at least minLazy
  // elements, skipped and returned as the position to decode it from.
  const LAZY = {};
  const entry = () => {
    if (w[p] === 9 && w[p + 1] !== 9 && w[p + 2] >= minLazy) {
      const at = p;
      p += w[p + 1] === 8 ? 3 + 2 * w[p + 2] : 4;
      LAZY.at = at;
      return LAZY;
    }
    return value();
  };
  const decodeAt = (at) => {
    const saved = p;
    p = at;
    try {
      return value();
    } finally {
      p = saved;
    }
  };
  const version = w[0], littleEndian = w[1] === 1, kvs = w[2], nt = w[3], s = w[4] >> 3;
  p = 5;
  const metadata = { version, tensor_count: u64[s], kv_count: u64[s + 1] };
  // With options.typedMetadata, each value with its GGUF type (and an array's element type), as
  // @huggingface/gguf gives them: the counts are UINT32 in version 1 and UINT64 after.
  let typed;
  if (options.typedMetadata) {
    const countType = version === 1 ? 4 : 10;
    typed = {
      version: { value: version, type: 4 },
      tensor_count: { value: metadata.tensor_count, type: countType },
      kv_count: { value: metadata.kv_count, type: countType },
    };
  }
  for (let i = 0; i < kvs; i++) {
    const key = str();
    const type = w[p], subType = type === 9 ? w[p + 1] : undefined;
    const v = entry();
    if (typed) {
      // A lazy array's typed value is the metadata's, decoded on the first access of either.
      const t = v === LAZY ? { get value() { return metadata[key]; }, type } : { value: v, type };
      if (subType !== undefined) t.subType = subType;
      typed[key] = t;
    }
    if (v !== LAZY) {
      metadata[key] = v;
      continue;
    }
    const at = LAZY.at;
    const keep = (x) => Object.defineProperty(metadata, key, { value: x, writable: true, enumerable: true, configurable: true });
    Object.defineProperty(metadata, key, {
      enumerable: true, configurable: true,
      get() { const x = decodeAt(at); keep(x); return x; },
      set: keep,
    });
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
  if (typed) result.typedMetadata = typed;
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
