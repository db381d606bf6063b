// gguf() against @huggingface/gguf 0.4.6's on every GGUF file the tests have, each read three
// ways: over HTTP range requests from a loopback server, as a local path, and (libgguf only:
// @huggingface/gguf takes no bytes) as bytes, compared with @huggingface/gguf's result for the
// path. The files: the bundled sample, llama.cpp's vocabulary files (Gemma's among them),
// version 1 and 2 files and big-endian ones written here, and the hostile corpus (the counts
// tests/resource_bounds.rs refuses, an unknown version, bytes that are not GGUF), which both
// must refuse, with the module's memory bounded after each refusal. Where @huggingface/gguf
// accepts what libgguf refuses, cuts what libgguf reads whole or refuses what libgguf reads,
// libgguf's rules stand: each difference is listed in docs/javascript.md and asserted below
// (`differences`, `large`).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gguf as hf } from "@huggingface/gguf";
import { gguf, GGUFError } from "../src/index.js";
import { serve } from "../test-support/server.js";

const root = new URL("../..", import.meta.url).pathname;
const llama = process.env.GGUF_LLAMA_SRC_DIR ?? join(root, "target/llama.cpp");
if (!existsSync(join(llama, "models"))) throw new Error(`no llama.cpp sources at ${llama} (make llama-src, or GGUF_LLAMA_SRC_DIR)`);

// ---------------------------------------------------------------------------------------------
// GGUF files written here: any version, either byte order, counts that need not match.

const T = { U8: 0, I8: 1, U16: 2, I16: 3, U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9, U64: 10, I64: 11, F64: 12 };

class Out {
  constructor(version, le) {
    this.version = version;
    this.le = le;
    this.parts = [];
    this.length = 0;
  }
  raw(bytes) { this.parts.push(bytes); this.length += bytes.length; }
  num(n, set, width) {
    const b = new Uint8Array(width);
    new DataView(b.buffer)[set](0, n, this.le);
    this.raw(b);
  }
  u32(n) { this.num(n, "setUint32", 4); }
  u64(n) { this.num(BigInt(n), "setBigUint64", 8); }
  size(n) { if (this.version === 1) this.u32(Number(n)); else this.u64(n); }
  str(s) { const b = new TextEncoder().encode(s); this.size(b.length); this.raw(b); }
  value(type, v) {
    switch (type) {
      case T.U8: return this.num(v, "setUint8", 1);
      case T.I8: return this.num(v, "setInt8", 1);
      case T.U16: return this.num(v, "setUint16", 2);
      case T.I16: return this.num(v, "setInt16", 2);
      case T.U32: return this.u32(v);
      case T.I32: return this.num(v, "setInt32", 4);
      case T.F32: return this.num(v, "setFloat32", 4);
      case T.BOOL: return this.num(v ? 1 : 0, "setUint8", 1);
      case T.STRING: return this.str(v);
      case T.U64: return this.u64(v);
      case T.I64: return this.num(BigInt(v), "setBigInt64", 8);
      case T.F64: return this.num(v, "setFloat64", 8);
      case T.ARRAY: {
        const [et, items] = v;
        this.u32(et);
        this.size(items.length);
        for (const x of items) this.value(et, x);
      }
    }
  }
  bytes() {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) { out.set(p, at); at += p.length; }
    return out;
  }
}

/** A file: header, key-value pairs [key, type, value], tensors { name, shape, dtype, offset },
 * padding to the alignment, then `data` bytes of tensor data. */
function write({ version = 3, le = true, kvs = [], tensors = [], data = 0, alignment = 32 }) {
  const o = new Out(version, le);
  o.raw(new TextEncoder().encode("GGUF"));
  o.u32(version);
  o.size(tensors.length);
  o.size(kvs.length);
  for (const [k, t, v] of kvs) { o.str(k); o.u32(t); o.value(t, v); }
  for (const { name, shape, dtype, offset } of tensors) {
    o.str(name);
    o.u32(shape.length);
    for (const d of shape) o.size(d);
    o.u32(dtype);
    o.u64(offset);
  }
  o.raw(new Uint8Array((alignment - (o.length % alignment)) % alignment + data));
  return o.bytes();
}

// Every value type, nested arrays, and tensors with data (F32: 4 bytes an element).
const everyType = [
  ["general.architecture", T.STRING, "llama"],
  ["general.name", T.STRING, "every type ünïcødé"],
  ["u8", T.U8, 200], ["i8", T.I8, -100], ["u16", T.U16, 60000], ["i16", T.I16, -30000],
  ["u32", T.U32, 4000000000], ["i32", T.I32, -2000000000], ["f32", T.F32, 0.1], ["bool", T.BOOL, true],
  ["u64", T.U64, 18446744073709551615n], ["i64", T.I64, -9223372036854775808n], ["f64", T.F64, -0],
  ["f32 nan", T.F32, NaN], ["f64 inf", T.F64, -Infinity],
  ["strings", T.ARRAY, [T.STRING, ["a", "", "ü", "<s>"]]],
  ["floats", T.ARRAY, [T.F32, [1, -2.5, 3e-7]]],
  ["ints", T.ARRAY, [T.I32, [1, -2, 3]]], ["bools", T.ARRAY, [T.BOOL, [true, false]]],
  ["u64s", T.ARRAY, [T.U64, [1n, 2n ** 63n]]], ["empty", T.ARRAY, [T.U8, []]],
  ["nested", T.ARRAY, [T.ARRAY, [[T.U8, [1, 2]], [T.STRING, ["x"]]]]],
];
const tensors = [
  { name: "token_embd.weight", shape: [4, 8], dtype: 0, offset: 0 },
  { name: "blk.0.attn_norm.weight", shape: [4], dtype: 0, offset: 128 },
  { name: "output.weight", shape: [2, 2, 2], dtype: 0, offset: 160 },
];
const written = {};
for (const version of [1, 2, 3]) {
  for (const le of [true, false]) {
    written[`v${version}-${le ? "le" : "be"}.gguf`] = write({ version, le, kvs: everyType, tensors, data: 192 });
  }
}
written["alignment-64.gguf"] = write({
  kvs: [...everyType, ["general.alignment", T.U32, 64]], alignment: 64,
  tensors: [{ name: "t", shape: [16], dtype: 0, offset: 0 }, { name: "u", shape: [3], dtype: 0, offset: 64 }], data: 128,
});

// The hostile corpus: tests/resource_bounds.rs's claimed counts (the file far shorter than
// they say), bytes that are not GGUF, an unknown version.
function header(tensorCount, kvCount) {
  const o = new Out(3, true);
  o.raw(new TextEncoder().encode("GGUF"));
  o.u32(3);
  o.u64(tensorCount);
  o.u64(kvCount);
  return o;
}
const huge = 1n << 63n;
const hostile = {};
hostile["2^63 tensors"] = header(huge, 0).bytes();
hostile["2^63 keys"] = header(0, huge).bytes();
for (const [what, key, et, tail] of [
  ["array of 2^63 strings", "tokenizer.ggml.tokens", T.STRING, 64],
  ["array of 2^63 floats", "tokenizer.ggml.scores", T.F32, 0],
  ["array of 2^63 arrays", "nested", T.ARRAY, 0],
]) {
  const o = header(0, 1);
  o.str(key); o.u32(T.ARRAY); o.u32(et); o.u64(huge); o.raw(new Uint8Array(tail));
  hostile[what] = o.bytes();
}
{
  const o = header(0, 1);
  o.str("general.name"); o.u32(T.STRING); o.u64(huge);
  hostile["string of 2^63 bytes"] = o.bytes();
}
const sample = new Uint8Array(readFileSync(join(root, "testdata/sample.gguf")));
hostile["not GGUF"] = new Uint8Array(64);
hostile["version 4"] = (() => { const b = written["v3-le.gguf"].slice(); b[4] = 4; return b; })();

// What @huggingface/gguf accepts and libgguf refuses (docs/javascript.md lists them): the file,
// and what libgguf's refusal says. @huggingface/gguf reads past the end of the data it has as
// zeros (its buffer grows in zero-filled chunks), checks no tensor against the file's size, and
// multiplies no dimensions but with computeParametersCount.
const differences = {};
{
  const o = header(1, 0);
  o.str("t"); o.u32(4);
  for (let i = 0; i < 4; i++) o.u64(1 << 16);
  o.u32(0); o.u64(0);
  differences["tensor of 2^64 elements"] = { bytes: o.bytes(), refusal: /overflows 64 bits/ };
}
differences["the sample cut at 7 bytes, in its version"] = { bytes: sample.slice(0, 7), refusal: /the file ends early/ };
differences["the sample cut at 20 bytes, in its key-value count"] = { bytes: sample.slice(0, 20), refusal: /the file ends early/ };
differences["the sample cut at 30 bytes, in its first key"] = { bytes: sample.slice(0, 30), refusal: /the file ends early/ };
differences["the sample cut in its tensor infos"] = {
  bytes: sample.slice(0, Number((await hf(join(root, "testdata/sample.gguf"), { allowLocalFile: true })).tensorInfoByteRange[0]) + 10),
  refusal: /the file ends early/,
};
differences["tensor data past the end of the file"] = {
  bytes: write({ kvs: everyType, tensors, data: 100 }),
  refusal: /data ends at \d+, past the end of the file/,
};

differences["a key given twice"] = {
  bytes: write({ kvs: [...everyType, ["u8", T.U8, 7]] }),
  refusal: /key 'u8' appears twice/,
};
differences["an alignment that is not a power of two"] = {
  bytes: write({ kvs: [...everyType, ["general.alignment", T.U32, 48]], alignment: 48, tensors: [{ name: "t", shape: [4], dtype: 0, offset: 0 }], data: 48 }),
  refusal: /general\.alignment: expected a power of two/,
};
differences["tensors whose data overlap"] = {
  bytes: write({ kvs: everyType, tensors: [{ name: "t", shape: [16], dtype: 0, offset: 0 }, { name: "u", shape: [16], dtype: 0, offset: 32 }], data: 96 }),
  refusal: /tensor 'u' data \[32, 96\) overlaps tensor 't'/,
};
differences["an unknown tensor type"] = {
  bytes: write({ kvs: everyType, tensors: [{ name: "t", shape: [32], dtype: 200, offset: 0 }], data: 128 }),
  refusal: /unknown or removed type 200/,
};

// What @huggingface/gguf cuts or refuses and libgguf reads: a string running past the 2 MB it
// has fetched (it slices what it has), and arrays, strings and headers past its caps (1,000,000
// elements, 10,000,000 bytes, 50,000,000 bytes).
const large = {
  "a string past the first 2 MB": write({ kvs: [["pad", T.STRING, "p".repeat(1_000_000)], ["long", T.STRING, "x".repeat(1_500_000)], ["after", T.U32, 5]] }),
  "an array of 1,000,001 elements": write({ kvs: [["many", T.ARRAY, [T.U8, new Array(1_000_001).fill(1)]]] }),
  "a string of 10,000,001 bytes": write({ kvs: [["long", T.STRING, "y".repeat(10_000_001)]] }),
  "a 52 MB header": write({ kvs: [["chunks", T.ARRAY, [T.STRING, new Array(52).fill("z".repeat(1_000_000))]]] }),
};

// ---------------------------------------------------------------------------------------------
// The files, on disk and over HTTP.

const dir = mkdtempSync(join(tmpdir(), "libgguf-compare-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const files = { "sample.gguf": join(root, "testdata/sample.gguf") };
for (const f of readdirSync(join(llama, "models")).sort()) if (/^ggml-vocab-.*\.gguf$/.test(f)) files[f] = join(llama, "models", f);
assert.ok(files["ggml-vocab-gemma-4.gguf"], "no Gemma vocabulary in llama.cpp's models");
const slug = (s) => s.replace(/[^A-Za-z0-9.-]+/g, "_");
for (const [name, bytes] of [...Object.entries(written), ...Object.entries(hostile), ...Object.entries(large), ...Object.entries(differences).map(([k, v]) => [k, v.bytes])]) {
  const path = join(dir, slug(name));
  writeFileSync(path, bytes);
  files[name] = path;
}

// Each response closes its connection: a reader parsing for long between requests (as
// @huggingface/gguf does, over a large vocabulary) finds no kept-alive socket closed under it.
// A request without a range is answered 400.
const { server, base } = await serve(files, { rangeRequired: true, closeConnections: true });
after(() => server.close());
const url = (name) => `${base}/${encodeURIComponent(name)}`;

// Every WebAssembly instance the package makes, to read its memory's size after a refusal.
const instances = [];
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = async function (...args) {
  const r = await instantiate.apply(this, args);
  const instance = r instanceof WebAssembly.Instance ? r : r.instance;
  // (Node's fetch instantiates its own module, llhttp, once: not the package's.)
  if (instance.exports.lg_open) instances.push(instance);
  return r;
};
/** The stated bound: refusing any of the files below (each under 8 KiB) leaves the module's
 * memory at most 4 MiB, whatever they claim (measured: 1.4 MiB, its size when instantiated). */
const MEMORY_BOUND = 4 << 20;

async function outcome(run) {
  try {
    return { ok: await run() };
  } catch (e) {
    return { error: e };
  }
}
/** libgguf's outcomes for `name` read each way with `options`, and the most memory an instance
 * had afterwards. */
async function libgguf(name, options) {
  const path = files[name];
  const since = instances.length;
  const r = {
    http: await outcome(() => gguf(url(name), options)),
    path: await outcome(() => gguf(path, { ...options, allowLocalFile: true })),
    bytes: await outcome(() => gguf(readFileSync(path), options)),
  };
  assert.equal(instances.length - since, 3, `${instances.length - since} instances for three calls`);
  return { r, memory: Math.max(...instances.slice(since).map((i) => i.exports.memory.buffer.byteLength)) };
}
/** @huggingface/gguf's outcomes for `name` over HTTP and as a path. */
async function huggingface(name, options) {
  return {
    http: await outcome(() => hf(url(name), options)),
    path: await outcome(() => hf(files[name], { ...options, allowLocalFile: true })),
  };
}

// ---------------------------------------------------------------------------------------------

const accepted = ["sample.gguf", ...Object.keys(files).filter((f) => f.startsWith("ggml-vocab-")), ...Object.keys(written)];
for (const name of accepted) {
  test(`${name}: as @huggingface/gguf reads it, over HTTP, as a path and as bytes`, { timeout: 300_000 }, async () => {
    // Each way with computeParametersCount (the result with parameterCount), against
    // @huggingface/gguf's for the path (its result over HTTP, the same, is http.test.mjs's
    // comparison); and as bytes without it.
    const options = { computeParametersCount: true };
    const want = await hf(files[name], { ...options, allowLocalFile: true });
    const { r } = await libgguf(name, options);
    for (const [how, got] of Object.entries(r)) {
      assert.ok(got.ok, `${how}: ${got.error}`);
      assert.deepStrictEqual(got.ok, want, how);
    }
    const { parameterCount, ...plain } = want;
    assert.deepStrictEqual(await gguf(readFileSync(files[name])), plain, "without computeParametersCount");
    // With every value's type, eagerly and with the large arrays decoded on access.
    const typed = await hf(files[name], { allowLocalFile: true, typedMetadata: true, computeParametersCount: true });
    for (const lazyArrays of [false, true]) {
      const got = await gguf(url(name), { typedMetadata: true, computeParametersCount: true, lazyArrays });
      assert.deepStrictEqual(got, typed, `typedMetadata, lazyArrays ${lazyArrays}`);
    }
  });
}

/** Checks libgguf's refusals every way: GGUFErrors (not a trap: no WebAssembly.RuntimeError)
 * with a code, matching `pattern`. */
function refusedByLibgguf({ r, memory }, pattern) {
  for (const [how, got] of Object.entries(r)) {
    assert.ok(got.error, `${how}: libgguf accepted it`);
    assert.ok(got.error instanceof GGUFError, `${how}: ${got.error?.stack}`);
    assert.ok(Number.isInteger(got.error.code) && got.error.code > 0, `${how}: code ${got.error.code}`);
    if (pattern) assert.match(got.error.message, pattern, how);
  }
  assert.ok(memory <= MEMORY_BOUND, `${memory} bytes of memory`);
}

const optionSets = [{}, { computeParametersCount: true }];
for (const name of Object.keys(hostile)) {
  test(`hostile: ${name}: both refuse it, every way`, { timeout: 60_000 }, async () => {
    for (const options of optionSets) {
      for (const [how, got] of Object.entries(await huggingface(name, options))) {
        assert.ok(got.error, `@huggingface/gguf ${how}: accepted it`);
      }
      refusedByLibgguf(await libgguf(name, options));
    }
  });
}

for (const [name, { refusal }] of Object.entries(differences)) {
  test(`difference: ${name}: @huggingface/gguf accepts it, libgguf refuses it`, { timeout: 60_000 }, async () => {
    for (const [how, got] of Object.entries(await huggingface(name, {}))) {
      assert.ok(got.ok, `@huggingface/gguf ${how}: ${got.error}`);
    }
    refusedByLibgguf(await libgguf(name, {}), refusal);
  });
}

test("difference: a string past the 2 MB @huggingface/gguf has fetched is cut by it; libgguf reads it whole", { timeout: 120_000 }, async () => {
  const name = "a string past the first 2 MB";
  const hfs = await huggingface(name, {});
  const { r } = await libgguf(name, {});
  for (const [how, got] of Object.entries(hfs)) {
    assert.ok(got.ok, `@huggingface/gguf ${how}: ${got.error}`);
    assert.ok(got.ok.metadata.long.length < 1_000_000, `@huggingface/gguf ${how}: ${got.ok.metadata.long.length}`);
    assert.equal(got.ok.metadata.after, 5);
  }
  for (const [how, got] of Object.entries(r)) {
    assert.ok(got.ok, `${how}: ${got.error}`);
    assert.equal(got.ok.metadata.long, "x".repeat(1_500_000), how);
    assert.deepStrictEqual({ ...got.ok, metadata: { ...got.ok.metadata, long: "" } },
      { ...hfs.path.ok, metadata: { ...hfs.path.ok.metadata, long: "" } }, how);
  }
});

for (const [name, says, check] of [
  ["an array of 1,000,001 elements", /Metadata array length 1000001 exceeds/, (m) => m.many.length === 1_000_001 && m.many.every((x) => x === 1)],
  ["a string of 10,000,001 bytes", /String length 10000001 exceeds/, (m) => m.long === "y".repeat(10_000_001)],
  ["a 52 MB header", /resize: Invalid length/, (m) => m.chunks.length === 52 && m.chunks.every((c) => c === "z".repeat(1_000_000))],
]) {
  test(`difference: ${name}: @huggingface/gguf refuses it, libgguf reads it`, { timeout: 300_000 }, async () => {
    for (const [how, got] of Object.entries(await huggingface(name, {}))) {
      assert.ok(got.error, `@huggingface/gguf ${how}: accepted it`);
      assert.match(got.error.message, says, `@huggingface/gguf ${how}`);
    }
    const { r } = await libgguf(name, {});
    for (const [how, got] of Object.entries(r)) {
      assert.ok(got.ok, `${how}: ${got.error}`);
      assert.ok(check(got.ok.metadata), how);
    }
  });
}
