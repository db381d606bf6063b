// The C library's answers through the Python package (reference.py): the Python of
// GGUF_PYTHON (make test's virtual environment, which the repository's .venv is by default),
// with python/ on its path, finding the library the checkout built (target/release or
// target/debug) or LIBGGUF_PATH.
import { spawnSync } from "node:child_process";
import { join } from "node:path";

export const root = new URL("../..", import.meta.url).pathname;
const python = process.env.GGUF_PYTHON || join(root, ".venv/bin/python");

export function reference(command, args, request = {}) {
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

/** The vocabulary files of llama.cpp's sources, when GGUF_LLAMA_SRC_DIR names them. */
export function llamaVocabs(readdirSync) {
  const llama = process.env.GGUF_LLAMA_SRC_DIR;
  if (!llama) return [];
  const dir = join(llama, "models");
  return readdirSync(dir).sort().filter((f) => /^ggml-vocab-.*\.gguf$/.test(f)).map((f) => join(dir, f));
}
