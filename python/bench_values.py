#!/usr/bin/env python3
"""Tensor values from Python: `Tensor.to_numpy_float()` (libgguf, ggml's dequantizers' bits)
against the reference package's `gguf.quants.dequantize` (numpy), on every tensor of a file.

    python/bench_values.py FILE [ROUNDS] [--threads N]
    python/bench_values.py FILE --make-tiled OUT     # then: python/bench_values.py OUT

``--make-tiled OUT`` writes OUT, a file of one 4096 x 4096 tensor (16.8M values, 64 MiB of
floats: the size of a 7B model's attention matrices) per type of FILE but F32, its blocks
repeated from FILE's largest tensor of that type (real blocks, real scales), to time the large
tensors that use several threads by default.

Per data type present in FILE, and for all tensors together: the bytes of float output, and the
minimum and median over ROUNDS (default 7) of converting every tensor of that type, every side
taking its turn in each round, in one process (the file is opened once, its pages warm):

- ``dropped``: each tensor's result is dropped before the next is converted, so the allocator
  hands the same (cached) memory back: a converter that writes each tensor out and moves on.
- ``kept``: every result of a round is kept until the round ends, so each is new memory whose
  pages the kernel must fault in and zero: a loader that keeps every tensor.
- ``out=``: libgguf writes every tensor into one preallocated buffer (``out=buf[:n]``).
- ``floor``: ``np.empty`` of the same shape, then ``fill(1.0)``: writing the output once, in the
  same mode, with no conversion; no converter that returns a new array can beat it.

``--threads N`` is passed to ``to_numpy_float`` (default: its own choice, one thread below
``libgguf.PARALLEL_MIN_ELEMENTS`` values). The reference is given the tensor's raw bytes as
gguf-py's own reader exposes them (a zero-copy numpy view; BF16 as bytes); libgguf reads the
same mapping. Types the reference cannot convert are listed without it. The outputs are checked
equal (NaNs by position) before timing. Run from the repository root with `PYTHONPATH=python`
and `.venv/bin/python` (numpy, gguf 0.19.0).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np

import libgguf
from gguf import GGMLQuantizationType as QT
from gguf import quants

SIDES = (
    "ours dropped",
    "ref dropped",
    "floor dropped",
    "ours kept",
    "ref kept",
    "floor kept",
    "ours out=",
)


def reference_input(t):
    """The tensor's bytes as gguf-py's reader gives them to `quants.dequantize`."""
    raw = t.numpy()
    if t.dtype_name == "BF16":  # bits as uint16 here; gguf-py hands BF16 over as bytes
        raw = raw.view(np.uint8)
    return raw


def sides_for(tensors, qt, threads):
    raws = [reference_input(t) for t in tensors]
    shapes = [t.shape[::-1] for t in tensors]
    buf = np.empty(max(t.n_elements for t in tensors), np.float32)

    def ours(keep):
        kept = []
        for t in tensors:
            a = t.to_numpy_float(threads=threads)
            if keep:
                kept.append(a)
        return kept

    def ref(keep):
        kept = []
        with np.errstate(all="ignore"):
            for raw in raws:
                a = quants.dequantize(raw, qt)
                if keep:
                    kept.append(a)
        return kept

    def floor(keep):
        kept = []
        for s in shapes:
            a = np.empty(s, np.float32)
            a.fill(1.0)
            if keep:
                kept.append(a)
        return kept

    def ours_out():
        for t in tensors:
            t.to_numpy_float(out=buf[: t.n_elements], threads=threads)

    fns = {
        "ours dropped": lambda: ours(False),
        "ours kept": lambda: ours(True),
        "floor dropped": lambda: floor(False),
        "floor kept": lambda: floor(True),
        "ours out=": ours_out,
    }
    if qt is not None:
        fns["ref dropped"] = lambda: ref(False)
        fns["ref kept"] = lambda: ref(True)
    return fns, raws, buf


def check(tensors, raws, qt, buf, threads) -> bool:
    """Whether the reference converts this type; asserts every output equal first."""
    if qt is None:
        return False
    try:
        with np.errstate(all="ignore"):
            for t, raw in zip(tensors, raws):
                a = t.to_numpy_float(threads=threads)
                b = quants.dequantize(raw, qt).astype(np.float32).reshape(a.shape)
                assert np.array_equal(a, b, equal_nan=True), t.name
                o = t.to_numpy_float(out=buf[: t.n_elements], threads=threads)
                assert np.array_equal(o.reshape(a.shape), b, equal_nan=True), t.name
    except NotImplementedError:
        return False
    return True


def make_tiled(f, out: str) -> None:
    import logging

    from gguf import GGUFWriter
    from gguf.constants import GGML_QUANT_SIZES

    logging.disable(logging.CRITICAL)
    rows = cols = 4096
    w = GGUFWriter(out, "llama")
    largest: dict[str, object] = {}
    for t in f.tensors:
        if t.dtype_name in QT.__members__ and t.dtype_name != "F32":  # F32: a view in gguf-py
            if t.n_elements > getattr(largest.get(t.dtype_name), "n_elements", 0):
                largest[t.dtype_name] = t
    for name, t in sorted(largest.items()):
        qt = QT[name]
        block, block_bytes = GGML_QUANT_SIZES[qt]
        raw = np.ascontiguousarray(t.numpy()).view(np.uint8).reshape(-1)
        tiled = np.resize(raw, rows * cols // block * block_bytes)
        w.add_tensor(f"tiled.{name}", tiled.reshape(rows, -1), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{out}: {', '.join(f'tiled.{n} {rows}x{cols}' for n in sorted(largest))}")


def fmt(ts):
    return f"{min(ts):8.5f} {statistics.median(ts):8.5f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("rounds", nargs="?", type=int, default=7)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--make-tiled", metavar="OUT")
    args = ap.parse_args()
    f = libgguf.open(args.file)
    if args.make_tiled:
        make_tiled(f, args.make_tiled)
        return
    by_type: dict[str, list] = {}
    for t in f.tensors:
        by_type.setdefault(t.dtype_name, []).append(t)
    threads = "default" if args.threads is None else args.threads
    print(
        f"{args.file}: {len(f.tensors)} tensors, {args.rounds} rounds, threads={threads}, "
        f"min / median seconds for all tensors of a type; ratio = reference median / median"
    )
    totals = {s: [0.0] * args.rounds for s in SIDES}
    all_supported = True
    rows = []
    for name, tensors in sorted(by_type.items()):
        qt = QT.__members__.get(name)
        fns, raws, buf = sides_for(tensors, qt, args.threads)
        supported = check(tensors, raws, qt, buf, args.threads)
        all_supported &= supported
        times = {s: [] for s in SIDES if s in fns and (supported or not s.startswith("ref"))}
        for r in range(args.rounds):
            for side in times:
                gc.collect()
                t0 = time.perf_counter()
                fns[side]()
                dt = time.perf_counter() - t0
                times[side].append(dt)
                totals[side][r] += dt
        rows.append((name, sum(t.n_elements * 4 for t in tensors), times))
    if all_supported and len(rows) > 1:
        rows.append(("all", sum(r[1] for r in rows), totals))
    for name, out_bytes, times in rows:
        print(f"\n{name}: {out_bytes / 1e6:.2f} MB of floats")
        for side in SIDES:
            if side not in times:
                continue
            line = f"  {side:14} {fmt(times[side])}"
            ref = times.get("ref " + side.split()[1]) or times.get("ref dropped")
            if ref and not side.startswith("ref"):
                ratio = statistics.median(ref) / statistics.median(times[side])
                line += f"   {ratio:8.1f}x"
            print(line)
        if "ref dropped" not in times:
            print("  (not converted by the reference)")
    f.close()


if __name__ == "__main__":
    main()
