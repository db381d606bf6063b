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


if __name__ == "__main__":
    unittest.main()
