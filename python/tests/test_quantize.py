"""Quantization: ``libgguf.quantize`` against the reference package's ``gguf.quants.quantize``
on every type the reference quantizes (BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0,
MXFP4), byte for byte, and its arguments (types by name, importance weights, threads, shapes,
refusals). Bytes against ggml itself are checked in tests/quantize_ggml.rs.
"""

from __future__ import annotations

import unittest

import numpy as np

import libgguf
from libgguf import DataType, GGUFError

from gguf import GGMLQuantizationType as QT
from gguf import quants

REFERENCE_TYPES = [
    name
    for name in ("BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4")
    if hasattr(QT, name)
]


def rows(seed: int, shape: tuple[int, ...], scale: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(np.float32)


class ReferenceAgrees(unittest.TestCase):
    def test_every_reference_type(self):
        self.assertEqual(len(REFERENCE_TYPES), 9)
        for name in REFERENCE_TYPES:
            for seed, scale in enumerate((1e-3, 0.5, 1.0, 30.0, 1e4)):
                data = rows(seed, (6, 512), scale)
                data[1, ::7] = 0.0
                data[2] = 0.25  # a constant row
                want = quants.quantize(data, QT[name])
                got = libgguf.quantize(data, name)
                self.assertEqual(got.dtype, np.uint8)
                want = np.ascontiguousarray(want).view(np.uint8).reshape(got.shape)
                self.assertTrue(np.array_equal(got, want), f"{name} at scale {scale}")


class Arguments(unittest.TestCase):
    def test_shapes_and_type_names(self):
        data = rows(1, (2, 3, 256), 1.0)
        out = libgguf.quantize(data, DataType.Q4_K)
        self.assertEqual(out.shape, (2, 3, 144))
        self.assertTrue(np.array_equal(out, libgguf.quantize(data, "q4_k")))
        self.assertTrue(np.array_equal(out, libgguf.quantize(data.tolist(), int(DataType.Q4_K))))
        self.assertEqual(libgguf.quantize(np.zeros((0, 32)), "Q8_0").shape, (0, 34))

    def test_threads_and_importance(self):
        data = rows(2, (33, 512), 1.0)
        imp = np.linspace(0.1, 3.0, 512, dtype=np.float32)
        one = libgguf.quantize(data, "Q5_K", importance=imp)
        for threads in (0, 2, 5):
            many = libgguf.quantize(data, "Q5_K", importance=imp, threads=threads)
            self.assertTrue(np.array_equal(one, many), threads)
        self.assertFalse(np.array_equal(one, libgguf.quantize(data, "Q5_K")))
        # A thread count is a uint32_t: beyond it refused, never cut to its low bits.
        for threads in (-1, 2**32, 2**32 + 2):
            with self.assertRaises(OverflowError, msg=threads):
                libgguf.quantize(data, "Q5_K", threads=threads)
        with self.assertRaises(TypeError):
            libgguf.quantize(data, "Q5_K", threads=2.0)

    def test_refusals(self):
        data = rows(3, (2, 256), 1.0)
        with self.assertRaises(GGUFError) as e:
            libgguf.quantize(data, "Q8_K")
        self.assertIn("Q8_K", str(e.exception))
        with self.assertRaises(GGUFError) as e:
            libgguf.quantize(data[:, :100], "Q4_0")
        self.assertIn("100", str(e.exception))
        with self.assertRaises(ValueError):
            libgguf.quantize(data, "Q4_K", importance=np.ones(10))
        with self.assertRaises(ValueError):
            libgguf.quantize(data, "NOT_A_TYPE")
        # No axis, so no row: a scalar, and None (which numpy would make a NaN).
        for scalar in (np.float32(1.0), 1.0, None):
            with self.assertRaises(ValueError, msg=repr(scalar)) as e:
                libgguf.quantize(scalar, "F32")
            self.assertIn("at least one axis", str(e.exception))
        self.assertTrue(libgguf.quantize_requires_importance("IQ2_XXS"))
        self.assertFalse(libgguf.quantize_requires_importance(DataType.Q4_K))
        with self.assertRaises(GGUFError) as e:
            libgguf.quantize(data, "IQ2_XXS")
        self.assertIn("importance", str(e.exception))


if __name__ == "__main__":
    unittest.main()


class WriterTakesQuantizedRows(unittest.TestCase):
    def test_quantized_rows_written_and_read_back(self):
        import os
        import tempfile

        data = rows(7, (8, 512), 1.0)
        q = libgguf.quantize(data, "Q4_K")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "q.gguf")
            with libgguf.Writer() as w:
                # The shape follows from the bytes: 512 values a row, 8 rows.
                w.add_tensor("w", q, dtype=DataType.Q4_K)
                w.write_file(path)
            with libgguf.open(path) as f:
                t = f.tensor("w")
                self.assertEqual(t.shape, (512, 8))
                self.assertEqual(t.dtype, DataType.Q4_K)
                self.assertEqual(bytes(t.data), q.tobytes())
                back = t.to_numpy_float()
                self.assertEqual(back.shape, (8, 512))
                # 4-bit values with 6-bit scales: near the floats, not equal to them.
                self.assertLess(float(np.abs(back - data).mean()), 0.1)
                self.assertLess(float(np.abs(back - data).max()), 0.5)

    def test_rows_that_are_not_whole_blocks_are_refused(self):
        q = libgguf.quantize(rows(8, (2, 256), 1.0), "Q4_K")
        with libgguf.Writer() as w:
            with self.assertRaises(ValueError):
                w.add_tensor("w", q[:, :100], dtype=DataType.Q4_K)

