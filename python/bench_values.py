#!/usr/bin/env python3
"""Tensor values from Python: `Tensor.to_numpy_float()` (libgguf, ggml's dequantizers' bits)
against the reference package's `gguf.quants.dequantize` (numpy), on every tensor of a file.

    python/bench_values.py FILE [ROUNDS]

Per data type present in FILE: the bytes of float output, and for each side the minimum and
median over ROUNDS (default 7) of converting every tensor of that type, the two sides alternating
round by round in one process (the file is opened once, its pages warm). The reference is given
the tensor's raw bytes as gguf-py's own reader exposes them (a zero-copy numpy view); libgguf
reads the same mapping. Types the reference cannot convert are listed without it. The outputs
are checked equal (NaNs by position) before timing. Run from the repository root with
`PYTHONPATH=python` and `.venv/bin/python` (numpy, gguf 0.19.0).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time

import numpy as np

import libgguf
from gguf import GGMLQuantizationType as QT
from gguf import quants


def main() -> None:
    path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    f = libgguf.open(path)
    by_type: dict[str, list] = {}
    for t in f.tensors:
        by_type.setdefault(t.dtype_name, []).append(t)
    print(f"{path}: {len(f.tensors)} tensors, {rounds} rounds, min / median seconds")
    print(f"{'type':8} {'MB out':>8} {'libgguf':>17} {'gguf.quants':>19} {'ratio (median)':>15}")
    for name, tensors in sorted(by_type.items()):
        try:
            qt = QT[name]
        except KeyError:
            qt = None
        out_bytes = sum(t.n_elements * 4 for t in tensors)
        raws = [t.numpy() for t in tensors]

        def ours():
            for t in tensors:
                t.to_numpy_float()

        def theirs():
            with np.errstate(all="ignore"):
                for t, raw in zip(tensors, raws):
                    quants.dequantize(raw, qt)

        supported = qt is not None
        if supported:
            try:
                with np.errstate(all="ignore"):
                    for t, raw in zip(tensors, raws):
                        a = t.to_numpy_float()
                        b = quants.dequantize(raw, qt).astype(np.float32).reshape(a.shape)
                        assert np.array_equal(a, b, equal_nan=True), t.name
            except NotImplementedError:
                supported = False
        times = {"ours": [], "theirs": []}
        for _ in range(rounds):
            for side, fn in (("ours", ours), ("theirs", theirs)):
                if side == "theirs" and not supported:
                    continue
                gc.collect()
                t0 = time.perf_counter()
                fn()
                times[side].append(time.perf_counter() - t0)
        o = times["ours"]
        line = f"{name:8} {out_bytes / 1e6:8.2f} {min(o):8.5f} {statistics.median(o):8.5f}"
        if supported:
            r = times["theirs"]
            ratio = statistics.median(r) / statistics.median(o)
            line += f" {min(r):9.5f} {statistics.median(r):9.5f} {ratio:14.1f}x"
        else:
            line += f" {'(not converted by the reference)':>34}"
        print(line)
    f.close()


if __name__ == "__main__":
    main()
