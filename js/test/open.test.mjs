// open(): tokens, tensor values and chat prompts exactly as the C library gives them (through
// the Python package: reference.py), on the bundled sample, files of every tensor type written
// here (both byte orders) and llama.cpp's vocabulary files (GGUF_LLAMA_SRC_DIR); a closed file.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open, GGUFError } from "../src/index.js";
import { spawnSync } from "node:child_process";
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
const vocabs = llamaVocabs();

// The C library's answers through the Python package (reference.py): the Python of GGUF_PYTHON
// (make test's virtual environment; the repository's .venv by default), with python/ on its
// path, finding the library the checkout built (target/release or target/debug) or LIBGGUF_PATH.
const python = process.env.GGUF_PYTHON || join(root, ".venv/bin/python");
function reference(command, args, request = {}) {
  const r = spawnSync(python, [join(root, "js/test/reference.py"), command, ...args], {
    input: JSON.stringify(request),
    env: { ...process.env, PYTHONPATH: join(root, "python") },
    maxBuffer: 1 << 30,
    encoding: "utf8",
  });
  if (r.error) throw new Error(`reference.py: cannot run ${python}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`reference.py ${command} ${args.join(" ")} failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}
const tmp = mkdtempSync(join(tmpdir(), "libgguf-js-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

const TEXTS = [
  "", " ", "Hello world", " Hello  world\n\n\tbye ", "don't I'll we'VE 1234567 3.14159",
  "日本語のテキスト 🦙 naïve café", "<s>hello</s> <|im_start|>user\nhi<|im_end|><|endoftext|>",
  "<start_of_turn>model\n<bos><eos>[INST] x [/INST]", "    indented\n        code();\n",
  "\u00e9\u0301 \u{10FFFF}\u200b zwj👨‍👩‍👧", "a".repeat(300),
];

const hex = (b) => Buffer.from(b).toString("hex");

for (const f of [sample, ...vocabs]) {
  test(`${f}: encode and decode as the C library`, async () => {
    const want = reference("tokens", [f], { texts: TEXTS });
    const m = await open(f, { allowLocalFile: true });
    try {
      for (const c of want) {
        const what = `${JSON.stringify(c.text)} addSpecial ${c.add} parseSpecial ${c.parse}`;
        assert.deepStrictEqual(m.encode(c.text, { addSpecial: c.add, parseSpecial: c.parse }), c.ids, what);
        for (const [flags, bytes] of Object.entries(c.decoded)) {
          const options = { removeSpecial: flags[0] === "1", unparseSpecial: flags[1] === "1" };
          assert.equal(hex(m.decodeBytes(c.ids, options)), bytes, `${what}: decoded ${flags}`);
          assert.equal(m.decode(c.ids, options), new TextDecoder().decode(Buffer.from(bytes, "hex")));
        }
      }
      assert.deepStrictEqual(m.encode(new TextEncoder().encode("Hello world")), m.encode("Hello world"));
    } finally {
      await m.close();
    }
  });
}

// Values equal bit for bit (any NaN equal to any NaN: wasm does not keep NaNs' payloads).
function assertValues(got, wantBytes, what) {
  const want = new Float32Array(wantBytes.buffer, wantBytes.byteOffset, wantBytes.byteLength >> 2);
  assert.ok(got instanceof Float32Array, what);
  assert.equal(got.length, want.length, `${what}: length`);
  const gb = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const wb = new Uint32Array(want.buffer.slice(want.byteOffset, want.byteOffset + want.byteLength));
  for (let i = 0; i < got.length; i++) {
    if (gb[i] !== wb[i] && !(Number.isNaN(got[i]) && Number.isNaN(want[i]))) {
      assert.fail(`${what}: value ${i} is ${got[i]} (0x${gb[i].toString(16)}), the C library's ${want[i]} (0x${wb[i].toString(16)})`);
    }
  }
}

async function checkTensors(file, source, options = {}) {
  const dir = mkdtempSync(join(tmp, "values-"));
  const names = reference("tensors", [file, dir]);
  const m = await open(source, options);
  try {
    assert.deepStrictEqual(m.tensorInfos.map((t) => t.name), names);
    for (let i = 0; i < names.length; i++) {
      assertValues(await m.tensor(names[i]), readFileSync(join(dir, `${i}.f32`)), `${file}: ${names[i]}`);
    }
  } finally {
    await m.close();
  }
  return names;
}

test("the sample's tensors as the C library converts them (a path, bytes, a Blob)", async () => {
  const names = await checkTensors(sample, sample, { allowLocalFile: true });
  assert.equal(names.length, 21);
  await checkTensors(sample, readFileSync(sample));
  await checkTensors(sample, new Blob([readFileSync(sample)]));
});

const TEMPLATES = {
  "": "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>\n{% endfor %}" +
    "{% if add_generation_prompt %}<assistant>{% endif %}",
  tool_use: "{% for t in tools %}[{{ t | tojson }}]{% endfor %}{% for m in messages %}{{ m.role | upper }}: {{ m.content }}\n{% endfor %}",
};

for (const order of ["little", "big"]) {
  test(`every tensor type the library converts, ${order}-endian, as the C library converts it`, async () => {
    const file = join(tmp, `types-${order}.gguf`);
    const types = reference("write", [file, order], { seed: order === "little" ? 1 : 2, templates: TEMPLATES });
    assert.ok(types.length >= (order === "little" ? 30 : 9), types.join(" "));
    await checkTensors(file, file, { allowLocalFile: true });
  });
}

// A loopback server answering range requests for the sample.
let requests = 0;
const { server, base } = await serve({ "sample.gguf": sample }, { onRequest: () => requests++ });
after(() => server.close());

test("tensor values over HTTP: one range request per tensor", async () => {
  const url = `${base}/sample.gguf`;
  const names = await checkTensors(sample, url);
  const m = await open(url);
  try {
    requests = 0;
    await m.tensor(names[3]);
    assert.equal(requests, 1);
  } finally {
    await m.close();
  }
});

const CONVERSATION = {
  messages: [
    { role: "system", content: "Be brief. " },
    { role: "user", content: "Hi ✨" },
    { role: "assistant", content: "Hello." },
    { role: "user", content: "What is GGUF?" },
  ],
  add_generation_prompt: true,
};
const TOOLS = { ...CONVERSATION, tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }] };

function chatCases(names) {
  const cases = [];
  for (const name of names) {
    for (const llama of [false, true]) {
      cases.push([name, CONVERSATION, llama], [name, { ...CONVERSATION, add_generation_prompt: false }, llama], [name, TOOLS, llama]);
    }
  }
  return cases;
}

async function checkChat(file, names) {
  const cases = chatCases(names);
  const want = reference("chat", [file], { requests: cases });
  const m = await open(file, { allowLocalFile: true });
  try {
    cases.forEach(([name, request, llamaCpp], i) => {
      const options = { template: name ?? undefined, llamaCpp };
      const what = `${file}: template ${name}, llamaCpp ${llamaCpp}, case ${i}`;
      if (want[i].error !== undefined) {
        assert.throws(() => m.renderChat(request, options), (e) => e instanceof GGUFError && e.code === want[i].code, what);
      } else {
        assert.equal(m.renderChat(request, options), want[i].prompt, what);
        assert.equal(m.renderChat(JSON.stringify(request), options), want[i].prompt, what);
      }
    });
  } finally {
    await m.close();
  }
}

test("renderChat as gguf_chat_render, with the file's default and named templates", async () => {
  const file = join(tmp, "chat.gguf");
  reference("write", [file, "little"], { seed: 3, templates: TEMPLATES });
  await checkChat(file, [null, "tool_use"]);
  const m = await open(file, { allowLocalFile: true });
  try {
    assert.equal(m.renderChat({ messages: [{ role: "user", content: " x " }] }), "<user>x</user>\n");
    assert.throws(() => m.renderChat(CONVERSATION, { template: "missing" }), (e) => e instanceof GGUFError && e.code === 4);
    assert.throws(() => m.renderChat("{not json"), GGUFError);
  } finally {
    await m.close();
  }
});

for (const f of vocabs) {
  if (!readFileSync(f).includes("tokenizer.chat_template")) continue;
  test(`${f}: renderChat as gguf_chat_render`, async () => {
    await checkChat(f, [null]);
  });
}

test("close() frees the file; a second close() or any use after it is a GGUFError", async () => {
  const m = await open(sample, { allowLocalFile: true });
  assert.equal(m.closed, false);
  assert.equal(m.metadata["general.architecture"], "llama");
  await m.close();
  assert.equal(m.closed, true);
  const closed = (e) => e instanceof GGUFError && /the file is closed/.test(e.message) && e.code === 3;
  assert.throws(() => m.close(), closed);
  assert.throws(() => m.encode("x"), closed);
  assert.throws(() => m.decode([1]), closed);
  assert.throws(() => m.renderChat(CONVERSATION), closed);
  await assert.rejects(m.tensor("output.weight"), closed);
  assert.equal(m.metadata["general.architecture"], "llama", "the header stays readable");
});

test("a file never closed is closed once collected (the FinalizationRegistry)", () => {
  // In a child with gc(): the local file's descriptor is closed by the registry, not by Node's
  // own collection of the FileHandle (which warns "Closing file descriptor ... on garbage
  // collection").
  const script = `
    import { readdirSync, readlinkSync } from "node:fs";
    import { open } from ${JSON.stringify(new URL("../src/index.js", import.meta.url).href)};
    const path = ${JSON.stringify(sample)};
    const fds = () => readdirSync("/proc/self/fd").filter((fd) => { try { return readlinkSync("/proc/self/fd/" + fd) === path; } catch { return false; } }).length;
    let m = await open(path, { allowLocalFile: true });
    m.encode("x");
    const before = fds();
    m = null;
    for (let i = 0; i < 20 && fds() > 0; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 50)); }
    console.log(JSON.stringify({ before, after: fds() }));`;
  const r = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.deepStrictEqual(JSON.parse(r.stdout), { before: 1, after: 0 });
  assert.doesNotMatch(r.stderr, /Closing file descriptor/);
});

test("a tensor that is not there, and token ids that are not int32", async () => {
  const m = await open(readFileSync(sample));
  try {
    await assert.rejects(m.tensor("nope"), (e) => e instanceof GGUFError && e.code === 4 && /nope/.test(e.message));
    assert.throws(() => m.decode([1.5]), TypeError);
    assert.throws(() => m.decode([2 ** 31]), RangeError);
    assert.throws(() => m.decode([1e9]), GGUFError);
    assert.throws(() => m.encode(42), TypeError);
  } finally {
    await m.close();
  }
});

test("a file open() cannot read is refused with libgguf's message and code", async () => {
  await assert.rejects(open(new Uint8Array(64)), (e) => e instanceof GGUFError && e.code === 11);
});
