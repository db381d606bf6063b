// Every ```js example of the documents (README.md, docs/*.md) runs: each document's blocks, in
// order, as one module (they follow on from each other), imported as the package by its name,
// on the bundled sample given a chat template, named model.gguf in the working directory, and
// with the examples' URL answered by the tests' loopback server (test-support/server.js).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { serve } from "../test-support/server.js";

const root = new URL("../..", import.meta.url).pathname;
const python = process.env.GGUF_PYTHON || join(root, ".venv/bin/python");
const tmp = mkdtempSync(join(tmpdir(), "libgguf-js-docs-"));
// Inside the package, so that `import ... from "libgguf"` resolves to it (a package may import
// itself by its name through its "exports"), and outside test/, whose every script
// `node --test test/` runs: one left by an interrupted run is never taken for a test.
const scripts = mkdtempSync(join(root, "js/test-support/.docs-"));
after(() => {
  rmSync(tmp, { recursive: true, force: true });
  rmSync(scripts, { recursive: true, force: true });
});

const URL_IN_DOCS = "https://example.com/model.gguf";

function jsBlocks(file) {
  const blocks = [];
  let open = null;
  readFileSync(join(root, file), "utf8").split("\n").forEach((line, i) => {
    if (open === null && line.startsWith("```")) open = { lang: line.slice(3).trim().split(/\s+/)[0], line: i + 1, code: "" };
    else if (open !== null && line === "```") {
      if (open.lang === "js") blocks.push(open);
      open = null;
    } else if (open !== null) open.code += line + "\n";
  });
  assert.equal(open, null, `${file}: a code block is not closed`);
  return blocks;
}

function run(script) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [script], { cwd: tmp, env: { ...process.env, NO_PROXY: "127.0.0.1" } });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

test("every js example of the documents runs on the sample", async () => {
  const model = join(tmp, "model.gguf");
  const r = spawnSync(python, [join(root, "js/test/reference.py"), "with-template", model], {
    input: JSON.stringify({
      source: join(root, "testdata/sample.gguf"),
      template: "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}",
    }),
    env: { ...process.env, PYTHONPATH: join(root, "python") },
    encoding: "utf8",
  });
  assert.equal(r.status, 0, `reference.py with-template: ${r.stderr}`);
  const { server, base } = await serve({ "model.gguf": readFileSync(model) });
  const url = `${base}/model.gguf`;
  try {
    const docs = ["README.md", ...readdirSync(join(root, "docs")).filter((n) => n.endsWith(".md")).sort().map((n) => `docs/${n}`)];
    let ran = 0;
    for (const doc of docs) {
      const blocks = jsBlocks(doc);
      if (blocks.length === 0) continue;
      const script = join(scripts, `${doc.replace(/\W/g, "_")}.mjs`);
      writeFileSync(script, blocks.map((b) => `// ${doc}:${b.line}\n${b.code.replaceAll(URL_IN_DOCS, url)}`).join(""));
      // A child process, as a user's program; the server runs in this one, so it is waited for
      // without blocking.
      const child = await run(script);
      assert.ok(child.status === 0 && child.stderr === "", `${doc}: the js examples failed on the sample (${child.status}):\n${child.stdout}\n${child.stderr}`);
      ran += blocks.length;
    }
    assert.ok(ran >= 3, `only ${ran} js examples found`);
  } finally {
    server.close();
  }
});
