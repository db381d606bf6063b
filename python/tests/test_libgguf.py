"""Tests of the Python package `libgguf` against the reference reader (PyPI `gguf`, gguf-py).

Run from the repository root (tests/python.rs does, from `cargo test`):

    LIBGGUF_PATH=target/debug/libgguf.so PYTHONPATH=python .venv/bin/python -m unittest discover -s python/tests

Needs numpy and gguf (`make venv`). Every file is read with `gguf.GGUFReader` and with
`libgguf`, and every fact is compared: version, byte order, alignment, data offset, every key in
order with its type, element type and value (floats bit for bit, strings as str or bytes, nested
arrays), every tensor's name, shape, type, offsets, size and data bytes, and numpy arrays.
"""

from __future__ import annotations

import collections.abc
import copy
import ctypes
import gc
import json
import math
import mmap
import os
import pickle
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import weakref

import numpy as np

import libgguf
from libgguf import DataType, ErrorCode, GGUFError, ValueType

from gguf import GGMLQuantizationType as QT  # the reference implementation
from gguf import GGUFEndian, GGUFReader, GGUFValueType, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES

import logging

logging.disable(logging.CRITICAL)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "conformance"))
# The range of each integer value type, by the reference's type.
from generate import INT_TYPES  # noqa: E402  (tests/conformance/generate.py)
SAMPLE = os.path.join(REPO, "testdata", "sample.gguf")


def read_bytes(path):
    with open(path, "rb") as fh:
        return fh.read()

# --------------------------------------------------------------------------------------------
# What the reference reader sees
# --------------------------------------------------------------------------------------------


def text(raw: bytes):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def walk(parts, i, vtype):
    """The value of type `vtype` whose first part is parts[i], as libgguf's Python values, with
    its type tree; returns (value, types, next index)."""
    if vtype == GGUFValueType.STRING:
        return text(parts[i + 1].tobytes()), vtype, i + 2
    if vtype == GGUFValueType.ARRAY:
        elem = GGUFValueType(int(parts[i][0]))
        count = int(parts[i + 1][0])
        i += 2
        items, types = [], []
        for _ in range(count):
            item, t, i = walk(parts, i, elem)
            items.append(item)
            types.append(t)
        return items, (GGUFValueType.ARRAY, elem, types), i
    part = parts[i]
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        return float(part[0]), vtype, i + 1
    if vtype == GGUFValueType.BOOL:
        return bool(part[0]), vtype, i + 1
    return int(part[0]), vtype, i + 1


def reference_view(path):
    """Everything GGUFReader reads from `path`."""
    r = GGUFReader(path)
    fields = list(r.fields.values())[3:]  # past GGUF.version, GGUF.tensor_count, GGUF.kv_count
    pseudo = list(r.fields.values())[:3]
    metadata = []
    for f in fields:
        key = f.parts[1].tobytes()
        vtype = GGUFValueType(int(f.parts[2][0]))
        value, types, end = walk(f.parts, 3, vtype)
        assert end == len(f.parts)
        metadata.append((text(key), vtype, types, value))
    tensors = []
    for t in r.tensors:
        tensors.append(
            {
                "name": t.name,
                "shape": tuple(int(d) for d in t.shape),
                "dtype": int(t.tensor_type),
                "file_offset": int(t.data_offset),
                "offset": int(t.field.parts[5][0]),
                "size": int(t.n_bytes),
                "n_elements": int(t.n_elements),
                "bytes": t.data.tobytes(),
                "array": t.data,
            }
        )
    return {
        "version": int(pseudo[0].parts[0][0]),
        "byte_order": "big" if r.endianess == GGUFEndian.BIG else "little",
        "alignment": int(r.alignment),
        "data_offset": int(r.data_offset),
        "file_size": int(r.data.shape[0]),
        "metadata": metadata,
        "tensors": tensors,
    }


def position(seq, x, *args):
    """``seq.index(x, *args)``, or ``None`` where it raises ``ValueError``."""
    try:
        return seq.index(x, *args)
    except ValueError:
        return None


def same(a, b) -> bool:
    """Exact equality of decoded values: floats bit for bit (as doubles; NaN equals NaN, the
    sign of zero counts), bool distinct from int, str distinct from bytes, lists elementwise (a
    string array read from a file, a StringArray, as the list of its elements)."""
    a = a.tolist() if isinstance(a, libgguf.StringArray) else a
    b = b.tolist() if isinstance(b, libgguf.StringArray) else b
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b))
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return struct.pack("<d", a) == struct.pack("<d", b)
    return a == b


# --------------------------------------------------------------------------------------------
# Random files written by the reference writer
# --------------------------------------------------------------------------------------------

SCALARS = [t for t in GGUFValueType if t not in (GGUFValueType.STRING, GGUFValueType.ARRAY)]
FLOATS = [0.0, -0.0, 1.0, -1.5, float("inf"), float("-inf"), float("nan"), 0.1, 1e-40, 3e38]
TEXTS = ["", "hello", "héllo wörld", "日本語", "emoji 🦙", "nul\x00inside", "tab\tnew\nline", "a" * 300]
NON_UTF8 = [b"\xff\xfe", b"abc\x80def", b"\xc3(", b"\xed\xa0\x80"]
PLAIN = {
    QT.F32: np.float32,
    QT.F16: np.float16,
    QT.F64: np.float64,
    QT.I8: np.int8,
    QT.I16: np.int16,
    QT.I32: np.int32,
    QT.I64: np.int64,
}
QUANTIZED = [QT.Q4_0, QT.Q5_1, QT.Q8_0, QT.Q2_K, QT.Q4_K, QT.Q6_K, QT.IQ4_NL, QT.IQ2_XS, QT.TQ2_0]


def random_scalar(rng, vtype, allow_bytes=True):
    if vtype == GGUFValueType.BOOL:
        return rng.random() < 0.5
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        if rng.random() < 0.4:
            return rng.choice(FLOATS)
        return rng.uniform(-1e6, 1e6) * 10.0 ** rng.randint(-20, 20)
    if vtype == GGUFValueType.STRING:
        if allow_bytes and rng.random() < 0.15:
            return rng.choice(NON_UTF8)
        if rng.random() < 0.5:
            return rng.choice(TEXTS)
        return "".join(rng.choice("abcxyz _.-éßжλ中🙂") for _ in range(rng.randint(1, 30)))
    lo, hi = INT_TYPES[vtype]
    return rng.choice([lo, hi, 0, rng.randint(lo, hi), rng.randint(max(lo, -9), min(hi, 9))])


def random_nested(rng, depth):
    """A non-empty inner array for GGUFWriter (it infers inner element types from the first
    item: str, float -> FLOAT32, bool, int -> INT32, list -> ARRAY)."""
    n = rng.randint(1, 4)
    kind = rng.choice(["str", "float", "bool", "int"] + (["list"] if depth < 3 else []))
    if kind == "list":
        return [random_nested(rng, depth + 1) for _ in range(n)]
    vtype = {
        "str": GGUFValueType.STRING,
        "float": GGUFValueType.FLOAT32,
        "bool": GGUFValueType.BOOL,
        "int": GGUFValueType.INT32,
    }[kind]
    values = [random_scalar(rng, vtype, allow_bytes=False) for _ in range(n)]
    if kind == "float":
        values = [float(v) for v in values]
    return values


def random_tensor(rng, ttype):
    """(numpy data for GGUFWriter, raw_dtype) of a random tensor of type `ttype`."""
    block, type_size = GGML_QUANT_SIZES[ttype]
    n_dims = rng.randint(1, 4)
    ne0 = rng.randint(1, 17) if block == 1 else block * rng.randint(1, 2)
    dims = [ne0] + [rng.randint(1, 3) for _ in range(n_dims - 1)]
    if n_dims >= 2 and rng.random() < 0.1:
        dims[-1] = 0  # an empty tensor
    np_shape = tuple(reversed(dims))
    n = int(np.prod(dims))
    if ttype in PLAIN:
        dt = np.dtype(PLAIN[ttype])
        data = np.frombuffer(rng.randbytes(n * dt.itemsize), dtype=dt).copy()
        return data.reshape(np_shape), None
    if ttype == QT.BF16:
        data = np.frombuffer(rng.randbytes(n * 2), dtype=np.uint16).copy()
        return data.reshape(np_shape), ttype
    byte_shape = np_shape[:-1] + (np_shape[-1] // block * type_size,)
    data = np.frombuffer(rng.randbytes(int(np.prod(byte_shape))), dtype=np.uint8).copy()
    return data.reshape(byte_shape), ttype


def write_random(path, seed, big=False, split_max_tensors=0):
    """A random file through GGUFWriter: every scalar type, strings (some not UTF-8, some with
    NUL bytes), arrays of every element type, nested arrays, a random alignment, tensors of
    the plain types, BF16 and several quantized types."""
    rng = random.Random(seed)
    w = GGUFWriter(
        path,
        "llama",
        endianess=GGUFEndian.BIG if big else GGUFEndian.LITTLE,
        split_max_tensors=split_max_tensors,
    )
    n = 0

    def key(stem):
        nonlocal n
        n += 1
        return f"{rng.choice(['general', 'llama', 'tokenizer.ggml', 'тест'])}.{stem}.{n}"

    for vtype in SCALARS + [GGUFValueType.STRING]:
        for _ in range(2):
            w.add_key_value(key(vtype.name.lower()), random_scalar(rng, vtype), vtype)
    for elem in SCALARS + [GGUFValueType.STRING]:
        count = rng.choice([1, 2, 7, 33, rng.randint(1, 200)])
        values = [random_scalar(rng, elem) for _ in range(count)]
        w.add_key_value(key("arr_" + elem.name.lower()), values, GGUFValueType.ARRAY, sub_type=elem)
    # A large string array (the bulk path) and one whose strings hold NUL bytes (the exact path).
    vocab = [f"tok{i}_{rng.choice(TEXTS[1:5])}" for i in range(rng.randint(1000, 3000))]
    w.add_key_value(key("tokens"), vocab, GGUFValueType.ARRAY, sub_type=GGUFValueType.STRING)
    w.add_key_value(
        key("nul_strings"), ["a\x00b", "", "\x00", "c"], GGUFValueType.ARRAY,
        sub_type=GGUFValueType.STRING,
    )
    w.add_key_value(
        key("bytes_strings"), [b"\xff", "ok", b"\x80\x81"], GGUFValueType.ARRAY,
        sub_type=GGUFValueType.STRING,
    )
    for _ in range(rng.randint(1, 3)):
        nested = [random_nested(rng, 1) for _ in range(rng.randint(1, 4))]
        w.add_key_value(key("nested"), nested, GGUFValueType.ARRAY, sub_type=GGUFValueType.ARRAY)
    if rng.random() < 0.5:
        w.add_custom_alignment(rng.choice([1, 8, 64, 256, 4096]))
    types = list(PLAIN) + [QT.BF16] + QUANTIZED
    rng.shuffle(types)
    for j, ttype in enumerate(types):
        data, raw_dtype = random_tensor(rng, ttype)
        w.add_tensor(f"blk.{j}.{ttype.name.lower()}.weight", data, raw_dtype=raw_dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# --------------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------------

NUMPY_KIND = {
    DataType.F32: "f4",
    DataType.F16: "f2",
    DataType.F64: "f8",
    DataType.I8: "i1",
    DataType.I16: "i2",
    DataType.I32: "i4",
    DataType.I64: "i8",
    DataType.BF16: "u2",
}


class Compare(unittest.TestCase):
    maxDiff = 2000

    def assert_same_as_reference(self, path, f: libgguf.GGUFFile):
        want = reference_view(path)
        self.assertEqual(f.version, want["version"])
        self.assertEqual(f.byte_order, want["byte_order"])
        self.assertEqual(f.alignment, want["alignment"])
        self.assertEqual(f.data_offset, want["data_offset"])
        self.assertEqual(f.file_size, want["file_size"])

        m = f.metadata
        self.assertEqual(list(m), [k for k, _, _, _ in want["metadata"]], "keys in file order")
        self.assertEqual(len(m), len(want["metadata"]))
        types = f.metadata_types
        for k, vtype, tree, value in want["metadata"]:
            with self.subTest(key=k):
                self.assertEqual(types[k], vtype)
                self.assertEqual(m.type(k), vtype)
                got = m[k]
                self.assertTrue(same(got, value), f"{k!r}: libgguf {got!r} != reference {value!r}")
                self.assertTrue(same(m[k], value), "a second read (from the cache) differs")
                field = m.field(k)
                self.assertEqual(field.key, k)
                self.assertEqual(field.type, vtype)
                if vtype == GGUFValueType.ARRAY:
                    self.assertEqual(m.element_type(k), tree[1])
                    self.assertEqual(field.element_type, tree[1])
                    self.assertEqual(field.length, len(value))
                    self.check_array_extras(m, k, tree[1], value)
                else:
                    self.assertIsNone(m.element_type(k))

        tensors = f.tensors
        self.assertEqual([t.name for t in tensors], [t["name"] for t in want["tensors"]])
        for i, (t, w) in enumerate(zip(tensors, want["tensors"])):
            with self.subTest(tensor=t.name):
                self.assertEqual(t.index, i)
                self.assertEqual(t.shape, w["shape"])
                self.assertEqual(t.n_dims, len(w["shape"]))
                self.assertEqual(int(t.dtype), w["dtype"])
                self.assertEqual(t.dtype_name, QT(w["dtype"]).name)
                self.assertEqual(t.file_offset, w["file_offset"])
                self.assertEqual(t.offset, w["offset"])
                self.assertEqual(t.size, w["size"])
                self.assertEqual(t.n_elements, w["n_elements"])
                self.assertIs(f.tensor(t.name), t)
                data = t.data
                self.assertIsInstance(data, memoryview)
                self.assertTrue(data.readonly)
                self.assertEqual(data.format, "B")
                self.assertEqual(data.nbytes, t.size)
                self.assertEqual(data.tobytes(), w["bytes"])
                self.check_numpy(f, t, w)

    def check_array_extras(self, m, k, elem, value):
        if elem == GGUFValueType.STRING:
            if value:
                j = len(value) // 2
                self.assertTrue(same(m.array_string(k, j), value[j]))
            return
        if elem == GGUFValueType.ARRAY:
            with self.assertRaises(TypeError):
                m.numpy(k)
            return
        arr = m.numpy(k)
        self.assertFalse(arr.flags.writeable)
        self.assertEqual(len(arr), len(value))
        self.assertTrue(same([x.item() for x in arr], value))

    def check_numpy(self, f, t, w):
        arr = t.numpy()
        ref_arr = w["array"]
        self.assertFalse(arr.flags.writeable)
        expected_shape = tuple(reversed(t.shape))
        if t.dtype in NUMPY_KIND:
            self.assertEqual(arr.shape, expected_shape)
            order = ">" if f.byte_order == "big" else "<"
            self.assertEqual(arr.dtype, np.dtype(order + NUMPY_KIND[t.dtype]))
            if t.dtype != DataType.BF16:
                self.assertEqual(arr.dtype.newbyteorder("="), ref_arr.dtype.newbyteorder("="))
                np.testing.assert_array_equal(
                    arr.reshape(ref_arr.shape), ref_arr, strict=False
                )
        else:
            # Quantized: raw bytes, innermost axis in bytes (as gguf-py gives them).
            self.assertEqual(arr.dtype, np.uint8)
            self.assertEqual(arr.shape[:-1], expected_shape[:-1])
        self.assertEqual(arr.tobytes(), w["bytes"])
        if t.size:
            # Zero-copy: the array's memory is the mapping's, where the C library says.
            h = f._core.h
            self.assertEqual(arr.ctypes.data, h.lib.gguf_tensor_data(h.ptr, t._addr))
            self.assertTrue(h.lib.gguf_contains(h.ptr, arr.ctypes.data, t.size))
            self.assertTrue(np.shares_memory(arr, np.frombuffer(t.data, np.uint8)))


class ReferenceFiles(Compare):
    """Files written by the reference writer, read by both readers."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="libgguf-py-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_sample(self):
        with libgguf.open(SAMPLE) as f:
            self.assert_same_as_reference(SAMPLE, f)
            self.assertEqual(f.metadata["general.architecture"], "llama")
            self.assertEqual(f.metadata["tokenizer.ggml.tokens"][0], "<unk>")

    def test_random_files(self):
        for seed in range(8):
            path = os.path.join(self.dir, f"random-{seed}.gguf")
            write_random(path, seed, big=seed % 4 == 3)
            with self.subTest(seed=seed), libgguf.open(path) as f:
                self.assert_same_as_reference(path, f)

    def test_open_memory(self):
        path = os.path.join(self.dir, "memory.gguf")
        write_random(path, 100)
        with open(path, "rb") as fh:
            raw = fh.read()
        for buf in (raw, bytearray(raw), memoryview(raw), np.frombuffer(raw, np.uint8)):
            with self.subTest(kind=type(buf).__name__), libgguf.open_memory(buf) as f:
                self.assertEqual(f.path, "<memory>")
                self.assertEqual(f.shards[0].path, "<memory>")
                self.assert_same_as_reference(path, f)
        # A bytearray lent to the library cannot be resized until the handle is gone.
        ba = bytearray(raw)
        f = libgguf.open_memory(ba)
        with self.assertRaises(BufferError):
            ba.append(0)
        data = f.tensors[0].data
        f.close()
        with self.assertRaises(BufferError):  # the view of its data still holds it
            ba.append(0)
        del data
        gc.collect()
        ba.append(0)
        # An mmap: cannot be closed while lent.
        with open(path, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        with libgguf.open_memory(mm) as f:
            self.assert_same_as_reference(path, f)
            with self.assertRaises(BufferError):
                mm.close()
        gc.collect()
        mm.close()
        # Not contiguous: refused.
        with self.assertRaises(BufferError):
            libgguf.open_memory(memoryview(raw)[::2])

    def test_shards(self):
        d = os.path.join(self.dir, "split")
        os.makedirs(d, exist_ok=True)
        write_random(os.path.join(d, "model.gguf"), 7, split_max_tensors=5)
        paths = sorted(os.path.join(d, p) for p in os.listdir(d))
        self.assertGreater(len(paths), 2)
        refs = [reference_view(p) for p in paths]
        all_tensors = [t for r in refs for t in r["tensors"]]
        for path in paths:
            with self.subTest(opened=os.path.basename(path)), libgguf.open(path) as f:
                shards = f.shards
                self.assertEqual([s.path for s in shards], paths)
                self.assertEqual([s.index for s in shards], list(range(len(paths))))
                for s, r in zip(shards, refs):
                    self.assertEqual(s.file_size, r["file_size"])
                    self.assertEqual(s.data_offset, r["data_offset"])
                    self.assertEqual(s.alignment, r["alignment"])
                    self.assertEqual(s.version, r["version"])
                    self.assertEqual(s.tensor_count, len(r["tensors"]))
                self.assertEqual(
                    [s.first_tensor for s in shards],
                    [sum(len(r["tensors"]) for r in refs[:i]) for i in range(len(refs))],
                )
                tensors = f.tensors
                self.assertEqual(len(tensors), len(all_tensors))
                for t, w in zip(tensors, all_tensors):
                    self.assertEqual(t.name, w["name"])
                    self.assertEqual(t.shard, next(
                        i for i, r in enumerate(refs) if w in r["tensors"]))
                    self.assertEqual(t.file_offset, w["file_offset"])
                    self.assertEqual(t.data.tobytes(), w["bytes"])
                # The model's metadata is the first shard's.
                want = {k: v for k, _, _, v in refs[0]["metadata"]}
                self.assertEqual(list(f.metadata), list(want))
            with libgguf.open(path, single_shard=True) as one:
                i = paths.index(path)
                self.assertEqual(len(one.shards), 1)
                self.assert_same_as_reference(path, one)
                self.assertEqual(one.metadata["split.no"], i)


class Behaviour(unittest.TestCase):
    def test_library_found(self):
        env = os.environ.get("LIBGGUF_PATH")
        if env:
            want = os.path.join(env, "libgguf.so") if os.path.isdir(env) else env
            self.assertEqual(os.path.realpath(libgguf.library_path()), os.path.realpath(want))
        self.assertEqual(libgguf.library_version(), libgguf.__version__)

    def test_ffi_layout(self):
        """The ctypes structures match the Rust (C) definitions, as tests/python.rs measures
        them."""
        layout = os.environ.get("GGUF_FFI_LAYOUT")
        if not layout:
            self.skipTest("GGUF_FFI_LAYOUT is set by tests/python.rs")
        from libgguf import _native

        for name, want in json.loads(layout).items():
            with self.subTest(struct=name):
                cls = _native.STRUCTS[name]
                self.assertEqual(ctypes.sizeof(cls), want["size"])
                self.assertEqual(ctypes.alignment(cls), want["align"])
                got = {f[0]: getattr(cls, f[0]).offset for f in cls._fields_}
                if want["fields"]:
                    self.assertEqual(got, want["fields"])

    def test_properties_and_flags(self):
        for flags in ({}, {"populate": True}, {"read": True}, {"single_shard": True}):
            with self.subTest(**flags), libgguf.open(SAMPLE, **flags) as f:
                self.assertEqual(f.version, 3)
                self.assertEqual(f.file_size, os.path.getsize(SAMPLE))
                self.assertEqual(len(f.shards), 1)
                t = f.tensor("output_norm.weight")
                self.assertEqual(t.numpy().dtype, np.float32)
                self.assertEqual(t.data.tobytes(), read_bytes(SAMPLE)[
                    t.file_offset : t.file_offset + t.size])
        try:
            with libgguf.open(SAMPLE, lock=True) as f:
                self.assertEqual(f.version, 3)
        except GGUFError as e:  # ulimit -l may forbid it: the error says so
            self.assertEqual(e.code, ErrorCode.IO)
            self.assertIn("ulimit", e.message)

    def test_lifetime(self):
        f = libgguf.open(SAMPLE)
        handle = weakref.ref(f._core.h)
        t = f.tensor("blk.0.attn_norm.weight")
        data = t.data
        arr = t.numpy()
        tokens = f.metadata.numpy("tokenizer.ggml.token_type")
        first = bytes(data)
        f.close()
        f.close()  # idempotent
        self.assertTrue(f.closed)
        gc.collect()
        # The views keep the mapping: still readable after close.
        self.assertEqual(bytes(data), first)
        self.assertEqual(arr.tobytes(), first)
        self.assertEqual(int(tokens[0]), 2)
        self.assertIsNotNone(handle())
        with self.assertRaises(ValueError):
            t.data
        with self.assertRaises(ValueError):
            f.metadata
        with self.assertRaises(ValueError):
            f.tensors
        with self.assertRaises(TypeError):
            data[0] = 1  # read-only
        with self.assertRaises(ValueError):
            arr[0] = 1
        del data, arr, tokens
        gc.collect()
        self.assertIsNone(handle(), "the handle is closed when the last view goes")

        # Without close(): dropping the file and its views closes the handle.
        f = libgguf.open(SAMPLE)
        handle = weakref.ref(f._core.h)
        f.tensors, f.metadata["tokenizer.ggml.tokens"]
        del f
        self.assertIsNone(handle(), "no reference cycle keeps a dropped file open")

    def test_errors(self):
        tmp = tempfile.mkdtemp(prefix="libgguf-py-err-")
        try:
            with self.assertRaises(GGUFError) as cm:
                libgguf.open(os.path.join(tmp, "missing.gguf"))
            self.assertEqual(cm.exception.code, ErrorCode.IO)
            self.assertIn("missing.gguf", str(cm.exception))

            bad = os.path.join(tmp, "bad.gguf")
            with open(bad, "wb") as fh:
                fh.write(b"GGML" + bytes(60))
            with self.assertRaises(GGUFError) as cm:
                libgguf.open(bad)
            e = cm.exception
            self.assertEqual((e.code, e.offset), (ErrorCode.BAD_MAGIC, 0))
            self.assertEqual(e.args, (e.code, e.offset, e.message))
            self.assertTrue(e.message.startswith("gguf: "))

            raw = read_bytes(SAMPLE)
            with open(bad, "wb") as fh:
                fh.write(raw[:12])  # inside the tensor count
            with self.assertRaises(GGUFError) as cm:
                libgguf.open(bad)
            self.assertEqual(cm.exception.code, ErrorCode.TRUNCATED)
            self.assertEqual(cm.exception.offset, 8)
            self.assertIn("bad.gguf", cm.exception.message)
            with self.assertRaises(GGUFError) as cm:
                libgguf.open_memory(raw[:1000])  # a vocabulary cut short
            self.assertEqual(cm.exception.code, ErrorCode.ARRAY_TOO_LONG)
            self.assertIsNotNone(cm.exception.offset)
            self.assertIn("<memory>", cm.exception.message)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

        with libgguf.open(SAMPLE) as f:
            with self.assertRaises(GGUFError) as cm:
                f.tensor("no.such.tensor")
            self.assertEqual(cm.exception.code, ErrorCode.NOT_FOUND)
            self.assertIsNone(cm.exception.offset)
            with self.assertRaises(KeyError):
                f.metadata["no.such.key"]
            self.assertNotIn("no.such.key", f.metadata)
            self.assertIn("general.name", f.metadata)
            self.assertEqual(f.metadata.get("no.such.key", 5), 5)
            with self.assertRaises(GGUFError) as cm:
                f.metadata.array_string("tokenizer.ggml.tokens", 10**9)
            self.assertEqual(cm.exception.code, ErrorCode.INVALID_ARGUMENT)
            with self.assertRaises(GGUFError) as cm:
                f.plan_upload(1 << 20, page_size=3)
            self.assertEqual(cm.exception.code, ErrorCode.INVALID_ARGUMENT)

    def test_enums_print_as_names(self):
        for cls in (ValueType, DataType, ErrorCode, libgguf.ByteOrder, libgguf.Paging):
            for member in cls:
                with self.subTest(member=member.name):
                    want = f"{cls.__name__}.{member.name}"
                    self.assertEqual(str(member), want)
                    self.assertEqual(f"{member}", want)
                    self.assertEqual("%s" % member, want)
                    self.assertEqual(f"{member:>30}", want.rjust(30))
                    # Still numbers where a number is asked for.
                    self.assertEqual(f"{member:d}", str(int(member)))
                    self.assertEqual("%d" % member, str(int(member)))
                    self.assertEqual(member, int(member))
        with libgguf.open(SAMPLE) as f:
            self.assertEqual(str(f.metadata.type("llama.block_count")), "ValueType.UINT32")
            self.assertEqual(str(f.tensor("output_norm.weight").dtype), "DataType.F32")
            self.assertIn("element_type=<ValueType.STRING: 8>",
                          repr(f.metadata.field("tokenizer.ggml.tokens")))

    def test_readme_examples(self):
        """The Python code of README.md's Python section and of python/README.md runs, with
        the bundled sample as "model.gguf", and does what it says."""
        blocks = []
        for readme, section in (("README.md", "## Using it from Python"),
                                (os.path.join("python", "README.md"), None)):
            text = read_bytes(os.path.join(REPO, readme)).decode("utf-8")
            if section is not None:
                text = text[text.index(section) :]
                text = text[: text.index("\n## ", len(section))]
            found = [b.split("\n```", 1)[0] for b in text.split("```python\n")[1:]]
            self.assertTrue(found, f"no Python example in {readme}")
            blocks.append(found)
        tmp = tempfile.mkdtemp(prefix="libgguf-py-readme-")
        cwd = os.getcwd()
        try:
            shutil.copyfile(SAMPLE, os.path.join(tmp, "model.gguf"))
            os.chdir(tmp)
            import contextlib
            import io

            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                for found in blocks:
                    namespace = {}  # one per README: its blocks follow on from each other
                    for block in found:
                        exec(compile(block, "README", "exec"), namespace)
            self.assertIn("ValueType.UINT32", out.getvalue())
            with libgguf.open("new.gguf") as f:
                self.assertEqual(f.metadata["llama.block_count"], 2)
                self.assertEqual(f.tensor("token_embd.weight").shape, (4, 8))
            with libgguf.open("renamed.gguf") as f, libgguf.open(SAMPLE) as g:
                self.assertEqual(f.metadata["general.name"], "renamed")
                self.assertEqual(len(f.metadata), len(g.metadata))
                self.assertEqual([t.data.tobytes() for t in f.tensors],
                                 [t.data.tobytes() for t in g.tensors])
        finally:
            os.chdir(cwd)
            shutil.rmtree(tmp, ignore_errors=True)

    def test_plan_upload(self):
        with libgguf.open(SAMPLE) as f:
            tensors = f.tensors
            for limit in (None, 1 << 20, 160 * 1024, 64 * 1024):
                with self.subTest(limit=limit):
                    plan = f.plan_upload(limit)
                    self.assertEqual(plan.page_size, mmap.PAGESIZE)
                    self.assertEqual(len(plan.placements), len(tensors))
                    self.assertEqual(plan.n_oversized, len(plan.oversized))
                    for i, (t, p) in enumerate(zip(tensors, plan.placements)):
                        if p.view is None:
                            self.assertGreater(t.size, plan.max_view_size - plan.page_size)
                            continue
                        v = plan.views[p.view]
                        self.assertEqual(v.index, p.view)
                        self.assertEqual(v.address % plan.page_size, 0)
                        self.assertLessEqual(v.size, plan.max_view_size)
                        self.assertEqual(v.file_offset + p.offset, t.file_offset)
                        self.assertLessEqual(p.offset + t.size, v.size)
                        self.assertEqual(
                            v.data[p.offset : p.offset + t.size].tobytes(), t.data.tobytes()
                        )
            self.assertGreater(f.plan_upload(64 * 1024).n_oversized, 0)

    def test_paging_advice(self):
        with libgguf.open(SAMPLE) as f:
            f.tensors[0].advise(libgguf.Paging.WILL_NEED)
            f.advise(libgguf.Paging.SEQUENTIAL)
        with libgguf.open_memory(read_bytes(SAMPLE)) as f:
            with self.assertRaises(GGUFError) as cm:
                f.advise(libgguf.Paging.WILL_NEED)
            self.assertEqual(cm.exception.code, ErrorCode.UNSUPPORTED)


class Writing(Compare):
    """libgguf.Writer, checked with the reference reader and with libgguf."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="libgguf-py-w-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_every_type(self):
        for big in (False, True):
            path = os.path.join(self.dir, f"w-{big}.gguf")
            w = libgguf.Writer(byte_order="big" if big else "little", alignment=64)
            values = {}
            for vtype, v in [
                (ValueType.UINT8, 255), (ValueType.INT8, -128), (ValueType.UINT16, 65535),
                (ValueType.INT16, -32768), (ValueType.UINT32, 2**32 - 1),
                (ValueType.INT32, -(2**31)), (ValueType.FLOAT32, 0.5), (ValueType.BOOL, True),
                (ValueType.UINT64, 2**64 - 1), (ValueType.INT64, -(2**63)),
                (ValueType.FLOAT64, 0.1), (ValueType.STRING, "héllo"),
                (ValueType.STRING, b"\xff\x00raw"),
            ]:
                k = f"t.{vtype.name.lower()}.{len(values)}"
                w.set(k, v, vtype)
                values[k] = (vtype, None, text(v) if isinstance(v, bytes) else v)
            w.set("general.architecture", "llama")
            values["general.architecture"] = (ValueType.STRING, None, "llama")
            w.set("inferred.int", 7)
            values["inferred.int"] = (ValueType.INT32, None, 7)
            w.set("inferred.big", 2**40)
            values["inferred.big"] = (ValueType.INT64, None, 2**40)
            for elem, vals in [
                (ValueType.UINT8, [0, 255]), (ValueType.INT8, [-1, 1]),
                (ValueType.UINT16, [1, 2, 3]), (ValueType.INT16, [-5]),
                (ValueType.UINT32, [7, 8]), (ValueType.INT32, [-7, 8]),
                (ValueType.FLOAT32, [1.5, -0.0]), (ValueType.BOOL, [True, False, True]),
                (ValueType.UINT64, [2**64 - 1]), (ValueType.INT64, [-(2**63), 5]),
                (ValueType.FLOAT64, [0.1, float("inf")]), (ValueType.STRING, ["a", "", "b\x00c", b"\xfe"]),
                (ValueType.INT32, []),
            ]:
                k = f"a.{elem.name.lower()}.{len(values)}"
                w.set_array(k, vals, elem)
                want = [text(v) if isinstance(v, bytes) else v for v in vals]
                values[k] = (ValueType.ARRAY, elem, want)
            w.set("a.nested", [[1, 2], [3], [[True], [False, True]]])
            values["a.nested"] = (ValueType.ARRAY, ValueType.ARRAY, [[1, 2], [3], [[True], [False, True]]])
            w.set("a.numpy", np.arange(5, dtype=np.uint16))
            values["a.numpy"] = (ValueType.ARRAY, ValueType.UINT16, [0, 1, 2, 3, 4])
            w.set("gone", 1)
            w.remove("gone")
            with self.assertRaises(GGUFError) as cm:
                w.remove("gone")
            self.assertEqual(cm.exception.code, ErrorCode.NOT_FOUND)

            rng = np.random.default_rng(1)
            arrays = {
                "f32": rng.standard_normal((3, 5)).astype(np.float32),
                "f16": rng.standard_normal((2, 3, 4)).astype(np.float16),
                "f64": rng.standard_normal(7),
                "i8": rng.integers(-100, 100, (4, 4), dtype=np.int8),
                "i32": rng.integers(-100, 100, (2, 2, 2, 2), dtype=np.int32),
                "i64": np.arange(6, dtype=np.int64).reshape(2, 3)[:, ::2],  # not contiguous
                "empty": np.zeros((0, 4), np.float32),
            }
            for name, a in arrays.items():
                w.add_tensor(name, a)
            q = bytes(range(256))[:18 * 4]
            w.add_tensor("q4_0", q, dtype=DataType.Q4_0, shape=(64, 2))
            bf16 = np.arange(8, dtype=np.uint16)
            w.add_tensor("bf16", bf16, dtype=DataType.BF16)
            w.write_file(path)
            w.close()

            want = reference_view(path)
            self.assertEqual(want["byte_order"], "big" if big else "little")
            self.assertEqual(want["alignment"], 64)
            ref_meta = {k: (t, v) for k, t, _, v in want["metadata"]}
            with libgguf.open(path) as f:
                self.assert_same_as_reference(path, f)
                for k, (vtype, elem, v) in values.items():
                    with self.subTest(key=k):
                        self.assertEqual(ref_meta[k][0], vtype)
                        self.assertTrue(same(ref_meta[k][1], v), f"{k}: {ref_meta[k][1]!r} != {v!r}")
                        self.assertEqual(f.metadata.element_type(k), elem)
                for name, a in arrays.items():
                    got = f.tensor(name).numpy()
                    self.assertEqual(got.shape, a.shape)
                    np.testing.assert_array_equal(got, a)
                self.assertEqual(f.tensor("q4_0").data.tobytes(), q)
                self.assertEqual(f.tensor("q4_0").shape, (64, 2))
                np.testing.assert_array_equal(f.tensor("bf16").numpy(), bf16)

                # Editing: everything kept, one key changed, written elsewhere.
                edited = os.path.join(self.dir, f"edited-{big}.gguf")
                e = libgguf.Writer.from_file(f)
                e.set("general.architecture", "qwen2")
                e.write_file(edited)
                e.close()
            with libgguf.open(edited) as g:
                self.assert_same_as_reference(edited, g)
                self.assertEqual(g.metadata["general.architecture"], "qwen2")
                self.assertEqual(g.byte_order, "big" if big else "little")
                np.testing.assert_array_equal(g.tensor("f32").numpy(), arrays["f32"])

    def test_in_place_edit(self):
        """Writer.from_file(f).write_file(f.path): the editor's everyday case. The file is
        rewritten whole, and the open handle keeps reading the old file until closed."""
        src = os.path.join(self.dir, "src.gguf")
        write_random(src, 11)
        before = reference_view(src)
        for flags in ({}, {"read": True}, {"populate": True}):
            path = os.path.join(self.dir, "edit.gguf")
            shutil.copyfile(src, path)
            with self.subTest(**flags):
                f = libgguf.open(path, **flags)
                old_arch = f.metadata["general.architecture"]
                old_data = [t.data.tobytes() for t in f.tensors]
                held = f.tensors[-1].data  # a view of the old mapping, kept past the rewrite
                w = libgguf.Writer.from_file(f)
                w.set("general.architecture", "edited")
                w.set("general.new_key", 42, ValueType.UINT32)
                w.write_file(f.path)
                w.close()
                # The old handle still reads the old file.
                self.assertEqual(f.metadata["general.architecture"], old_arch)
                self.assertEqual([t.data.tobytes() for t in f.tensors], old_data)
                self.assertEqual(held.tobytes(), old_data[-1])
                f.close()
                after = reference_view(path)
                got = {k: v for k, _, _, v in after["metadata"]}
                self.assertEqual(got["general.architecture"], "edited")
                self.assertEqual(got["general.new_key"], 42)
                self.assertEqual(
                    [(t["name"], t["bytes"]) for t in after["tensors"]],
                    [(t["name"], t["bytes"]) for t in before["tensors"]],
                )
                with libgguf.open(path) as g:
                    self.assert_same_as_reference(path, g)
                    self.assertEqual([t.data.tobytes() for t in g.tensors], old_data)
                del held
                gc.collect()

    def test_string_arrays(self):
        """String arrays decoded in bulk (one block from the C library, split) and exactly
        (strings holding NUL bytes), in every version (v1 has 32-bit lengths) and byte order."""
        cases = {
            "vocab": [f"▁tok{i}" if i % 3 else f"t{i}" for i in range(5000)],
            "ascii": ["a", "bc", "", "def"],
            "empties": ["", "", ""],
            "one_empty": [""],
            "last_empty": ["x", ""],
            "nul": ["a\0b", "", "\0", "c"],
            "nul_last": ["a", "b\0"],
            "not_utf8": [b"\xff", "ok", b"\x80\x81", "▁"],
            "both": [b"\xff\0", "x"],
            "empty_array": [],
        }
        for version in (1, 2, 3):
            for big in (False, True):
                path = os.path.join(self.dir, f"s{version}{big}.gguf")
                with libgguf.Writer(version=version, byte_order="big" if big else "little") as w:
                    for k, v in cases.items():
                        w.set_array(k, v, ValueType.STRING)
                    w.write_file(path)
                with self.subTest(version=version, big=big), libgguf.open(path) as f:
                    for k, v in cases.items():
                        want = [text(x) if isinstance(x, bytes) else x for x in v]
                        self.assertTrue(same(f.metadata[k], want), k)
                        for j in (0, len(v) // 2, len(v) - 1) if v else ():
                            self.assertTrue(same(f.metadata.array_string(k, j), want[j]), k)

    def test_string_array_sequence(self):
        """metadata[key] of a string array is a lazy read-only sequence that behaves as the list
        of its elements, in every layout (NUL bytes and non-UTF-8 strings included)."""
        cases = {
            "plain": ["<pad>", "▁the", "", "a", "▁the", "zz"],
            "nul": ["a\0b", "", "\0", "c", "a"],
            "not_utf8": [b"\xff", "ok", b"\x80\x81", "▁", b"\xff"],
            "empty_array": [],
            "one": ["x"],
        }
        path = os.path.join(self.dir, "seq.gguf")
        with libgguf.Writer() as w:
            for k, v in cases.items():
                w.set_array(k, v, ValueType.STRING)
            w.write_file(path)
        with libgguf.open(path) as f:
            arrays = {k: f.metadata[k] for k in cases}
            self.assertIs(f.metadata["plain"], arrays["plain"], "read-only: the same object")
        # Everything below runs after close(): the array holds its own copy.
        for k, want in cases.items():
            with self.subTest(k):
                a = arrays[k]
                self.assertIsInstance(a, libgguf.StringArray)
                self.assertIsInstance(a, collections.abc.Sequence)
                n = len(want)
                self.assertEqual(len(a), n)
                self.assertEqual(list(a), want)
                self.assertEqual(a.tolist(), want)
                self.assertIs(type(a.tolist()), list)
                self.assertEqual(list(reversed(a)), want[::-1])
                for j in range(-n, n):
                    self.assertTrue(same(a[j], want[j]), (k, j))
                for j in (n, -n - 1, 2**70):
                    with self.assertRaises(IndexError):
                        a[j]
                with self.assertRaises(TypeError):
                    a["0"]
                with self.assertRaises(TypeError):
                    a[1] = "x"
                for sl in (slice(None), slice(1, None), slice(None, -1), slice(None, None, -1),
                           slice(1, 100, 2), slice(-3, -1), slice(5, 1)):
                    self.assertEqual(a[sl], want[sl], (k, sl))
                    self.assertIs(type(a[sl]), list)
                # in, index and count agree with the list, for every element and some others.
                for x in want + ["missing", b"missing", "\ud800", b"ok", 3, None, "a\0", "b"]:
                    self.assertEqual(x in a, x in want, (k, x))
                    self.assertEqual(a.count(x), want.count(x), (k, x))
                    for args in ((), (1,), (1, 3), (-2,)):
                        self.assertEqual(position(a, x, *args), position(want, x, *args), (k, x))
                # == with a list, a tuple or another StringArray, element by element.
                self.assertTrue(a == want and a == tuple(want) and want == a)
                self.assertFalse(a != want)
                self.assertEqual(a, arrays[k])
                self.assertNotEqual(a, want + ["extra"])
                if n:
                    self.assertNotEqual(a, want[:-1] + ["other"])
                    self.assertNotEqual(a, arrays["one"] if k != "one" else arrays["plain"])
                self.assertNotEqual(a, set(want))
                self.assertFalse(a == "".join(x for x in want if isinstance(x, str)))
                with self.assertRaises(TypeError):
                    hash(a)
        # Copies and pickles are equal StringArrays.
        for k in cases:
            for c in (copy.copy(arrays[k]), pickle.loads(pickle.dumps(arrays[k]))):
                self.assertIsInstance(c, libgguf.StringArray)
                self.assertEqual(c, arrays[k])
                self.assertEqual(c.tolist(), cases[k] if k != "not_utf8" else arrays[k].tolist())
        # str and bytes stay distinct: b"ok" is not the element "ok".
        self.assertNotIn(b"ok", arrays["not_utf8"])
        self.assertIn(b"\x80\x81", arrays["not_utf8"])
        self.assertEqual(arrays["not_utf8"].index(b"\xff"), 0)
        # repr shows a short prefix and the length.
        self.assertEqual(
            repr(arrays["plain"]),
            "<libgguf.StringArray of 6 strings: ['<pad>', '▁the', '', ...]>",
        )
        self.assertEqual(repr(arrays["empty_array"]), "<libgguf.StringArray of 0 strings: []>")
        self.assertEqual(repr(arrays["one"]), "<libgguf.StringArray of 1 strings: ['x']>")
        # A StringArray is written back as a string array.
        path2 = os.path.join(self.dir, "seq2.gguf")
        with libgguf.Writer() as w:
            w.set("plain", arrays["plain"])
            w.set_array("nul", arrays["nul"])
            w.write_file(path2)
        with libgguf.open(path2) as g:
            self.assertEqual(g.metadata["plain"], cases["plain"])
            self.assertEqual(g.metadata["nul"], cases["nul"])

    def test_writer_errors(self):
        w = libgguf.Writer()
        with self.assertRaises(GGUFError) as cm:
            w.add_tensor("x", b"abc", dtype=DataType.F32, shape=(1,))
        self.assertIsInstance(cm.exception.code, ErrorCode)
        with self.assertRaises(GGUFError):
            w.set("", 1)
        with self.assertRaises(TypeError):
            w.add_tensor("u", np.zeros(3, np.uint16))
        with self.assertRaises(GGUFError):
            libgguf.Writer(alignment=3)
        w.close()
        with self.assertRaises(ValueError):
            w.set("k", 1)


def write_nul_keys(path, big=False):
    """A file (reference writer) whose keys and a tensor name hold NUL bytes, beside keys that
    are their prefixes: a lookup cut at the NUL would find the prefix's value."""
    w = GGUFWriter(path, "llama", endianess=GGUFEndian.BIG if big else GGUFEndian.LITTLE)
    w.add_key_value("a", [1, 2, 3], GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT32)
    w.add_key_value("a\x00b", [7, 8], GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT32)
    w.add_key_value("s", ["x", "y"], GGUFValueType.ARRAY, sub_type=GGUFValueType.STRING)
    w.add_key_value(
        "s\x00t", ["p", "q", "r"], GGUFValueType.ARRAY, sub_type=GGUFValueType.STRING
    )
    w.add_key_value("v", 5, GGUFValueType.UINT32)
    w.add_key_value("v\x00w", 6, GGUFValueType.UINT32)
    w.add_tensor("t", np.arange(4, dtype=np.float32))
    w.add_tensor("t\x00secret", np.arange(4, 8, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


class Boundary(unittest.TestCase):
    """What crosses into C is checked first: no NUL byte silently cuts a path, key or name, no
    integer silently wraps, and a missing file raises what Python users expect of open()."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="libgguf-py-b-")
        self.model = os.path.join(self.dir, "a.gguf")
        shutil.copyfile(SAMPLE, self.model)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_nul_in_paths(self):
        # A path cut at its NUL would name a.gguf, which exists.
        for path in (self.model + "\0b", os.fsencode(self.model) + b"\0b"):
            with self.subTest(path=path), self.assertRaises(ValueError):
                libgguf.open(path)
        import pathlib

        with self.assertRaises(ValueError):
            libgguf.open(pathlib.Path(self.model + "\0b"))
        out = os.path.join(self.dir, "x.gguf")
        with libgguf.open(self.model) as f, libgguf.Writer.from_file(f) as w:
            for path in (out + "\0.tmp", os.fsencode(out) + b"\0.tmp"):
                with self.subTest(path=path), self.assertRaises(ValueError):
                    w.write_file(path)
            self.assertFalse(os.path.exists(out), "nothing written under the cut name")
            w.write_file(out)  # the writer is still usable
        with libgguf.open(out) as g:
            self.assertEqual(g.tensor_count, libgguf.open(self.model).tensor_count)

    def test_nul_in_writer_keys_and_names(self):
        with libgguf.Writer() as w:
            data = np.zeros(4, np.float32)
            for name in ("a\0secret", b"a\0secret", bytearray(b"a\0")):
                with self.subTest(name=name), self.assertRaises(ValueError):
                    w.add_tensor(name, data)
            for call in (
                lambda: w.set("k\0x", 1),
                lambda: w.set_string("k\0x", "v"),
                lambda: w.set_array("k\0x", [1, 2]),
                lambda: w.set_array("k\0x", ["a"]),
                lambda: w.remove("k\0x"),
            ):
                with self.assertRaises(ValueError):
                    call()
            # NUL bytes inside values are data, kept whole (the C calls take lengths).
            w.set_string("s", "a\0b")
            w.set_array("arr", ["c\0d", b"\0"])
            w.add_tensor("a", data)
            path = os.path.join(self.dir, "w.gguf")
            w.write_file(path)
        with libgguf.open(path) as f:
            self.assertEqual([t.name for t in f.tensors], ["a"])
            self.assertEqual(f.metadata["s"], "a\0b")
            self.assertEqual(f.metadata["arr"], ["c\0d", "\0"])

    def test_nul_in_lookups(self):
        """Lookups in an open file compare whole keys and names (length-aware): a key with a
        NUL byte finds its own value, never that of the key its prefix names."""
        for big in (False, True):
            path = os.path.join(self.dir, f"nul-{big}.gguf")
            write_nul_keys(path, big)
            with self.subTest(big=big), libgguf.open(path) as f:
                m = f.metadata
                self.assertEqual(m["a\0b"], [7, 8])
                self.assertEqual(m[b"a\0b"], [7, 8])
                self.assertEqual(m["a"], [1, 2, 3])
                self.assertEqual(m.numpy("a\0b").tolist(), [7, 8])
                self.assertEqual(m.numpy("a").tolist(), [1, 2, 3])
                self.assertFalse(m.numpy("a\0b").flags.writeable)
                self.assertEqual(m["s\0t"], ["p", "q", "r"])
                self.assertIsInstance(m["s\0t"], libgguf.StringArray)
                self.assertIsInstance(m["s"], libgguf.StringArray)
                self.assertEqual(m.array_string("s\0t", 2), "r")
                self.assertEqual(m.array_string("s", 1), "y")
                with self.assertRaises(GGUFError) as cm:
                    m.array_string("s\0t", 3)
                self.assertEqual(cm.exception.code, ErrorCode.INVALID_ARGUMENT)
                with self.assertRaises(GGUFError) as cm:
                    m.array_string("a\0b", 0)
                self.assertEqual(cm.exception.code, ErrorCode.WRONG_TYPE)
                self.assertEqual(m["v\0w"], 6)
                for missing in ("a\0c", "v\0", b"s\0"):
                    with self.assertRaises(KeyError):
                        m[missing]
                    with self.assertRaises(KeyError):
                        m.numpy(missing)
                    with self.assertRaises(KeyError):
                        m.array_string(missing, 0)
                    self.assertNotIn(missing, m)
                self.assertEqual(f.tensor("t\0secret").numpy().tolist(), [4, 5, 6, 7])
                self.assertEqual(f.tensor("t").numpy().tolist(), [0, 1, 2, 3])
                with self.assertRaises(GGUFError) as cm:
                    f.tensor("t\0other")
                self.assertEqual(cm.exception.code, ErrorCode.NOT_FOUND)

    def test_types_of_names(self):
        with libgguf.Writer() as w:
            data = np.zeros(4, np.float32)
            for name in (123, 0, None, 1.5, ["a"]):
                with self.subTest(name=name), self.assertRaises(TypeError):
                    w.add_tensor(name, data)
            for key in (123, None):
                with self.assertRaises(TypeError):
                    w.set(key, 1)
                with self.assertRaises(TypeError):
                    w.remove(key)
            with self.assertRaises(TypeError):
                w.set_string("k", 5)  # would be five NUL bytes
            with self.assertRaises(TypeError):
                w.set("k", 5, ValueType.STRING)
            with self.assertRaises(TypeError):
                w.set_array("k", ["a", 3], ValueType.STRING)
            with self.assertRaises(TypeError):
                w.set("k", [["a", 3]])
        with libgguf.open(self.model) as f:
            with self.assertRaises(TypeError):
                f.tensor(123)
        with self.assertRaises(TypeError):
            libgguf.open(3)

    def test_integer_ranges(self):
        w = libgguf.Writer()
        self.addCleanup(w.close)
        # The ranges from the test side's table (not the package's own).
        for ref_type, (lo, hi) in INT_TYPES.items():
            vtype = ValueType(int(ref_type))
            with self.subTest(vtype=vtype):
                w.set("k", lo, vtype)
                w.set("k", hi, vtype)
                w.set("k", np.int64(lo) if lo >= -(2**63) else lo, vtype)
                for bad in (lo - 1, hi + 1, 300 if hi < 300 else hi + 300):
                    with self.assertRaises(OverflowError):
                        w.set("k", bad, vtype)
                    with self.assertRaises(OverflowError):
                        w.set_array("k", [lo, bad], vtype)
                with self.assertRaises(OverflowError):
                    w.set_array("k", np.array([lo - 1], dtype=object), vtype)
                for bad in (1.5, 2.0, "3", None):
                    with self.assertRaises(TypeError):
                        w.set("k", bad, vtype)  # no silent int(): 1.5 would become 1
                with self.assertRaises(TypeError):
                    w.set_array("k", [1, 2.5], vtype)
        # A numpy array whose values do not fit the element type asked for.
        with self.assertRaises(OverflowError):
            w.set_array("k", np.array([1, 300]), ValueType.UINT8)
        with self.assertRaises(OverflowError):
            w.set("k", [[1, 2**40]])  # inner type from its first element: INT32
        with self.assertRaises(OverflowError):
            w.set("k", 2**64)  # inferred: fits no integer type
        # BOOL takes booleans (and 0 or 1), nothing else silently made true.
        w.set("b", 0, ValueType.BOOL)
        w.set("b", np.True_, ValueType.BOOL)
        with self.assertRaises(OverflowError):
            w.set("b", 2, ValueType.BOOL)
        with self.assertRaises(OverflowError):
            w.set_array("b", [True, 2], ValueType.BOOL)
        with self.assertRaises(TypeError):
            w.set("b", "false", ValueType.BOOL)
        # FLOAT32: a finite value beyond its range would become infinity.
        for ok in (3.4028234663852886e38, float("inf"), float("-inf"), float("nan"), 1e-50, 7):
            w.set("f", ok, ValueType.FLOAT32)
        for bad in (3.5e38, -1e39, 1e300):
            with self.subTest(float32=bad):
                with self.assertRaises(OverflowError):
                    w.set("f", bad, ValueType.FLOAT32)
                with self.assertRaises(OverflowError):
                    w.set_array("f", [1.0, bad], ValueType.FLOAT32)
        with self.assertRaises(OverflowError):
            w.set("f", 10**400, ValueType.FLOAT64)
        with self.assertRaises(TypeError):
            w.set("f", "1.5", ValueType.FLOAT32)
        # Tensors: the type, the dimensions and their count.
        data = np.zeros(4, np.float32)
        with self.assertRaises(OverflowError):
            w.add_tensor("t", data, dtype=2**32)  # would be F32
        with self.assertRaises(OverflowError):
            w.add_tensor("t", data, dtype=-1)
        for shape in ((2**64 + 4,), (-4,), (4, 2**64)):
            with self.subTest(shape=shape), self.assertRaises(OverflowError):
                w.add_tensor("t", data.tobytes(), dtype=DataType.F32, shape=shape)
        with self.assertRaises(TypeError):
            w.add_tensor("t", data.tobytes(), dtype=DataType.F32, shape=(4.0,))
        with self.assertRaises(TypeError):
            w.add_tensor("t", data, dtype="F32")
        # Writer settings.
        with self.assertRaises(OverflowError):
            libgguf.Writer(alignment=2**32 + 64)  # would be 64
        with self.assertRaises(OverflowError):
            libgguf.Writer(version=2**32 + 3)  # would be 3
        # Nothing refused above reached the file.
        w.add_tensor("t", data)
        w.set("k", 1, ValueType.UINT8)
        path = os.path.join(self.dir, "ranges.gguf")
        w.write_file(path)
        with libgguf.open(path) as f:
            self.assertEqual([t.name for t in f.tensors], ["t"])
            self.assertEqual(f.metadata["k"], 1)
            self.assertEqual(f.metadata["b"], True)
            self.assertEqual(f.metadata["f"], 7.0)

    def test_reader_integer_arguments(self):
        with libgguf.open(self.model) as f:
            t = f.tensors[0]
            for bad in (2**40, 2**32, -1):
                with self.subTest(advice=bad):
                    with self.assertRaises(OverflowError):
                        t.advise(bad)  # 2**40 would be NORMAL
                    with self.assertRaises(OverflowError):
                        f.advise(bad)
            with self.assertRaises(TypeError):
                t.advise("WILL_NEED")
            with self.assertRaises(GGUFError) as cm:
                t.advise(17)  # in range, but no such advice: the library's refusal
            self.assertEqual(cm.exception.code, ErrorCode.INVALID_ARGUMENT)
            m = f.metadata
            for bad in (2**64, 2**64 + 1, -1):
                with self.subTest(index=bad), self.assertRaises(OverflowError):
                    m.array_string("tokenizer.ggml.tokens", bad)  # 2**64 would be element 0
            with self.assertRaises(TypeError):
                m.array_string("tokenizer.ggml.tokens", 1.0)
            self.assertEqual(m.array_string("tokenizer.ggml.tokens", 0), "<unk>")
            for kwargs in (
                {"max_view_size": 2**64}, {"max_view_size": -1},
                {"max_view_size": 1 << 20, "page_size": 2**64 + 4096},
                {"max_view_size": 1 << 20, "page_size": -4096},
            ):
                with self.subTest(**kwargs), self.assertRaises(OverflowError):
                    f.plan_upload(**kwargs)
            views = [[(v.file_offset, v.size) for v in f.plan_upload(limit).views]
                     for limit in (2**64 - 1, None)]
            self.assertEqual(views[0], views[1])

    def test_missing_file(self):
        import errno
        import pathlib

        missing = os.path.join(self.dir, "missing.gguf")
        for path in (missing, os.fsencode(missing), pathlib.Path(missing)):
            with self.subTest(path=path):
                with self.assertRaises(FileNotFoundError) as cm:
                    libgguf.open(path)
                e = cm.exception
                self.assertIsInstance(e, GGUFError)
                self.assertIsInstance(e, libgguf.GGUFOSError)
                self.assertEqual(e.errno, errno.ENOENT)
                self.assertEqual(e.filename, path if not isinstance(path, pathlib.Path) else missing)
                self.assertEqual(e.strerror, os.strerror(errno.ENOENT))
                self.assertEqual(e.code, ErrorCode.IO)
                self.assertIsNone(e.offset)
                self.assertIn("missing.gguf", e.message)
                self.assertEqual(str(e), e.message)
        # Caught as either.
        try:
            libgguf.open(missing)
        except GGUFError as e:
            self.assertEqual(e.errno, errno.ENOENT)
        with self.assertRaises(IsADirectoryError) as cm:
            libgguf.open(self.dir)
        self.assertIsInstance(cm.exception, GGUFError)
        self.assertEqual(cm.exception.errno, errno.EISDIR)
        self.assertEqual(cm.exception.filename, self.dir)
        with self.assertRaises(NotADirectoryError) as cm:
            libgguf.open(os.path.join(self.model, "x.gguf"))
        self.assertIsInstance(cm.exception, GGUFError)
        self.assertEqual(cm.exception.errno, errno.ENOTDIR)
        # A file that exists but breaks a rule is no OSError.
        bad = os.path.join(self.dir, "bad.gguf")
        with open(bad, "wb") as fh:
            fh.write(b"GGML" + bytes(60))
        with self.assertRaises(GGUFError) as cm:
            libgguf.open(bad)
        self.assertNotIsInstance(cm.exception, OSError)
        # Pickles and copies keep every attribute.
        import copy
        import pickle

        try:
            libgguf.open(missing)
        except FileNotFoundError as e:
            for again in (pickle.loads(pickle.dumps(e)), copy.copy(e)):
                self.assertIs(type(again), type(e))
                self.assertEqual(
                    (again.code, again.offset, again.message, again.errno, again.filename),
                    (e.code, e.offset, e.message, e.errno, e.filename),
                )

    def test_permission_denied(self):
        import errno

        os.chmod(self.dir, 0o755)  # the directory may be searched: the file itself is refused
        os.chmod(self.model, 0)

        def attempt():
            try:
                libgguf.open(self.model)
            except PermissionError as e:
                ok = isinstance(e, GGUFError) and e.errno == errno.EACCES
                return "ok" if ok and e.filename == self.model else f"wrong: {e!r}"
            except Exception as e:  # noqa: BLE001 (reported to the parent)
                return f"wrong: {e!r}"
            return "opened"

        if os.geteuid() != 0:
            self.assertEqual(attempt(), "ok")
            return
        # root reads anything: try as nobody, in a child process.
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            try:
                os.close(r)
                os.setgid(65534)
                os.setuid(65534)
                msg = attempt()
            except BaseException as e:  # noqa: BLE001
                msg = f"child failed: {e!r}"
            os.write(wfd, msg.encode())
            os._exit(0)
        os.close(wfd)
        with os.fdopen(r, "rb") as fh:
            msg = fh.read().decode()
        os.waitpid(pid, 0)
        self.assertEqual(msg, "ok")


class Packaging(unittest.TestCase):
    def test_distribution_name(self):
        """The distribution is published as libgguf-zerocopy: "libgguf" on PyPI is another
        project, which `pip install libgguf` would fetch. The import name is libgguf."""
        try:
            import setuptools  # noqa: F401
        except ImportError:
            self.skipTest("setuptools is not installed in this interpreter")
        out = tempfile.mkdtemp(prefix="libgguf-py-meta-")
        try:
            proc = subprocess.run(
                [sys.executable, "setup.py", "-q", "egg_info", "--egg-base", out],
                cwd=os.path.join(REPO, "python"), capture_output=True, text=True,
            )
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            (info,) = [d for d in os.listdir(out) if d.endswith(".egg-info")]
            with open(os.path.join(out, info, "PKG-INFO"), encoding="utf-8") as fh:
                fields = dict(
                    line.split(": ", 1) for line in fh.read().splitlines() if ": " in line
                )
            self.assertEqual(fields["Name"], "libgguf-zerocopy")
            self.assertEqual(fields["Version"], libgguf.__version__)
            with open(os.path.join(out, info, "top_level.txt"), encoding="utf-8") as fh:
                self.assertEqual(fh.read().split(), ["libgguf"])
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def test_bundled_library(self):
        """setup.py's build step copies the library into the package, and the package then
        finds it without LIBGGUF_PATH."""
        try:
            import setuptools  # noqa: F401
        except ImportError:
            self.skipTest("setuptools is not installed in this interpreter")
        lib = libgguf.library_path()
        out = tempfile.mkdtemp(prefix="libgguf-py-pkg-")
        try:
            env = dict(os.environ, LIBGGUF_PATH=lib)
            proc = subprocess.run(
                [sys.executable, "setup.py", "-q", "build_py", "--build-lib", out],
                cwd=os.path.join(REPO, "python"), env=env, capture_output=True, text=True,
            )
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            bundled = os.path.join(out, "libgguf", "libgguf.so")
            self.assertTrue(os.path.isfile(bundled))
            env = {k: v for k, v in os.environ.items() if k not in ("LIBGGUF_PATH", "PYTHONPATH")}
            env["PYTHONPATH"] = out
            proc = subprocess.run(
                [sys.executable, "-c", "import libgguf; print(libgguf.library_path()); "
                 f"f = libgguf.open({SAMPLE!r}); print(f.metadata['general.architecture'])"],
                cwd=out, env=env, capture_output=True, text=True,
            )
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(proc.stdout.split(), [bundled, "llama"])

            # No library anywhere: a clear error naming what was tried.
            env["LIBGGUF_PATH"] = os.path.join(out, "nowhere.so")
            proc = subprocess.run(
                [sys.executable, "-c", "import libgguf; libgguf.open('x')"],
                cwd=out, env=env, capture_output=True, text=True,
            )
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("LibraryNotFoundError", proc.stderr)
            self.assertIn("nowhere.so", proc.stderr)
        finally:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
