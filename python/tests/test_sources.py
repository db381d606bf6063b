"""Opening from descriptors and file objects, and reading tensor data into caller buffers
Everything compared with the mapped file's own data."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import textwrap
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

    def test_a_descriptor_outside_a_c_int_raises_overflow_error(self):
        fd = os.open(SAMPLE, os.O_RDONLY)
        try:
            for bad in (fd - 2**32, 2**31 + fd, fd + 2**32, -(2**31) - 1, 2**64 + fd):
                with self.assertRaises(OverflowError, msg=bad):
                    libgguf.open((bad, 0))
                with self.assertRaises(OverflowError, msg=bad):
                    libgguf.open(bad, offset=0)
            with self.assertRaises(TypeError):
                libgguf.open((float(fd), 0))
            with libgguf.open((fd, 0)) as f:  # the real one still opens
                self.check_file(f)
        finally:
            os.close(fd)

    def test_a_file_object_that_answers_wrongly_fails_the_call(self):
        data = self.bytes

        def answering(answer, method="readinto"):
            class Odd(io.RawIOBase):
                calls = 0

                def __init__(self):
                    self.pos = 0

                def seekable(self):
                    return True

                def seek(self, pos, whence=0):
                    self.pos = pos if whence == 0 else len(data) + pos
                    return self.pos

                def readinto(self, b):
                    Odd.calls += 1
                    if Odd.calls > 1000:  # never loop forever, whatever the package does
                        raise RuntimeError("asked 1000 times")
                    return answer(len(b))

            if method == "read":
                class OddRead:  # only seek and read
                    def seek(self, pos, whence=0):
                        return len(data) if whence else pos

                    def read(self, n):
                        return answer(n)

                return OddRead()
            return Odd()

        cases = [
            (lambda n: -1, ValueError),
            (lambda n: -(2**40), ValueError),
            (lambda n: n + 1, ValueError),
            (lambda n: 10**30, ValueError),
            (lambda n: None, BlockingIOError),
            (lambda n: float(n), TypeError),
            (lambda n: str(n), TypeError),
        ]
        for answer, cause in cases:
            with self.assertRaises(GGUFError) as e:
                libgguf.open(answering(answer))
            self.assertEqual(e.exception.code, ErrorCode.IO)
            self.assertIn("<reader>", str(e.exception))
            self.assertIsInstance(e.exception.__cause__, cause)
            self.assertIn("libgguf: ", str(e.exception.__cause__))
        for answer, cause in [
            (lambda n: None, BlockingIOError),
            (lambda n: b"\0" * (n + 1), ValueError),
            (lambda n: 5, TypeError),
        ]:
            with self.assertRaises(GGUFError) as e:
                libgguf.open(answering(answer, "read"))
            self.assertIsInstance(e.exception.__cause__, cause)
        # Fewer bytes than asked is allowed: the library asks again for the rest.
        class Dribble(io.BytesIO):
            def readinto(self, b):
                return super().readinto(memoryview(b)[: max(1, len(b) // 3)])

        with libgguf.open(Dribble(data)) as f:
            self.check_file(f)

    def test_closing_while_other_threads_read_is_safe(self):
        # A call in progress keeps the handle alive; calls after close() raise ValueError.
        import threading

        for how in ("reader", "descriptor"):
            fd = os.open(SAMPLE, os.O_RDONLY)
            f = libgguf.open(io.BytesIO(self.bytes)) if how == "reader" else libgguf.open((fd, 0))
            os.close(fd)  # the handle has its own descriptor
            tensors = list(f.tensors)
            outcomes = []

            def read():
                for _ in range(200):
                    try:
                        outs = f.read_tensors(tensors)
                    except ValueError as e:
                        outcomes.append(str(e))
                        return
                    same = [bytes(o) for o in outs] == [self.raw[n] for n in self.names]
                    outcomes.append("read" if same else "wrong bytes")

            threads = [threading.Thread(target=read) for _ in range(3)]
            for t in threads:
                t.start()
            while not outcomes:
                pass
            f.close()
            for t in threads:
                t.join()
            self.assertIn("read", outcomes, how)
            self.assertIn("libgguf: the file is closed", outcomes, how)
            self.assertNotIn("wrong bytes", outcomes, how)

    def test_an_interrupt_in_a_file_object_is_raised_as_it_is(self):
        class Interrupted(io.BytesIO):
            def readinto(self, b):
                raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            libgguf.open(Interrupted(self.bytes))

    def test_a_file_object_reading_its_own_handle_fails_instead_of_waiting(self):
        handle = []
        inner = []

        class Reentrant(io.BytesIO):
            def readinto(self, b):
                if handle and not inner:
                    try:
                        handle[0].read_tensor(handle[0].tensors[0])
                    except GGUFError as e:
                        inner.append(e)
                        raise
                return super().readinto(b)

        with libgguf.open(Reentrant(self.bytes)) as f:
            handle.append(f)
            with self.assertRaises(GGUFError) as outer:
                f.read_tensor(f.tensors[0])
            self.assertEqual(outer.exception.code, ErrorCode.IO)
            self.assertEqual(inner[0].code, ErrorCode.INVALID_ARGUMENT)
            self.assertIn("must not read its own handle", str(inner[0]))
            handle.clear()
            self.check_file(f)

    def test_a_daemon_thread_inside_a_callback_does_not_abort_the_exit(self):
        # Each script leaves a daemon thread inside a library call that calls back into Python
        # (looping in Python, blocked in a system call, or between callbacks) and exits.
        prelude = f"""
            import io, sys, threading, time
            import libgguf
            data = open({SAMPLE!r}, "rb").read()
            started = threading.Event()
            def run(target):
                threading.Thread(target=target, daemon=True).start()
                started.wait()
                print("main exits", flush=True)
        """
        scripts = {
            "reader looping in Python": """
                class Busy(io.BytesIO):
                    def readinto(self, b):
                        started.set()
                        while True:
                            time.sleep(0.001)
                run(lambda: libgguf.open(Busy(data)))
            """,
            "reader blocked in a system call": """
                class Slow(io.BytesIO):
                    def readinto(self, b):
                        started.set()
                        time.sleep(0.5)
                        return super().readinto(b)
                run(lambda: libgguf.open(Slow(data)))
            """,
            "progress looping in Python": """
                f = libgguf.open(data and {SAMPLE!r}, no_map=True)
                def progress(done, total):
                    started.set()
                    while True:
                        sum(range(1000))
                run(lambda: f.read_tensors(progress=progress))
            """.replace("{SAMPLE!r}", repr(SAMPLE)),
            "reader of an open file looping in Python": """
                class Busy(io.BytesIO):
                    busy = False
                    def readinto(self, b):
                        while Busy.busy:
                            started.set()
                            time.sleep(0.001)
                        return super().readinto(b)
                f = libgguf.open(Busy(data))
                Busy.busy = True
                run(lambda: f.read_tensor(f.tensors[0]))
            """,
            "between callbacks": """
                class Late(io.BytesIO):
                    calls = 0
                    def readinto(self, b):
                        Late.calls += 1
                        if Late.calls == 1:
                            return super().readinto(b)
                        started.set()
                        return super().readinto(b)
                def load():
                    f = libgguf.open(Late(data))
                    while True:
                        f.read_tensors()
                run(load)
            """,
        }
        for what, body in scripts.items():
            code = textwrap.dedent(prelude) + textwrap.dedent(body)
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
            )
            self.assertEqual(out.returncode, 0, f"{what}: {out.stderr}")
            self.assertIn("main exits", out.stdout, what)
            self.assertEqual(out.stderr, "", f"{what}: {out.stderr}")


if __name__ == "__main__":
    unittest.main()
