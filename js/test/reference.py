"""The C library's answers (through the Python package, python/) that open.test.mjs
compares open() with: run by it as `python reference.py COMMAND ARGS`, a JSON request on stdin,
a JSON answer on stdout.

- `tokens FILE`: {"texts": [...]} -> for each text and each (add_special, parse_special), the
  ids, and for those ids each (remove_special, unparse_special) decoding, as hex bytes;
- `tensors FILE DIR`: {} -> the tensors' names; each one's values (float32, little-endian)
  written to DIR/<index>.f32;
- `chat FILE`: {"requests": [[name, request, llama_cpp], ...]} -> each prompt, or the error;
- `write FILE ORDER`: {"seed": n, "templates": {name: source}} -> a file of one tensor of
  random bytes per data type the library converts in that byte order, with those chat
  templates; the types written;
- `with-template FILE`: {"source": path, "template": source} -> FILE: the file at path, its
  tensors included, with that chat template; null.
"""

import json
import os
import random
import sys

import libgguf
from libgguf import DataType

FLAGS = [(a, p) for a in (False, True) for p in (False, True)]


def tokens(path, req):
    with libgguf.open(path) as f:
        tok = f.tokenizer()
    out = []
    for text in req["texts"]:
        for add, parse in FLAGS:
            ids = tok.encode(text, add_special=add, parse_special=parse)
            decoded = {
                f"{int(r)}{int(u)}": tok.decode_bytes(ids, r, u).hex() for r, u in FLAGS
            }
            out.append({"text": text, "add": add, "parse": parse, "ids": ids, "decoded": decoded})
    return out


def tensors(path, req, outdir):
    names = []
    with libgguf.open(path) as f:
        for i, t in enumerate(f.tensors):
            names.append(t.name)
            values = t.to_numpy_float(threads=1).astype("<f4", copy=False)
            with open(os.path.join(outdir, f"{i}.f32"), "wb") as out:
                out.write(values.tobytes())
    return names


def chat(path, req):
    out = []
    with libgguf.open(path) as f:
        for name, request, llama_cpp in req["requests"]:
            try:
                t = f.chat_template(name)
                r = dict(request)
                messages = r.pop("messages")
                out.append({"prompt": t.render(messages, llama_cpp=llama_cpp, **r)})
            except libgguf.GGUFError as e:
                out.append({"error": str(e), "code": int(e.code)})
    return out


# The byte orders a type is converted in (big-endian: the types ggml's big-endian reader has).
BIG = {"F32", "F16", "BF16", "Q4_0", "Q8_0", "Q4_K", "Q6_K", "MXFP4", "NVFP4"}


def write(path, req, order):
    rng = random.Random(req["seed"])
    lib = libgguf._native.load()
    w = libgguf.Writer(byte_order=order)
    w.set_string("general.architecture", "test")
    for name, source in req.get("templates", {}).items():
        w.set_string("tokenizer.chat_template" + ("" if name == "" else "." + name), source)
    written = []
    for t in DataType:
        if order == "big" and t.name not in BIG:
            continue
        block, size = lib.gguf_dtype_block_size(int(t)), lib.gguf_dtype_block_bytes(int(t))
        if block == 0 or size == 0:
            continue
        blocks = 3
        data = bytes(rng.getrandbits(8) for _ in range(blocks * size))
        w.add_tensor(f"t.{t.name}", data, dtype=t, shape=[block, blocks])
        written.append(t.name)
    w.write_file(path)
    return written


def with_template(path, req):
    with libgguf.open(req["source"]) as f, libgguf.Writer.from_file(f) as w:
        w.set_string("tokenizer.chat_template", req["template"])
        w.write_file(path)
    return None


def main():
    cmd, path, *rest = sys.argv[1:]
    req = json.load(sys.stdin)
    if cmd == "tokens":
        out = tokens(path, req)
    elif cmd == "tensors":
        out = tensors(path, req, rest[0])
    elif cmd == "chat":
        out = chat(path, req)
    elif cmd == "with-template":
        out = with_template(path, req)
    elif cmd == "write":
        out = write(path, req, rest[0])
    else:
        raise SystemExit(f"reference.py: no command {cmd}")
    json.dump(out, sys.stdout)


main()
