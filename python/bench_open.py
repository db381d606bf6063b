#!/usr/bin/env python3
"""Median time to open a GGUF file from Python: libgguf.open vs the reference gguf.GGUFReader.

    python/bench_open.py FILE [ROUNDS]

libgguf: `libgguf.open(FILE)` plus reading every metadata key and its type (no array is
decoded); the handle is closed outside the timed region. Reference: `gguf.GGUFReader(FILE)`,
which parses every field (arrays included) and the tensor table while opening (at most 5 rounds:
it takes seconds on a 262144-token vocabulary). Also shown, for
libgguf: the tensor list, and the first (bulk) decoding of `tokenizer.ggml.tokens` when present.

The vocabulary as Python strings is also measured against the C call it starts with, side by
side (alternating rounds, each on a freshly opened file, open and close untimed): the C call is
the first `gguf_get_string_array` through ctypes (it builds the handle's copy of the strings);
the Python side is the first `f.metadata["tokenizer.ggml.tokens"]` (that call, then the
StringArray over a copy of its block), and that plus `.tolist()` (every token a `str`).
Run from the repository root with `PYTHONPATH=python` (or with the package installed); the
reference needs `pip install gguf` (the repository's .venv has it).
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time


def median_seconds(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter()
        after = fn()
        times.append(time.perf_counter() - t0)
        if after is not None:
            after()
    return statistics.median(times)


def side_by_side(fns: dict, rounds: int) -> dict:
    """Each function returns the seconds it measured itself; rounds alternate between them.
    Returns name -> (min, median)."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            gc.collect()
            times[name].append(fn())
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:9.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:9.3f} ms"
    return f"{seconds:9.3f} s "


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    path = argv[1]
    rounds = int(argv[2]) if len(argv) == 3 else 20

    import libgguf

    try:
        from gguf import GGUFReader
    except ImportError:
        GGUFReader = None

    def libgguf_open():
        f = libgguf.open(path)
        m = f.metadata
        for key in m:
            m.type(key)
        return f.close

    def libgguf_open_tensors():
        f = libgguf.open(path)
        list(f.metadata)
        f.tensors
        return f.close

    def libgguf_tokens():
        f = libgguf.open(path)
        f.metadata["tokenizer.ggml.tokens"]
        return f.close

    def reference_open():
        r = GGUFReader(path)
        return lambda: r  # dropped (and unmapped) after the timed region

    with libgguf.open(path) as f:
        n_keys, n_tensors = len(f.metadata), f.tensor_count
        has_tokens = "tokenizer.ggml.tokens" in f.metadata
        n_tokens = f.metadata.field("tokenizer.ggml.tokens").length if has_tokens else 0

    print(f"file: {path} ({os.path.getsize(path)} bytes, {n_keys} keys, {n_tensors} tensors, "
          f"{n_tokens} tokens); median of {rounds} rounds; library {libgguf.library_path()}")
    ours = median_seconds(libgguf_open, rounds)
    print(f"libgguf.open + metadata keys and types     {fmt(ours)}")
    print(f"libgguf.open + keys + tensor list          {fmt(median_seconds(libgguf_open_tensors, rounds))}")
    if has_tokens:
        print(f"libgguf.open + decode tokenizer.ggml.tokens {fmt(median_seconds(libgguf_tokens, rounds))}")
        vocab_side_by_side(libgguf, path, max(rounds, 21))
    if GGUFReader is None:
        print("gguf.GGUFReader: not installed (pip install gguf)")
        return 0
    ref_rounds = min(rounds, 5)  # it takes seconds on a large vocabulary
    ref = median_seconds(reference_open, ref_rounds)
    print(f"gguf.GGUFReader(path) ({ref_rounds} rounds)           {fmt(ref)}")
    print(f"ratio (GGUFReader / libgguf.open)          {ref / ours:9.1f}x")
    return 0


def vocab_side_by_side(libgguf, path: str, rounds: int) -> None:
    import ctypes

    key = "tokenizer.ggml.tokens"

    def c_call():
        f = libgguf.open(path)
        h = f._core.h
        n = ctypes.c_uint64()
        t0 = time.perf_counter()
        ok = h.lib.gguf_get_string_array(h.ptr, key.encode(), ctypes.byref(n))
        t = time.perf_counter() - t0
        assert ok
        f.close()
        return t

    def python_array():
        f = libgguf.open(path)
        m = f.metadata
        t0 = time.perf_counter()
        tokens = m[key]
        t = time.perf_counter() - t0
        assert len(tokens) == m.field(key).length
        f.close()
        return t

    def python_list():
        f = libgguf.open(path)
        m = f.metadata
        t0 = time.perf_counter()
        tokens = m[key].tolist()
        t = time.perf_counter() - t0
        assert len(tokens) == m.field(key).length
        f.close()
        return t

    r = side_by_side({"c": c_call, "py": python_array, "list": python_list}, rounds)
    (c_min, c_med), (p_min, p_med), (l_min, l_med) = r["c"], r["py"], r["list"]
    print(f"vocabulary, {rounds} alternating rounds (min / median):")
    print(f"  gguf_get_string_array (C, via ctypes)    {fmt(c_min)} / {fmt(c_med).strip()}")
    print(f"  metadata[{key!r}] {fmt(p_min)} / {fmt(p_med).strip()}")
    print(f"  the same + .tolist()                     {fmt(l_min)} / {fmt(l_med).strip()}")
    print(f"  ratio metadata[key] / C call             {p_min / c_min:9.2f}x / {p_med / c_med:.2f}x")
    print(f"  ratio .tolist() / C call                 {l_min / c_min:9.2f}x / {l_med / c_med:.2f}x")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
