// The time to parse a large vocabulary's header with the JavaScript package (`libgguf`, js/)
// and with @huggingface/gguf 0.4.6 in the same Node process: from a local file and over a
// loopback HTTP server with range requests, interleaved rounds after a warm-up, minimum and
// median. Run after `js/build.sh` (and `npm ci` in js/):
//
//   node bench/js_header.mjs [ROUNDS] FILE...
//
// Each file's two results are checked deep-equal before anything is timed.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { cpus } from "node:os";
import { deepStrictEqual } from "node:assert";
import { gguf as ours } from "../js/src/index.js";
import { gguf as theirs } from "../js/node_modules/@huggingface/gguf/dist/index.mjs";
import { serve } from "../js/test-support/server.js";

const args = process.argv.slice(2);
const rounds = /^\d+$/.test(args[0] ?? "") ? Number(args.shift()) : 15;
if (args.length === 0) throw new Error("usage: node bench/js_header.mjs [ROUNDS] FILE...");

// The loopback server with range requests the package's tests use.
const { server, base } = await serve(Object.fromEntries(args.map((f) => [basename(f), readFileSync(f)])));

const time = async (f) => {
  const t = process.hrtime.bigint();
  await f();
  return Number(process.hrtime.bigint() - t) / 1e6;
};
const stat = (v) => {
  v.sort((a, b) => a - b);
  return [v[0], v[v.length >> 1]];
};
const ms = ([a, b]) => `${a.toFixed(1)} / ${b.toFixed(1)} ms`;

console.log(`${cpus()[0].model}, Node ${process.version}, ${rounds} rounds`);
console.log("| file | source | libgguf (min / median) | @huggingface/gguf (min / median) | speed-up (min) |");
console.log("| --- | --- | --- | --- | --- |");
for (const path of args) {
  const url = `${base}/${basename(path)}`;
  const sources = [
    ["local file", (g) => g(path, { allowLocalFile: true })],
    ["loopback HTTP", (g) => g(url)],
  ];
  for (const [name, call] of sources) {
    const [a, b] = [await call(ours), await call(theirs)];
    deepStrictEqual(a, b, `${path} (${name}): the two results differ`);
    const t = [[], []];
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < 2; k++) {
        const side = (r + k) % 2;
        t[side].push(await time(() => call(side === 0 ? ours : theirs)));
      }
    }
    const [o, h] = [stat(t[0]), stat(t[1])];
    console.log(`| ${basename(path)} | ${name} | ${ms(o)} | ${ms(h)} | **${(h[0] / o[0]).toFixed(1)}x** |`);
  }
}
server.close();
