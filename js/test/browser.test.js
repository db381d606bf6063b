// The package in a browser: headless Chromium (Debian's chromium, /usr/bin/chromium; js/test.sh
// installs it where missing) loads the packed package (npm pack's tarball, unpacked) in a page
// (browser/index.html) from a loopback HTTP server with Range support, and parses the Gemma
// vocabulary's header (llama.cpp's ggml-vocab-gemma-4.gguf: 262144 tokens, 15 MB) and the
// bundled sample by range requests, from a Blob and from bytes; each result deep-equal to
// Node's for the same gguf() call (itself deep-equal to @huggingface/gguf 0.4.6's), and the
// refusals the same as Node's. Chromium is driven through the DevTools protocol over a pipe
// (--remote-debugging-pipe: JSON messages ended by NUL, on file descriptors 3 and 4).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gguf as hf } from "@huggingface/gguf";
import { gguf } from "../src/index.js";
import { serve } from "../test-support/server.js";

const CHROMIUM = "/usr/bin/chromium";
const js = new URL("..", import.meta.url).pathname;
const root = join(js, "..");
const llama = process.env.GGUF_LLAMA_SRC_DIR ?? join(root, "target/llama.cpp");
const files = {
  "sample.gguf": join(root, "testdata/sample.gguf"),
  "ggml-vocab-gemma-4.gguf": join(llama, "models/ggml-vocab-gemma-4.gguf"),
};
for (const [name, path] of Object.entries(files)) {
  if (!existsSync(path)) throw new Error(`${name}: no ${path} (llama.cpp's sources: make llama-src, or GGUF_LLAMA_SRC_DIR)`);
}
if (!existsSync(CHROMIUM)) throw new Error(`no ${CHROMIUM}: apt-get install chromium (js/test.sh does, as root)`);

// The package as npm would publish it.
const work = mkdtempSync(join(tmpdir(), "libgguf-browser-"));
after(() => rmSync(work, { recursive: true, force: true }));
const tarball = execFileSync("npm", ["pack", "--silent", "--pack-destination", work], { cwd: js, encoding: "utf8" })
  .trim().split("\n").pop();
execFileSync("tar", ["-xzf", join(work, tarball), "-C", work]);
const pkg = join(work, "package");

// The loopback server: / the page, /package/... the unpacked package, /files/NAME a file with
// Range support, /whole/NAME the same ignoring Range (200 and the whole file). Each response
// closes its connection: a reader parsing for long between requests finds no kept-alive socket
// closed under it.
const requests = [];
const { server, base } = await serve(files, {
  prefix: "/files/",
  paths: { "/": new URL("browser/index.html", import.meta.url).pathname, "/package/": pkg },
  closeConnections: true,
  onRequest: (r) => requests.push(r),
});
after(() => server.close());

// Chromium, and the DevTools protocol over its pipe.
const profile = mkdtempSync(join(tmpdir(), "libgguf-chromium-"));
const chromium = spawn(CHROMIUM, [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--disable-dev-shm-usage", `--user-data-dir=${profile}`, "--remote-debugging-pipe", "about:blank",
], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let stderr = "";
chromium.stderr.on("data", (d) => { stderr = (stderr + d).slice(-8000); });
const pending = new Map();
const listeners = new Set();
let exited;
chromium.on("exit", (code, signal) => {
  exited = new Error(`chromium exited (${code ?? signal}); its last output:\n${stderr}`);
  for (const { reject } of pending.values()) reject(exited);
  pending.clear();
});
const [toChromium, fromChromium] = [chromium.stdio[3], chromium.stdio[4]];
toChromium.on("error", () => {}); // a write after chromium exited: reported by its exit
let inbox = Buffer.alloc(0);
fromChromium.on("data", (chunk) => {
  inbox = Buffer.concat([inbox, chunk]);
  for (let end; (end = inbox.indexOf(0)) >= 0; inbox = inbox.subarray(end + 1)) {
    const msg = JSON.parse(inbox.subarray(0, end).toString("utf8"));
    if (msg.id !== undefined) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) p?.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p?.resolve(msg.result);
    } else {
      for (const l of listeners) l(msg);
    }
  }
});
/** `promise`, or a failure naming `what` after `ms` milliseconds. */
function within(ms, what, promise) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer from chromium in ${ms} ms; its last output:\n${stderr}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
let lastId = 0;
function cdp(method, params = {}, sessionId) {
  if (exited) return Promise.reject(exited);
  return within(150_000, method, new Promise((resolve, reject) => {
    const id = ++lastId;
    pending.set(id, { resolve, reject, method });
    toChromium.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
  }));
}
function nextEvent(method, sessionId) {
  return within(60_000, method, new Promise((resolve) => {
    const l = (msg) => {
      if (msg.method === method && msg.sessionId === sessionId) {
        listeners.delete(l);
        resolve(msg.params);
      }
    };
    listeners.add(l);
  }));
}
after(async () => {
  if (!exited) {
    const gone = new Promise((r) => chromium.once("exit", r));
    await within(5000, "Browser.close", cdp("Browser.close")).catch(() => {});
    const timer = setTimeout(() => chromium.kill("SIGKILL"), 5000);
    await gone;
    clearTimeout(timer);
  }
  rmSync(profile, { recursive: true, force: true });
});

// The page, loaded.
const problems = [];
const { targetId } = await cdp("Target.createTarget", { url: "about:blank" });
const { sessionId } = await cdp("Target.attachToTarget", { targetId, flatten: true });
listeners.add((msg) => {
  if (msg.sessionId !== sessionId) return;
  if (msg.method === "Runtime.exceptionThrown") problems.push(msg.params.exceptionDetails.exception?.description ?? msg.params.exceptionDetails.text);
  if (msg.method === "Runtime.consoleAPICalled" && msg.params.type === "error") problems.push(msg.params.args.map((a) => a.value ?? a.description).join(" "));
  if (msg.method === "Log.entryAdded" && msg.params.entry.level === "error") problems.push(msg.params.entry.text);
});
await cdp("Page.enable", {}, sessionId);
await cdp("Runtime.enable", {}, sessionId);
await cdp("Log.enable", {}, sessionId);
const loaded = nextEvent("Page.loadEventFired", sessionId);
await cdp("Page.navigate", { url: `${base}/` }, sessionId);
await loaded;

async function evaluate(expression) {
  const r = await cdp("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true }, sessionId);
  if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
  return r.result.value;
}
const ready = await evaluate("window.ready === true");
assert.ok(ready, `the page did not load the package: ${problems.join("\n")}`);

function decode(v) {
  if (Array.isArray(v)) return v.map(decode);
  if (v !== null && typeof v === "object") {
    if ("$bigint" in v) return BigInt(v.$bigint);
    if ("$number" in v) return Number(v.$number);
    return Object.fromEntries(v.$object.map(([k, x]) => [k, decode(x)]));
  }
  return v;
}
/** The page's `fn`(...args): { ok: result } or { error: { name, message, code } }. */
async function inPage(fn, ...args) {
  const out = JSON.parse(await evaluate(`${fn}(...${JSON.stringify(args)})`));
  return out.error ? out : { ok: decode(out.ok) };
}
async function inNode(run) {
  try {
    return { ok: await run() };
  } catch (e) {
    return { error: { name: e.name, message: e.message, code: e.code } };
  }
}

for (const name of Object.keys(files)) {
  test(`${name} in Chromium, by range requests, from a Blob and from bytes: as in Node`, { timeout: 180_000 }, async () => {
    const url = `${base}/files/${name}`;
    for (const options of [{}, { computeParametersCount: true }]) {
      const want = await gguf(url, options);
      const reference = await hf(files[name], { ...options, allowLocalFile: true });
      assert.deepStrictEqual(want, reference, "Node: libgguf and @huggingface/gguf differ");
      const from = requests.length;
      assert.deepStrictEqual(await inPage("parseUrl", url, options), { ok: want });
      const asked = requests.slice(from).filter((r) => r.path === `/files/${name}`);
      assert.ok(asked.length >= 1 && asked.length <= 4, `${asked.length} requests`);
      assert.ok(asked.every((r) => /^bytes=\d+-\d+$/.test(r.range)), JSON.stringify(asked));
      assert.deepStrictEqual(await inPage("parseBlob", url, options), { ok: want });
      assert.deepStrictEqual(await inPage("parseBytes", url, options), { ok: want });
    }
    assert.deepStrictEqual(problems, []);
  });
}

test("refusals in Chromium are Node's: a server ignoring ranges, bytes that are not GGUF", { timeout: 60_000 }, async () => {
  const whole = `${base}/whole/sample.gguf`;
  const node = await inNode(() => gguf(whole));
  assert.match(node.error?.message ?? "", /HTTP 200/);
  assert.deepStrictEqual(await inPage("parseUrl", whole), node);
  // The sample with its magic spoilt, as bytes: libgguf's message and code (11, not GGUF).
  const bytes = new Uint8Array(readFileSync(files["sample.gguf"]));
  bytes[0] = 0;
  const spoilt = await inNode(() => gguf(bytes));
  assert.equal(spoilt.error?.code, 11, JSON.stringify(spoilt));
  const page = JSON.parse(await evaluate(`(async () => {
    const b = new Uint8Array(await (await fetch(${JSON.stringify(`${base}/files/sample.gguf`)})).arrayBuffer());
    b[0] = 0;
    return JSON.stringify(await (await import("/package/src/index.js")).gguf(b).then(() => ({}), (e) => ({ error: { name: e.name, message: e.message, code: e.code } })));
  })()`));
  assert.deepStrictEqual(page, spoilt);
});
