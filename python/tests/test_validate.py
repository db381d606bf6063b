"""``Tensor.validate()``: raises with the first NaN or infinity as ggml's
``ggml_validate_row_data`` sees it (a float tensor's values, a quantized block's scales), and
passes finite data."""

from __future__ import annotations

import os
import tempfile
import unittest

import numpy as np

import libgguf
from libgguf import ErrorCode, GGUFError

from gguf import GGMLQuantizationType as QT
from gguf import GGUFWriter

import logging

logging.disable(logging.CRITICAL)


class ValidateTest(unittest.TestCase):
    def write(self, tensors):
        fd, path = tempfile.mkstemp(suffix=".gguf")
        os.close(fd)
        self.addCleanup(os.unlink, path)
        w = GGUFWriter(path, "test")
        for name, array, raw_dtype in tensors:
            w.add_tensor(name, array, raw_dtype=raw_dtype)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return path

    def test_finite_data_passes_and_the_first_bad_value_is_named(self):
        good = np.arange(64, dtype=np.float32)
        bad = np.zeros(100, dtype=np.float16)
        bad[41] = np.inf
        bad[77] = np.nan
        # Q6_K: 4 blocks of 210 bytes; block 2's scale d (bytes 208-209) is NaN.
        q6 = np.zeros((1, 4 * 210), dtype=np.uint8)
        q6[0, 2 * 210 + 209] = 0x7E
        path = self.write(
            [("good", good, None), ("bad", bad, None), ("q6", q6, QT.Q6_K)]
        )
        with libgguf.open(path) as f:
            self.assertIsNone(f.tensor("good").validate())
            with self.assertRaises(GGUFError) as e:
                f.tensor("bad").validate()
            self.assertEqual(e.exception.code, ErrorCode.BAD_VALUE)
            self.assertIn("tensor 'bad': element 41 is infinity", str(e.exception))
            self.assertIn("byte 82 of the tensor's data", str(e.exception))
            self.assertEqual(e.exception.offset, f.tensor("bad").file_offset + 82)
            with self.assertRaises(GGUFError) as e:
                f.tensor("q6").validate()
            self.assertIn("block 2's d is NaN", str(e.exception))
            self.assertIn("byte 628 ", str(e.exception))


if __name__ == "__main__":
    unittest.main()
