"""Opening from descriptors and file objects, and reading tensor data into caller buffers
(issue 12): everything compared with the mapped file's own data."""

from __future__ import annotations

import io
import os
import tempfile
import unittest
import zipfile

import numpy as np

import libgguf
from libgguf import ErrorCode, GGUFError

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SAMPLE = os.path.join(REPO, "testdata", "sample.gguf")


def read_bytes(path):
    with open(path, "rb") as fh:
        return fh.read()


class Sources(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bytes = read_bytes(SAMPLE)
        with libgguf.open(SAMPLE) as f:
            cls.names = [t.name for t in f.tensors]
            cls.arrays = {t.name: t.numpy().copy() for t in f.tensors}
            cls.raw = {t.name: bytes(t.data) for t in f.tensors}
            cls.metadata = dict(f.metadata)
        cls.tmp = tempfile.mkdtemp()

    def check_file(self, f):
        self.assertEqual(dict(f.metadata), self.metadata)
        self.assertEqual([t.name for t in f.tensors], self.names)
        for name, arr in zip(self.names, f.read_tensors()):
            np.testing.assert_array_equal(arr, self.arrays[name])
            self.assertEqual(arr.shape, self.arrays[name].shape)
        for threads in (1, 3):
            for direct in (False, True):
                outs = f.read_tensors(threads=threads, direct=direct)
                self.assertEqual([bytes(o) for o in outs], [self.raw[n] for n in self.names])
        t = max(f.tensors, key=lambda t: t.size)
        part = f.read_tensor(t, offset=3, size=t.size - 5)
        self.assertIsInstance(part, bytearray)
        self.assertEqual(bytes(part), self.raw[t.name][3 : t.size - 2])
        buf = bytearray(t.size + 10)
        self.assertIs(f.read_tensor(t.name, buf), buf)
        self.assertEqual(bytes(buf[: t.size]), self.raw[t.name])
        with self.assertRaises(GGUFError) as e:
            f.read_tensor(t, offset=1, size=t.size)
        self.assertEqual(e.exception.code, ErrorCode.INVALID_ARGUMENT)
        with self.assertRaises(ValueError):
            f.read_tensor(t, bytearray(1))
        with self.assertRaises(BufferError):
            f.read_tensor(t, bytes(t.size))

    def test_a_path_without_mapping(self):
        with libgguf.open(SAMPLE, no_map=True) as f:
            self.assertFalse(f.is_mapped)
            with self.assertRaises(GGUFError) as e:
                f.tensors[0].data
            self.assertEqual(e.exception.code, ErrorCode.UNSUPPORTED)
            self.check_file(f)
        with libgguf.open(SAMPLE) as f:
            self.assertTrue(f.is_mapped)
            self.check_file(f)

    def test_a_descriptor_at_an_offset_closed_after_opening(self):
        path = os.path.join(self.tmp, "member.tar")
        with open(path, "wb") as fh:
            fh.write(b"\x5a" * 1234 + self.bytes + b"\xa5" * 99)
        for how in ("tuple", "keyword", "triple"):
            for no_map in (False, True):
                fd = os.open(path, os.O_RDONLY)
                if how == "tuple":
                    f = libgguf.open((fd, 1234), no_map=no_map)
                elif how == "keyword":
                    f = libgguf.open(fd, offset=1234, length=len(self.bytes), no_map=no_map)
                else:
                    f = libgguf.open((fd, 1234, len(self.bytes)), no_map=no_map)
                os.close(fd)
                with f:
                    self.assertEqual(f.is_mapped, not no_map)
                    if not no_map:
                        t = f.tensors[0]
                        self.assertEqual(bytes(t.data), self.raw[t.name])
                    self.check_file(f)
        with self.assertRaises(GGUFError) as e:
            libgguf.open(-1, offset=0)
        self.assertEqual(e.exception.code, ErrorCode.IO)
        with self.assertRaises(TypeError):
            libgguf.open(SAMPLE, offset=3)
        with self.assertRaises(TypeError):  # a descriptor comes with its offset
            libgguf.open(3)

    def test_file_objects_through_the_read_callback(self):
        with open(SAMPLE, "rb") as fh:
            with libgguf.open(fh) as f:
                self.assertFalse(f.is_mapped)
                self.check_file(f)
        with libgguf.open(io.BytesIO(self.bytes)) as f:
            self.check_file(f)
        path = os.path.join(self.tmp, "model.zip")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("model.gguf", self.bytes)
        with zipfile.ZipFile(path) as z, z.open("model.gguf") as member:
            with libgguf.open(member) as f:
                self.check_file(f)

    def test_errors_through_a_file_object_match_the_mapped_ones(self):
        cases = [self.bytes[:n] for n in (0, 3, 40, 100, len(self.bytes) // 2)]
        bad = bytearray(self.bytes)
        bad[0] = ord("X")
        cases.append(bytes(bad))
        for i, data in enumerate(cases):
            path = os.path.join(self.tmp, f"bad{i}.gguf")
            with open(path, "wb") as fh:
                fh.write(data)
            with self.assertRaises(GGUFError) as mapped:
                libgguf.open(path)
            with self.assertRaises(GGUFError) as reader:
                libgguf.open(io.BytesIO(data))
            self.assertEqual(reader.exception.code, mapped.exception.code, data[:16])
            self.assertEqual(reader.exception.offset, mapped.exception.offset)

    def test_a_failing_file_object_is_the_cause(self):
        class Broken(io.BytesIO):
            def readinto(self, b):
                raise OSError("disk on fire")

        with self.assertRaises(GGUFError) as e:
            libgguf.open(Broken(self.bytes))
        self.assertEqual(e.exception.code, ErrorCode.IO)
        self.assertIn("<reader>", str(e.exception))
        self.assertIsInstance(e.exception.__cause__, OSError)

    def test_progress_and_cancel(self):
        seen = []
        with libgguf.open(SAMPLE, no_map=True) as f:
            f.read_tensors(progress=lambda done, total: seen.append((done, total)))
            total = sum(t.size for t in f.tensors)
            self.assertEqual(seen[0], (0, total))
            self.assertEqual(seen[-1], (total, total))
            with self.assertRaises(GGUFError) as e:
                f.read_tensors(progress=lambda done, total: False)
            self.assertEqual(e.exception.code, ErrorCode.CANCELLED)

            def boom(done, total):
                raise KeyError("stop")

            with self.assertRaises(KeyError):
                f.read_tensors(progress=boom)


if __name__ == "__main__":
    unittest.main()
