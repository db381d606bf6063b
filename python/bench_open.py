#!/usr/bin/env python3
"""Median time to open a GGUF file from Python: libgguf.open vs the reference gguf.GGUFReader.

    python/bench_open.py FILE [ROUNDS]

libgguf: `libgguf.open(FILE)` plus reading every metadata key and its type (no array is
decoded); the handle is closed outside the timed region. Reference: `gguf.GGUFReader(FILE)`,
which parses every field (arrays included) and the tensor table while opening (at most 5 rounds:
it takes seconds on a 262144-token vocabulary). Also shown, for
libgguf: the tensor list, and the first (bulk) decoding of `tokenizer.ggml.tokens` when present.
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
    if GGUFReader is None:
        print("gguf.GGUFReader: not installed (pip install gguf)")
        return 0
    ref_rounds = min(rounds, 5)  # it takes seconds on a large vocabulary
    ref = median_seconds(reference_open, ref_rounds)
    print(f"gguf.GGUFReader(path) ({ref_rounds} rounds)           {fmt(ref)}")
    print(f"ratio (GGUFReader / libgguf.open)          {ref / ours:9.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
