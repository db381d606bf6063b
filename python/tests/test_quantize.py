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
        self.assertTrue(libgguf.quantize_requires_importance("IQ2_XXS"))
        self.assertFalse(libgguf.quantize_requires_importance(DataType.Q4_K))
        with self.assertRaises(GGUFError) as e:
            libgguf.quantize(data, "IQ2_XXS")
        self.assertIn("importance", str(e.exception))


if __name__ == "__main__":
    unittest.main()
