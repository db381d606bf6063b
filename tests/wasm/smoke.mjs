// libgguf as a WebAssembly module (wasm32-unknown-unknown, built by tools/cross.sh), driven
// through its exported C functions from Node.js: the memory API and the writer to memory work,
// opening a path reports that there is no file system.
//
// Usage: node tests/wasm/smoke.mjs GGUF.WASM FILE.gguf EXPECTED.json
// EXPECTED.json is the host's `gguf-inspect --json FILE.gguf` (what the native library reads).
// Exits 1 on any mismatch, naming every one.
import { readFileSync } from 'node:fs';

const [wasmPath, ggufPath, expectedPath] = process.argv.slice(2);
if (!expectedPath) {
  console.error('usage: node tests/wasm/smoke.mjs GGUF.WASM FILE.gguf EXPECTED.json');
  process.exit(2);
}
const expected = JSON.parse(readFileSync(expectedPath, 'utf8'));
const file = readFileSync(ggufPath);

// No imports: the module must stand alone (an engine embeds it as is).
const module = new WebAssembly.Module(readFileSync(wasmPath));
const imports = WebAssembly.Module.imports(module);
let failures = 0;
function check(ok, what) {
  if (!ok) {
    failures++;
    console.error(`FAIL: ${what}`);
  }
}
function eq(found, want, what) {
  check(found === want, `${what}: found ${found}, expected ${want}`);
}
eq(imports.length, 0, `imports (${JSON.stringify(imports)})`);
const lib = new WebAssembly.Instance(module, {}).exports;
const memory = lib.memory;
// Views are made afresh each time: growing the memory detaches the old buffer.
const u8 = () => new Uint8Array(memory.buffer);
const dv = () => new DataView(memory.buffer);

// The caller's own region, from pages grown here: Rust's allocator (dlmalloc) takes its memory
// with memory.grow and uses only the pages its own calls returned, so it never hands out these.
const PAGE = 65536;
const SCRATCH = 4 * PAGE;
const pages = Math.ceil((file.length + SCRATCH) / PAGE);
const base = memory.grow(pages) * PAGE;
const region = { start: base, end: base + pages * PAGE };
const fileAt = base;
u8().set(file, fileAt);
let scratch = fileAt + Math.ceil(file.length / 64) * 64;
function put(bytes) {
  const at = scratch;
  u8().set(bytes, at);
  scratch += Math.ceil((bytes.length + 1) / 64) * 64;
  if (scratch > region.end) throw new Error('scratch area exhausted');
  return at;
}
const inRegion = (p) => p >= region.start && p < region.end;
const cstr = (s) => put(Buffer.concat([Buffer.from(s, 'utf8'), Buffer.from([0])]));
function readCstr(ptr) {
  if (ptr === 0) return null;
  const m = u8();
  let end = ptr;
  while (m[end] !== 0) end++;
  return Buffer.from(m.subarray(ptr, end)).toString('utf8');
}
const ptr = (p) => (p >>> 0);
const u32 = (v) => v >>> 0;
const u64At = (p) => dv().getBigUint64(p, true);
const u32At = (p) => dv().getUint32(p, true);
const lastError = () => `${u32(lib.gguf_last_error_code())}: ${readCstr(ptr(lib.gguf_last_error()))}`;

// GGUFTensorInfo and GGUFMetadataKV on wasm32 (4-byte pointers, 8-byte aligned uint64_t).
function tensorInfo(p) {
  const dims = [];
  const nDims = u32At(p + 16);
  for (let d = 0; d < nDims; d++) dims.push(Number(u64At(p + 24 + 8 * d)));
  return {
    name: readCstr(u32At(p)),
    n_elements: Number(u64At(p + 8)),
    n_dims: nDims,
    shape: dims,
    offset: Number(u64At(p + 56)),
    type_id: u32At(p + 64),
    size: Number(u64At(p + 72)),
    file_offset: Number(u64At(p + 80)),
    name_len: Number(u64At(p + 88)),
    index: Number(u64At(p + 96)),
  };
}
const GGUF_TYPE_UINT32 = 4;
const GGUF_TYPE_STRING = 8;
function metadata(handle, key) {
  const p = ptr(lib.gguf_get_metadata(handle, cstr(key)));
  if (p === 0) return null;
  const type = u32At(p + 4);
  const kv = { key: readCstr(u32At(p)), type };
  if (type === GGUF_TYPE_STRING) kv.value = readCstr(u32At(p + 8));
  if (type === GGUF_TYPE_UINT32) kv.value = u32At(p + 8);
  return kv;
}
const GGUF_ERROR_CODE_UNSUPPORTED = 8;
const GGUF_ERROR_CODE_INVALID_ARGUMENT = 3;
const GGUF_DTYPE_F32 = 0;

// 1. The bundled sample, lent to gguf_open_memory.
const h = lib.gguf_open_memory(fileAt, file.length);
check(h !== 0, `gguf_open_memory: ${lastError()}`);
if (h !== 0) {
  check(!inRegion(ptr(h)), 'the handle was allocated in the region grown here');
  eq(u32(lib.gguf_version(h)), expected.version, 'version');
  eq(Number(lib.gguf_tensor_count(h)), expected.tensor_count, 'tensor count');
  eq(Number(lib.gguf_metadata_count(h)), expected.metadata_count, 'metadata count');
  eq(Number(lib.gguf_alignment(h)), expected.alignment, 'alignment');
  eq(Number(lib.gguf_data_offset(h)), expected.data_offset, 'data offset');
  eq(Number(lib.gguf_file_size(h)), expected.file_size, 'file size');
  const strings = expected.metadata.filter((m) => m.type === 'STRING');
  check(strings.length > 0, 'the expected metadata has a STRING key');
  for (const want of strings) {
    const kv = metadata(h, want.key);
    check(kv !== null, `metadata ${want.key}: ${lastError()}`);
    if (kv) eq(kv.value, want.value, `metadata ${want.key}`);
  }
  check(metadata(h, 'no.such.key') === null, 'a missing key is not found');
  // Every tensor, by name: its record, and its data pointer inside the lent bytes, at
  // file_offset (zero-copy), holding the file's bytes there.
  for (const want of expected.tensors) {
    const p = ptr(lib.gguf_get_tensor(h, cstr(want.name)));
    check(p !== 0, `gguf_get_tensor(${want.name}): ${lastError()}`);
    if (p === 0) continue;
    check(!inRegion(p), `tensor ${want.name}: its record was allocated in the region grown here`);
    const t = tensorInfo(p);
    for (const k of ['name', 'n_elements', 'n_dims', 'offset', 'type_id', 'size', 'file_offset']) {
      eq(t[k], want[k], `tensor ${want.name} ${k}`);
    }
    eq(JSON.stringify(t.shape), JSON.stringify(want.shape), `tensor ${want.name} shape`);
    eq(t.name_len, Buffer.byteLength(want.name), `tensor ${want.name} name_len`);
    const data = ptr(lib.gguf_tensor_data(h, p));
    eq(data, fileAt + want.file_offset, `tensor ${want.name} data pointer`);
    const inFile = file.subarray(want.file_offset, want.file_offset + want.size);
    check(Buffer.compare(Buffer.from(u8().subarray(data, data + want.size)), inFile) === 0,
      `tensor ${want.name} data differs from the file's bytes at ${want.file_offset}`);
  }
  lib.gguf_close(h);
}

// 2. The writer to memory: a small file written into this region, then opened from there.
const w = lib.gguf_writer_new();
check(w !== 0, `gguf_writer_new: ${lastError()}`);
const tensorData = new Float32Array([1.5, -2, 3.25, 1e-3, 7, 8]);
const tensorBytes = Buffer.from(tensorData.buffer);
const tensorAt = put(tensorBytes);
const dims = Buffer.alloc(16);
dims.writeBigUInt64LE(3n, 0);
dims.writeBigUInt64LE(2n, 8);
const name = 'wasm.tensor';
const arch = 'wasm-smoke';
check(lib.gguf_writer_set_string(w, cstr('general.architecture'), cstr(arch), arch.length),
  `gguf_writer_set_string: ${lastError()}`);
check(lib.gguf_writer_set_uint32(w, cstr('wasm.answer'), 42), `gguf_writer_set_uint32: ${lastError()}`);
check(lib.gguf_writer_add_tensor(w, cstr(name), 2, put(dims), GGUF_DTYPE_F32, tensorAt,
  BigInt(tensorBytes.length)), `gguf_writer_add_tensor: ${lastError()}`);
const size = Number(lib.gguf_writer_memory_size(w));
check(size > tensorBytes.length, `gguf_writer_memory_size: ${size} (${lastError()})`);
const out = put(Buffer.alloc(size + 64, 0xa5));
// Too small a buffer is refused and left untouched.
check(!lib.gguf_writer_write_memory(w, out, size - 1), 'a buffer one byte short is refused');
eq(u32(lib.gguf_last_error_code()), GGUF_ERROR_CODE_INVALID_ARGUMENT, 'short buffer: error code');
check(u8().subarray(out, out + size + 64).every((b) => b === 0xa5), 'a refused buffer is untouched');
check(lib.gguf_writer_write_memory(w, out, size + 64), `gguf_writer_write_memory: ${lastError()}`);
check(u8().subarray(out + size, out + size + 64).every((b) => b === 0xa5),
  'nothing is written past the file');
// No file system: writing to a path is refused, clearly.
check(!lib.gguf_writer_write_file(w, cstr('/tmp/out.gguf')), 'gguf_writer_write_file fails');
eq(u32(lib.gguf_last_error_code()), GGUF_ERROR_CODE_UNSUPPORTED, 'gguf_writer_write_file: error code');
const writeMessage = readCstr(ptr(lib.gguf_last_error())) ?? '';
check(writeMessage.includes('/tmp/out.gguf') && writeMessage.includes('gguf_writer_write_memory'),
  `gguf_writer_write_file: the message names the path and the way out: '${writeMessage}'`);
lib.gguf_writer_free(w);

const h2 = lib.gguf_open_memory(out, size);
check(h2 !== 0, `gguf_open_memory of the written bytes: ${lastError()}`);
if (h2 !== 0) {
  eq(Number(lib.gguf_file_size(h2)), size, 'written file: size');
  eq(Number(lib.gguf_tensor_count(h2)), 1, 'written file: tensor count');
  eq(metadata(h2, 'general.architecture')?.value, arch, 'written file: general.architecture');
  eq(metadata(h2, 'wasm.answer')?.value, 42, 'written file: wasm.answer');
  const p = ptr(lib.gguf_get_tensor_by_index(h2, 0n));
  check(p !== 0, `written file: tensor 0: ${lastError()}`);
  if (p !== 0) {
    const t = tensorInfo(p);
    eq(t.name, name, 'written file: tensor name');
    eq(JSON.stringify(t.shape), '[3,2]', 'written file: tensor shape');
    eq(t.type_id, GGUF_DTYPE_F32, 'written file: tensor type');
    const data = ptr(lib.gguf_tensor_data(h2, p));
    check(data >= out && data + t.size <= out + size, 'written file: data inside the written bytes');
    const got = Buffer.from(u8().subarray(data, data + t.size));
    check(Buffer.compare(got, tensorBytes) === 0, 'written file: tensor data');
  }
  lib.gguf_close(h2);
}

// 3. Files: no file system on wasm32-unknown-unknown.
lib.gguf_clear_error();
const h3 = lib.gguf_open(cstr(ggufPath));
eq(h3, 0, 'gguf_open of a path');
eq(u32(lib.gguf_last_error_code()), GGUF_ERROR_CODE_UNSUPPORTED, 'gguf_open: error code');
const message = readCstr(ptr(lib.gguf_last_error())) ?? '';
check(message.includes(ggufPath) && message.includes('gguf_open_memory'),
  `gguf_open: the message names the path and the way out: '${message}'`);

// The allocator stayed out of the region grown here: the lent file is intact.
check(Buffer.compare(Buffer.from(u8().subarray(fileAt, fileAt + file.length)), file) === 0,
  'the lent file bytes are unchanged after every call');

if (failures > 0) {
  console.error(`tests/wasm/smoke.mjs: ${failures} failure(s)`);
  process.exit(1);
}
console.log(`tests/wasm/smoke.mjs: ok (${expected.tensor_count} tensors, ${expected.metadata_count} keys; ` +
  `writer to memory ${size} bytes; gguf_open: '${message}')`);
