// Servers that lie about ranges or sizes get clear refusals, as the C library's gguf_open_url
// gives them (tests/url.rs): a GGUFError (code 1, GGUF_ERROR_CODE_IO) whose one message starts
// "gguf: ", names the URL and the range asked for, and says what the server did; and the
// WebAssembly module neither traps nor grows its memory without bound whatever it is given.
// The server is a raw TCP one, so it can say what a well-behaved HTTP server never would; each
// response closes its connection.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gguf, GGUFError } from "../src/index.js";

// Every instance the package makes, to read its memory's size afterwards.
const instances = [];
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = async function (...args) {
  const r = await instantiate.apply(this, args);
  const instance = r instanceof WebAssembly.Instance ? r : r.instance;
  // (Node's fetch instantiates its own module, llhttp, once: not the package's.)
  if (instance.exports.lg_open) instances.push(instance);
  return r;
};
/** The stated bound: after refusing any input, an instance's memory is at most 16 MiB (its
 * initial memory is about 1.4 MiB; the first prefix read is 2 MiB). */
const MEMORY_BOUND = 16 << 20;
function memoryOfTheLastCall(since) {
  assert.ok(instances.length > since, "the call made no WebAssembly instance");
  return Math.max(...instances.slice(since).map((i) => i.exports.memory.buffer.byteLength));
}

const root = new URL("../..", import.meta.url).pathname;
const llama = process.env.GGUF_LLAMA_SRC_DIR ?? join(root, "target/llama.cpp");
// A file longer than the first request (2 MiB), so that a later range is asked for too.
const vocabPath = join(llama, "models/ggml-vocab-gemma-4.gguf");
if (!existsSync(vocabPath)) throw new Error(`no ${vocabPath} (llama.cpp's sources: make llama-src, or GGUF_LLAMA_SRC_DIR)`);
const vocab = readFileSync(vocabPath);
const FIRST = 2 * 1024 * 1024;

// A header claiming a 2^40-byte string, in a file the server says is 2^41 bytes (zeros after the
// header): the claim is past what a header may take (256 MiB), refused before reading it.
const claim = (() => {
  const b = Buffer.alloc(64);
  b.write("GGUF", 0);
  b.writeUInt32LE(3, 4);
  b.writeBigUInt64LE(0n, 8);
  b.writeBigUInt64LE(1n, 16);
  b.writeBigUInt64LE(12n, 24);
  b.write("general.name", 32);
  b.writeUInt32LE(8, 44);
  b.writeBigUInt64LE(1n << 40n, 48);
  return b;
})();

// A header whose one string is 64 MiB long, served honestly (the file is the header alone): read
// in two requests (2 MiB, then the rest), within the 256 MiB a header may take.
const LONG = 64 << 20;
const long = (() => {
  const b = Buffer.alloc(56 + LONG, 0x61);
  claim.copy(b, 0, 0, 48);
  b.writeBigUInt64LE(BigInt(LONG), 48);
  return b;
})();

let sent = 0;
const requests = [];
const sockets = new Set();
const server = createServer((socket) => {
  sockets.add(socket);
  socket.on("close", () => sockets.delete(socket));
  socket.on("error", () => {});
  let head = "";
  socket.on("data", (d) => {
    if (head.includes("\r\n\r\n")) return;
    head += d.toString("latin1");
    if (!head.includes("\r\n\r\n")) return;
    const path = head.split(" ")[1];
    const m = /\r\nrange: *bytes=(\d+)-(\d+)\r\n/i.exec(head);
    requests.push({ path, range: m?.[0].trim() });
    answer(socket, path.slice(1), m ? [Number(m[1]), Number(m[2])] : undefined);
  });
});
function write(socket, status, headers, body) {
  const lines = [`HTTP/1.1 ${status}`, "connection: close", ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  socket.write(lines.join("\r\n") + "\r\n\r\n");
  if (body) {
    sent += body.length;
    socket.write(body);
  }
}
function answer(socket, how, asked) {
  const [start, last] = asked ?? [0, vocab.length - 1];
  const end = Math.min(last, vocab.length - 1);
  const honest = (from = start, to = end, total = vocab.length) => `bytes ${from}-${to}/${total}`;
  const slice = (from = start, to = end) => vocab.subarray(from, to + 1);
  switch (how) {
    case "ignores-ranges": { // 200 and a body without end (the whole "file", 1 GiB)
      write(socket, "200 OK", { "content-length": 1 << 30 });
      const chunk = Buffer.alloc(1 << 20, 7);
      const push = () => {
        while (!socket.destroyed && sent < 1 << 30) {
          sent += chunk.length;
          if (!socket.write(chunk)) return socket.once("drain", push);
        }
      };
      return push();
    }
    case "range-elsewhere": // the bytes from 1 on, labelled so
      write(socket, "206 Partial Content", { "content-range": honest(start + 1), "content-length": end - start }, slice(start + 1));
      return socket.end();
    case "more-than-asked": { // up to 1000 bytes past the range, labelled so
      const to = Math.min(end + 1000, vocab.length - 1);
      write(socket, "206 Partial Content", { "content-range": honest(start, to), "content-length": to + 1 - start }, slice(start, to));
      return socket.end();
    }
    case "less-than-asked": // the range's first half only, labelled so, far from the file's end
      write(socket, "206 Partial Content", { "content-range": honest(start, start + (end - start) / 2 - 1 | 0) }, slice(start, start + (end - start) / 2 - 1 | 0));
      return socket.end();
    case "size-changes": // a later answer says the file grew
      write(socket, "206 Partial Content", { "content-range": honest(start, end, vocab.length + (start > 0 ? 1 : 0)), "content-length": end - start + 1 }, slice());
      return socket.end();
    case "range-past-its-size": // a Content-Range ending past the size it gives
      write(socket, "206 Partial Content", { "content-range": honest(start, end, 1000), "content-length": end - start + 1 }, slice());
      return socket.end();
    case "short-body": // Content-Length and Content-Range honest, then the connection is cut halfway
      write(socket, "206 Partial Content", { "content-range": honest(), "content-length": end - start + 1 }, slice(start, start + (end - start) / 2 | 0));
      return socket.destroy();
    case "longer-length": // a Content-Length 1000 bytes over what is sent, then the connection closes
      write(socket, "206 Partial Content", { "content-range": honest(), "content-length": end - start + 1001 }, slice());
      return socket.end();
    case "short-framed": // a Content-Length, and body, half the Content-Range's
      write(socket, "206 Partial Content", { "content-range": honest(), "content-length": (end - start + 1) / 2 | 0 }, slice(start, start + ((end - start + 1) / 2 | 0) - 1));
      return socket.end();
    case "longer-framed": // Content-Range honest, a Content-Length and body 1000 bytes longer
      write(socket, "206 Partial Content", { "content-range": honest(), "content-length": end - start + 1001 }, vocab.subarray(start, end + 1001));
      return socket.end();
    case "huge-claim": { // the header claiming 2^40 bytes, in a file said to be 2^41
      const total = 2n ** 41n;
      const body = Buffer.alloc(end - start + 1);
      claim.copy(body, 0, start);
      write(socket, "206 Partial Content", { "content-range": `bytes ${start}-${end}/${total}`, "content-length": body.length }, body);
      return socket.end();
    }
    case "long-string": {
      const to = Math.min(last, long.length - 1);
      write(socket, "206 Partial Content", { "content-range": `bytes ${start}-${to}/${long.length}`, "content-length": to - start + 1 }, long.subarray(start, to + 1));
      return socket.end();
    }
    default: // honest
      write(socket, "206 Partial Content", { "content-range": honest(), "content-length": end - start + 1 }, slice());
      return socket.end();
  }
}
await new Promise((r) => server.listen(0, "127.0.0.1", r));
after(() => {
  for (const s of sockets) s.destroy();
  server.close();
});
const url = (how) => `http://127.0.0.1:${server.address().port}/${how}`;

/** Opens `how`'s URL: the refusal, checked to be one clear message naming the URL and the first
 * range that went wrong, within 10 s, with the module's memory within the bound. */
async function refusal(how, range) {
  const since = instances.length;
  const started = Date.now();
  const e = await gguf(url(how)).then(() => assert.fail(`${how}: accepted`), (e) => e);
  assert.ok(e instanceof GGUFError, `${how}: not a GGUFError: ${e?.stack}`);
  assert.equal(e.code, 1, `${how}: code ${e.code}: ${e.message}`);
  assert.ok(e.message.startsWith("gguf: ") && e.message.split("gguf: ").length === 2, `${how}: ${e.message}`);
  assert.ok(e.message.includes(url(how)), `${how}: ${e.message}`);
  assert.ok(e.message.includes(range), `${how}: no ${range} in: ${e.message}`);
  assert.ok(Date.now() - started < 10_000, `${how}: ${Date.now() - started} ms`);
  const memory = memoryOfTheLastCall(since);
  assert.ok(memory <= MEMORY_BOUND, `${how}: ${memory} bytes of memory`);
  return e.message;
}
const first = `bytes 0-${FIRST - 1}`;

test("an honest server's file opens (the server itself is sound)", async () => {
  const got = await gguf(url("honest"));
  assert.equal(got.metadata["tokenizer.ggml.tokens"].length, 262144);
});

test("a server ignoring ranges is refused without downloading the body", async () => {
  sent = 0;
  const text = await refusal("ignores-ranges", first);
  assert.match(text, /HTTP 200/);
  await new Promise((r) => setTimeout(r, 500));
  assert.ok(sent < 64 << 20, `${sent} bytes were sent`);
});

for (const [how, says, range] of [
  ["range-elsewhere", /Content-Range/, first],
  ["more-than-asked", /Content-Range|more bytes than/, first],
  ["less-than-asked", /Content-Range/, first],
  ["range-past-its-size", /Content-Range|size/, first],
  ["size-changes", /size/, `bytes ${FIRST}-`],
  ["short-body", /ended|bytes/, first],
  ["longer-length", /ended|bytes/, first],
  ["short-framed", /bytes/, first],
  ["longer-framed", /bytes/, first],
]) {
  test(`a server answering ${how} is refused`, async () => {
    assert.match(await refusal(how, range), says);
  });
}

test("nothing listening is named", async () => {
  const probe = createServer();
  await new Promise((r) => probe.listen(0, "127.0.0.1", r));
  const dead = `http://127.0.0.1:${probe.address().port}/m.gguf`;
  await new Promise((r) => probe.close(r));
  const e = await gguf(dead).then(() => assert.fail("accepted"), (e) => e);
  assert.ok(e instanceof GGUFError, `not a GGUFError: ${e?.stack}`);
  assert.equal(e.code, 1, e.message);
  assert.ok(e.message.includes(dead) && e.message.includes(first), e.message);
});

test("a header claiming more than a header may take is refused after one request", async () => {
  const since = instances.length;
  const from = requests.length;
  const e = await gguf(url("huge-claim")).then(() => assert.fail("accepted"), (e) => e);
  assert.ok(e instanceof GGUFError, e?.stack);
  assert.match(e.message, /268435456 bytes/);
  assert.equal(requests.length - from, 1, JSON.stringify(requests.slice(from)));
  assert.ok(memoryOfTheLastCall(since) <= MEMORY_BOUND);
});

// What a header may make the module take: about twice the header (the prefix, and the
// description handed back), the header at most 256 MiB. Measured here: 2.06 times the string.
test("a 64 MiB string is read with the module's memory at most three times it", { timeout: 120_000 }, async () => {
  const since = instances.length;
  const from = requests.length;
  const got = await gguf(url("long-string"));
  assert.equal(got.metadata["general.name"].length, LONG);
  assert.equal(requests.length - from, 2, JSON.stringify(requests.slice(from)));
  const memory = memoryOfTheLastCall(since);
  assert.ok(memory <= 3 * LONG + MEMORY_BOUND, `${memory} bytes of memory`);
});
