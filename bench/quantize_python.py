"""Quantization from Python: ``libgguf.quantize`` against the reference package's
``gguf.quants.quantize`` on each type the reference quantizes, one thread, the same rows
(16 x 4096 floats, roughly normal); best and median of ROUNDS wall times, MB/s of float input,
outputs compared byte for byte.

    PYTHONPATH=python .venv/bin/python bench/quantize_python.py [ROUNDS]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import libgguf
from gguf import GGMLQuantizationType as QT
from gguf import quants

TYPES = ["BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"]


def times(f, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return sorted(out)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    data = (np.random.default_rng(0).standard_normal((16, 4096)) * 0.05).astype(np.float32)
    mb = data.nbytes / 1e6
    print(f"{data.shape[0]} x {data.shape[1]} floats, {rounds} rounds; MB/s of float input")
    print(f"{'type':6} {'libgguf best':>13} {'median':>9} {'reference best':>15} {'median':>9} {'ratio':>7}")
    for name in TYPES:
        ours = libgguf.quantize(data, name)
        ref = np.ascontiguousarray(quants.quantize(data, QT[name])).view(np.uint8).reshape(ours.shape)
        assert np.array_equal(ours, ref), name
        a = times(lambda: libgguf.quantize(data, name), rounds)
        b = times(lambda: quants.quantize(data, QT[name]), rounds)
        print(f"{name:6} {mb / a[0]:13.1f} {mb / a[len(a) // 2]:9.1f} {mb / b[0]:15.1f} "
              f"{mb / b[len(b) // 2]:9.1f} {b[len(b) // 2] / a[len(a) // 2]:6.0f}x")


if __name__ == "__main__":
    main()
