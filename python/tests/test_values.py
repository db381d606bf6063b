"""Tensor values: ``Tensor.to_numpy_float()`` against the reference package's
``gguf.quants.dequantize``, for every data type the reference converts.

Each type gets a tensor of random blocks (every byte random, so some scales are infinities or
NaNs) written with the reference writer. The two must agree on every finite value and infinity
exactly and on where the NaNs are. A NaN's sign and payload may differ: the reference computes
with numpy, whose NaN bits follow its own order of operations, while libgguf gives ggml's bits
(checked bit for bit against ggml itself in tests/dequant_ggml.rs): there ggml wins, and this
test counts such NaNs rather than comparing them.
"""

from __future__ import annotations

import os
import tempfile
import unittest

import numpy as np

import libgguf
from libgguf import GGUFError

from gguf import GGMLQuantizationType as QT
from gguf import GGUFWriter, quants
from gguf.constants import GGML_QUANT_SIZES

import logging

logging.disable(logging.CRITICAL)

# Every type the reference converts (it has no converter for Q8_1, Q8_K, F64, the integer
# types, Q1_0 and Q2_0; tests/dequant_ggml.rs covers those).
REFERENCE_TYPES = [
    t
    for t in QT
    if t
    not in (QT.Q8_1, QT.Q8_K, QT.I8, QT.I16, QT.I32, QT.I64, QT.F64)
    and t.name != "Q1_0"
]


def assert_same_values(case, ours, theirs, what):
    """Equal as ggml's bits where the reference agrees: NaNs at the same places, every other
    value (infinities, -0.0) bit for bit."""
    nan = np.isnan(ours)
    np.testing.assert_array_equal(nan, np.isnan(theirs), err_msg=what)
    np.testing.assert_array_equal(
        ours[~nan].view(np.uint32), theirs[~nan].view(np.uint32), err_msg=what
    )


class ToNumpyFloat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.dir.name, "every_type.gguf")
        rng = np.random.default_rng(1234)
        w = GGUFWriter(cls.path, "llama")
        cls.raw = {}
        for t in REFERENCE_TYPES:
            block, block_bytes = GGML_QUANT_SIZES[t]
            # ne = (4 blocks, 3 rows, 2): numpy shape (2, 3, 4 * block_bytes) of raw bytes.
            raw = rng.integers(0, 256, size=(2, 3, 4 * block_bytes), dtype=np.uint8)
            cls.raw[t] = raw
            w.add_tensor(f"t.{t.name}", raw, raw_dtype=t)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_every_reference_type_agrees_with_gguf_quants(self):
        with libgguf.open(self.path) as f:
            nan_bits_differ = {}
            for t in REFERENCE_TYPES:
                ours = f.tensor(f"t.{t.name}").to_numpy_float()
                with np.errstate(all="ignore"):  # NaN scales: numpy warns, ggml does not
                    theirs = quants.dequantize(self.raw[t], t).astype(np.float32)
                block = GGML_QUANT_SIZES[t][0]
                self.assertEqual(ours.shape, (2, 3, 4 * block), t.name)
                self.assertEqual(ours.dtype, np.float32)
                nan = np.isnan(ours)
                np.testing.assert_array_equal(nan, np.isnan(theirs), err_msg=t.name)
                # Finite values and infinities exactly (as bits: -0.0 is not 0.0).
                np.testing.assert_array_equal(
                    ours[~nan].view(np.uint32), theirs[~nan].view(np.uint32), err_msg=t.name
                )
                differ = ours[nan].view(np.uint32) != theirs[nan].view(np.uint32)
                differ = int(np.count_nonzero(differ))
                if differ:
                    nan_bits_differ[t.name] = differ
            # Random scales do give NaNs, so the NaN comparison above is not empty.
            total_nans = sum(
                int(np.isnan(f.tensor(f"t.{t.name}").to_numpy_float()).sum())
                for t in REFERENCE_TYPES
            )
            self.assertGreater(total_nans, 0)
            # Where the NaN bits differ, ggml's are ours (tests/dequant_ggml.rs); say where.
            if nan_bits_differ:
                print(f"\nNaN bits that differ from gguf.quants (ggml's kept): {nan_bits_differ}")

    def test_rows(self):
        with libgguf.open(self.path) as f:
            t = f.tensor("t.Q4_K")
            whole = t.to_numpy_float()
            rows = whole.reshape(-1, t.shape[0])
            np.testing.assert_array_equal(t.to_numpy_float(2, 3), rows[2:5])
            np.testing.assert_array_equal(t.to_numpy_float(first_row=4), rows[4:])
            self.assertEqual(t.to_numpy_float(6, 0).shape, (0, t.shape[0]))
            with self.assertRaises(GGUFError) as e:
                t.to_numpy_float(5, 2)
            self.assertIn("past the end", str(e.exception))
            # Refused before allocating (not numpy's MemoryError for 2**40 rows).
            for first, n in ((0, 2**40), (2**63, 2**63), (2**64 - 1, 1)):
                with self.assertRaises(GGUFError) as e:
                    t.to_numpy_float(first, n)
                self.assertIn("past the end of tensor 't.Q4_K'", str(e.exception))
                with self.assertRaises(GGUFError):
                    t.to_numpy_float(first, n, out=np.empty(3, np.float32))

    def test_sample_model(self):
        sample = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "sample.gguf")
        with libgguf.open(sample) as f:
            for t in f.tensors:
                ours = t.to_numpy_float()
                self.assertEqual(ours.shape, tuple(reversed(t.shape)))
                if t.dtype in (libgguf.DataType.F32, libgguf.DataType.F16):
                    np.testing.assert_array_equal(ours, t.numpy().astype(np.float32))
                elif t.dtype.name in {q.name for q in REFERENCE_TYPES}:
                    theirs = quants.dequantize(t.numpy(), QT[t.dtype.name])
                    np.testing.assert_array_equal(ours, theirs)


def write_random_tensors(path, types, ne0, ne1, seed):
    """A file of one tensor of random bytes per type, ``ne = (ne0, ne1)``; returns the raw
    arrays (numpy shape ``(ne1, ne0 / block * block_bytes)``)."""
    rng = np.random.default_rng(seed)
    w = GGUFWriter(path, "llama")
    raws = {}
    for t in types:
        block, block_bytes = GGML_QUANT_SIZES[t]
        raw = rng.integers(0, 256, size=(ne1, ne0 // block * block_bytes), dtype=np.uint8)
        raws[t] = raw
        w.add_tensor(f"t.{t.name}", raw, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return raws


class Threads(unittest.TestCase):
    """``to_numpy_float(threads=...)``: rows split across threads give the same values as one
    thread and as the reference, for every type, and the default picks threads by size."""

    # 256 rows of 1024 values: 262144 values, so up to 4 threads of at least 65536 values.
    NE0, NE1 = 1024, 256

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.dir.name, "threads.gguf")
        cls.raw = write_random_tensors(cls.path, REFERENCE_TYPES, cls.NE0, cls.NE1, 99)
        # One tensor past PARALLEL_MIN_ELEMENTS, for the default's choice.
        cls.big_path = os.path.join(cls.dir.name, "big.gguf")
        rows = libgguf.PARALLEL_MIN_ELEMENTS // 1024 + 1
        cls.big_raw = write_random_tensors(cls.big_path, [QT.Q8_0], 1024, rows, 7)[QT.Q8_0]

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_every_type_on_many_threads_agrees_with_gguf_quants(self):
        with libgguf.open(self.path) as f:
            for qt in REFERENCE_TYPES:
                t = f.tensor(f"t.{qt.name}")
                with np.errstate(all="ignore"):
                    theirs = quants.dequantize(self.raw[qt], qt).astype(np.float32)
                one = t.to_numpy_float(threads=1)
                assert_same_values(self, one, theirs, qt.name)
                for n in (0, 2, 3, 4, 64):
                    many = t.to_numpy_float(threads=n)
                    self.assertEqual(many.shape, (self.NE1, self.NE0))
                    # Bit for bit what one thread gives, NaNs included.
                    np.testing.assert_array_equal(
                        many.view(np.uint32), one.view(np.uint32), err_msg=f"{qt.name} {n}"
                    )
                # Rows from the middle, on threads, into a caller's buffer.
                buf = np.full(200 * self.NE0, 7.0, np.float32)
                got = t.to_numpy_float(30, 200, out=buf, threads=3)
                self.assertIs(got, buf)
                assert_same_values(self, buf.reshape(200, self.NE0), theirs[30:230], qt.name)

    def test_threads_through_a_reader(self):
        # A file object's callback is read by the library's threads too (under its lock).
        with libgguf.open(self.path) as f, open(self.path, "rb") as fh:
            with libgguf.open(fh) as r:
                self.assertFalse(r.is_mapped)
                for name in ("t.Q4_K", "t.IQ2_XS", "t.F16"):
                    one = f.tensor(name).to_numpy_float(threads=1)
                    many = r.tensor(name).to_numpy_float(threads=4)
                    np.testing.assert_array_equal(
                        many.view(np.uint32), one.view(np.uint32), err_msg=name
                    )

    def test_default_uses_threads_only_for_large_tensors(self):
        lib = libgguf._native.load()
        calls = []
        real = lib.gguf_tensor_to_float_parallel

        def counting(*args):
            calls.append(args[-1])
            return real(*args)

        lib.gguf_tensor_to_float_parallel = counting
        try:
            with libgguf.open(self.path) as f:
                f.tensor("t.Q4_K").to_numpy_float()  # 262144 values: one thread
                self.assertEqual(calls, [])
                f.tensor("t.Q4_K").to_numpy_float(threads=2)
                self.assertEqual(calls, [2])
            with libgguf.open(self.big_path) as f:
                t = f.tensor("t.Q8_0")
                self.assertGreaterEqual(t.n_elements, libgguf.PARALLEL_MIN_ELEMENTS)
                ours = t.to_numpy_float()
                # default_threads() is 1 only on a one-CPU machine: no thread worth starting.
                n = libgguf.default_threads()
                self.assertEqual(calls, [2, n] if n > 1 else [2])
                with np.errstate(all="ignore"):
                    theirs = quants.dequantize(self.big_raw, QT.Q8_0).astype(np.float32)
                assert_same_values(self, ours, theirs, "big Q8_0")
        finally:
            lib.gguf_tensor_to_float_parallel = real

    def test_default_threads(self):
        n = libgguf.default_threads()
        self.assertGreaterEqual(n, 1)
        self.assertLessEqual(n, libgguf.MAX_DEFAULT_THREADS)
        self.assertLessEqual(n, os.cpu_count())

    def test_bad_thread_counts_are_refused(self):
        with libgguf.open(self.path) as f:
            t = f.tensor("t.Q8_0")
            with self.assertRaises(OverflowError) as e:
                t.to_numpy_float(threads=-1)
            self.assertIn("threads", str(e.exception))
            with self.assertRaises(OverflowError):
                t.to_numpy_float(threads=2**32)
            with self.assertRaises(TypeError):
                t.to_numpy_float(threads=1.5)
            with self.assertRaises(TypeError):
                t.to_numpy_float(threads="2")


class Out(unittest.TestCase):
    """``to_numpy_float(out=...)``: a caller's buffer, checked before anything is written."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.dir.name, "out.gguf")
        cls.raw = write_random_tensors(cls.path, [QT.Q4_K, QT.Q6_K, QT.F32], 512, 6, 5)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_out_is_written_and_returned(self):
        with libgguf.open(self.path) as f:
            buf = np.full(10_000, -1.0, np.float32)
            for qt in (QT.Q4_K, QT.Q6_K, QT.F32):
                t = f.tensor(f"t.{qt.name}")
                with np.errstate(all="ignore"):
                    theirs = quants.dequantize(self.raw[qt], qt).astype(np.float32)
                part = buf[: t.n_elements]  # one buffer reused, sliced to each tensor
                got = t.to_numpy_float(out=part)
                self.assertIs(got, part)
                assert_same_values(self, part.reshape(theirs.shape), theirs, qt.name)
                self.assertTrue((buf[t.n_elements :] == -1.0).all())  # nothing past it
                buf[:] = -1.0
                # Any shape with the right number of elements; rows too.
                shaped = np.empty((3, 2, 512), np.float32)
                self.assertIs(t.to_numpy_float(out=shaped), shaped)
                assert_same_values(self, shaped.reshape(theirs.shape), theirs, qt.name)
                rows = np.empty((2, 512), np.float32)
                t.to_numpy_float(3, 2, out=rows)
                assert_same_values(self, rows, theirs[3:5], qt.name)
                # No rows: an empty buffer.
                empty = np.empty(0, np.float32)
                self.assertIs(t.to_numpy_float(6, 0, out=empty), empty)

    def test_bad_out_is_refused_before_anything_is_written(self):
        with libgguf.open(self.path) as f:
            t = f.tensor("t.Q4_K")
            n = t.n_elements
            bad = {
                TypeError: [
                    (np.zeros(n, np.float64), "dtype float32"),
                    (np.zeros(n, np.float16), "dtype float32"),
                    (np.zeros(n, np.int32), "dtype float32"),
                    (np.zeros(n, np.dtype(np.float32).newbyteorder()), "byte order"),
                    (bytearray(4 * n), "numpy array, not bytearray"),
                    ([0.0] * n, "numpy array, not list"),
                ],
                ValueError: [
                    (np.zeros(n - 1, np.float32), f"{n - 1} elements where"),
                    (np.zeros(n + 1, np.float32), f"{n + 1} elements where"),
                    (np.zeros(2 * n, np.float32)[::2], "C-contiguous"),
                    (np.zeros((512, 6), np.float32).T, "C-contiguous"),
                    (np.zeros(n, np.float32), "read-only"),  # made read-only below
                ],
            }
            bad[ValueError][-1][0].flags.writeable = False
            for exc, cases in bad.items():
                for out, message in cases:
                    before = np.array(out, copy=True) if hasattr(out, "dtype") else None
                    with self.assertRaises(exc, msg=message) as e:
                        t.to_numpy_float(out=out)
                    self.assertIn(message, str(e.exception))
                    self.assertIn("t.Q4_K", str(e.exception))
                    if before is not None:  # untouched
                        np.testing.assert_array_equal(out, before)
            # Rows: the size expected is that of the rows asked for.
            with self.assertRaises(ValueError) as e:
                t.to_numpy_float(0, 2, out=np.zeros(n, np.float32))
            self.assertIn("where tensor 't.Q4_K' gives 1024", str(e.exception))

    def test_out_overlapping_the_files_own_bytes_is_refused(self):
        with open(self.path, "rb") as fh:
            memory = np.frombuffer(bytearray(fh.read()), np.uint8)
        with libgguf.open_memory(memory) as f:
            t = f.tensor("t.Q4_K")
            start = t.file_offset - t.file_offset % 4
            # Floats over the tensor's own bytes: converting would read what it had written.
            alias = memory[start : start + 4 * t.n_elements].view(np.float32)
            before = memory.copy()
            with self.assertRaises(ValueError) as e:
                t.to_numpy_float(out=alias)
            self.assertIn("overlaps", str(e.exception))
            np.testing.assert_array_equal(memory, before)
            # A buffer elsewhere is fine.
            with np.errstate(all="ignore"):
                theirs = quants.dequantize(self.raw[QT.Q4_K], QT.Q4_K).astype(np.float32)
            assert_same_values(
                self, t.to_numpy_float(out=np.empty(t.n_elements, np.float32)).reshape(6, 512),
                theirs, "Q4_K",
            )

    def test_closed_file(self):
        f = libgguf.open(self.path)
        t = f.tensor("t.Q4_K")
        f.close()
        with self.assertRaises(ValueError) as e:
            t.to_numpy_float(out=np.empty(t.n_elements, np.float32))
        self.assertIn("closed", str(e.exception))


if __name__ == "__main__":
    unittest.main()
