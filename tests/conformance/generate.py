#!/usr/bin/env python3
"""Conformance corpus for libgguf, produced and read by the reference implementation (PyPI `gguf`).

Usage:
    generate.py generate OUTDIR COUNT SEED
        Writes COUNT random GGUF files OUTDIR/s<SEED>-<iii>.gguf with gguf.GGUFWriter, reads each back
        with gguf.GGUFReader and writes beside it a JSON sidecar (<name>.json) describing what the
        reference READER sees. Also writes OUTDIR/reference-types.json (the reference's tables of
        value types and tensor data types).
    generate.py split OUTDIR SEED
        Writes one model with gguf.GGUFWriter unsplit (OUTDIR/whole.gguf) and split three ways
        (split_max_tensors, split_max_size, small_first_shard: OUTDIR/<set>-0000i-of-0000N.gguf),
        a sidecar beside each file, and OUTDIR/split.json naming the files and the tensors of
        each shard (see split_models). Used by tests/shards.rs.
    generate.py dump FILE...
        Reads each FILE with gguf.GGUFReader and writes FILE.json, the same sidecar (used for files
        written by libgguf's own Writer).

The sidecar format (shared with tests/conformance.rs, which compares libgguf's view against it):

    {"version", "byte_order": "little"|"big", "alignment", "data_offset", "file_size",
     "kv_count", "tensor_count",
     "metadata": [{"key_hex", "value"}],          # file order
     "tensors": [{"name_hex", "n_dims", "shape", "type", "type_name", "block", "n_elements",
                  "offset", "file_offset", "n_bytes", "sha256"}]}

    value := {"type": "UINT8"|..., "value": int|bool}            integers and BOOL
           | {"type": "FLOAT32"|"FLOAT64", "bits": int}          the exact IEEE bits
           | {"type": "STRING", "hex": "..."}                    the exact bytes
           | {"type": "ARRAY", "elem": NAME, "len": n, "items": [value...]}

`shape` is in GGUF order (ne0 first), `offset` is relative to the data section, `file_offset` is
absolute, `sha256` covers the tensor's bytes as stored. Keys starting with "_" are for humans only
(decoded text, float.hex) and are ignored by the comparison.

The generator also checks that the reference reader returns exactly what the reference writer was
given, so a disagreement between the two halves of the reference shows up here, not as a libgguf
failure.

What the corpus cannot hold because of the reference itself: empty arrays (GGUFWriter raises
"Empty array") and version 2 (GGUFWriter writes 3 only), both covered instead by the files libgguf
writes (tests/conformance.rs); and, in both directions, Q8_1 tensors (KNOWN_WRONG_SIZES) and
0-dimensional tensors of the types GGUFReader reads as raw bytes (see tensor_plan). Version 1 is
out of scope: GGUFReader refuses it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import struct
import sys
from typing import Any

import numpy as np

from gguf import GGUFReader, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFEndian, GGUFValueType

logging.disable(logging.CRITICAL)

# --------------------------------------------------------------------------------------------
# Reading: what the reference reader sees, as canonical JSON.
# --------------------------------------------------------------------------------------------

INT_TYPES = {
    GGUFValueType.UINT8: (0, 2**8 - 1),
    GGUFValueType.INT8: (-(2**7), 2**7 - 1),
    GGUFValueType.UINT16: (0, 2**16 - 1),
    GGUFValueType.INT16: (-(2**15), 2**15 - 1),
    GGUFValueType.UINT32: (0, 2**32 - 1),
    GGUFValueType.INT32: (-(2**31), 2**31 - 1),
    GGUFValueType.UINT64: (0, 2**64 - 1),
    GGUFValueType.INT64: (-(2**63), 2**63 - 1),
}
FLOAT_BITS = {GGUFValueType.FLOAT32: np.uint32, GGUFValueType.FLOAT64: np.uint64}
PSEUDO_FIELDS = ("GGUF.version", "GGUF.tensor_count", "GGUF.kv_count")


def string_json(raw: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "STRING", "hex": raw.hex()}
    try:
        out["_text"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return out


def float_json(vtype: GGUFValueType, bits: int) -> dict[str, Any]:
    fmt = ("<I", "<f") if vtype == GGUFValueType.FLOAT32 else ("<Q", "<d")
    as_float = struct.unpack(fmt[1], struct.pack(fmt[0], bits))[0]
    return {"type": vtype.name, "bits": bits, "_float": as_float.hex()}


def walk(parts: list[np.ndarray], i: int, vtype: GGUFValueType) -> tuple[dict[str, Any], int]:
    """Decodes the value of type `vtype` whose first part is parts[i], the way GGUFReader laid the
    parts out (_get_field_parts). Returns the canonical value and the index of the next part."""
    if vtype == GGUFValueType.STRING:
        length, data = parts[i], parts[i + 1]
        raw = data.tobytes()
        assert len(raw) == int(length[0]), "string part length disagrees with its length field"
        return string_json(raw), i + 2
    if vtype == GGUFValueType.ARRAY:
        elem = GGUFValueType(int(parts[i][0]))
        count = int(parts[i + 1][0])
        i += 2
        items = []
        for _ in range(count):
            item, i = walk(parts, i, elem)
            items.append(item)
        return {"type": "ARRAY", "elem": elem.name, "len": count, "items": items}, i
    part = parts[i]
    assert part.shape == (1,), f"scalar part of shape {part.shape}"
    if vtype in FLOAT_BITS:
        # Reinterpret the stored bytes (in the array's own byte order): exact, NaN payloads kept.
        unsigned = np.dtype(FLOAT_BITS[vtype]).newbyteorder(part.dtype.byteorder)
        return float_json(vtype, int(part.view(unsigned)[0])), i + 1
    if vtype == GGUFValueType.BOOL:
        return {"type": "BOOL", "value": bool(part[0])}, i + 1
    return {"type": vtype.name, "value": int(part[0])}, i + 1


def same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (a != a and b != b)
    return a == b and type(a) is type(b)


def check_contents(field: Any, value: dict[str, Any]) -> None:
    """Cross-checks the parts walk against the reader's own decoding (ReaderField.contents)
    where that decoding is defined (flat arrays, UTF-8 strings)."""
    def plain(v: dict[str, Any]) -> Any:
        if v["type"] == "STRING":
            return bytes.fromhex(v["hex"]).decode("utf-8")
        if "bits" in v:
            return float.fromhex(v["_float"])
        return v["value"]

    try:
        if value["type"] == "ARRAY":
            if value["elem"] == "ARRAY":
                return  # the reader flattens nested arrays; only the parts walk describes them
            expected = [plain(x) for x in value["items"]]
        else:
            expected = plain(value)
    except UnicodeDecodeError:
        return  # contents() would fail to decode too
    got = field.contents()
    if isinstance(expected, list):
        ok = len(got) == len(expected) and all(same_scalar(a, b) for a, b in zip(got, expected))
    else:
        ok = same_scalar(got, expected)
    assert ok, f"field {field.name!r}: contents() {got!r} disagrees with its parts {expected!r}"


def describe(path: str) -> dict[str, Any]:
    reader = GGUFReader(path)
    fields = list(reader.fields.values())
    assert [f.name for f in fields[:3]] == list(PSEUDO_FIELDS), "unexpected pseudo fields"
    version = int(fields[0].parts[0][0])
    tensor_count = int(fields[1].parts[0][0])
    kv_count = int(fields[2].parts[0][0])
    metadata = []
    for field in fields[3:]:
        key = field.parts[1].tobytes()
        assert field.name == key.decode("utf-8")
        vtype = GGUFValueType(int(field.parts[2][0]))
        assert field.types and field.types[0] == vtype, f"{field.name}: types {field.types}"
        value, end = walk(field.parts, 3, vtype)
        assert end == len(field.parts), f"{field.name}: {len(field.parts) - end} parts left over"
        check_contents(field, value)
        metadata.append({"key_hex": key.hex(), "_key": field.name, "value": value})
    assert len(metadata) == kv_count, "kv count disagrees with the fields read"

    tensors = []
    for t in reader.tensors:
        name_len, name, n_dims, dims, raw_type, rel_offset = t.field.parts
        data = t.data.tobytes()  # raw bytes as stored, whatever the array's dtype/byte order
        assert len(data) == t.n_bytes, f"{t.name}: data {len(data)} bytes, n_bytes {t.n_bytes}"
        assert int(t.data_offset) == reader.data_offset + int(rel_offset[0])
        ttype = GGMLQuantizationType(int(raw_type[0]))
        assert ttype == t.tensor_type
        block, type_size = GGML_QUANT_SIZES[ttype]
        shape = [int(d) for d in t.shape]
        assert len(shape) == int(n_dims[0])
        tensors.append({
            "name_hex": name.tobytes().hex(),
            "_name": t.name,
            "n_dims": int(n_dims[0]),
            "shape": shape,
            "type": int(ttype),
            "type_name": ttype.name,
            "block": [int(block), int(type_size)],
            "n_elements": int(t.n_elements),
            "offset": int(rel_offset[0]),
            "file_offset": int(t.data_offset),
            "n_bytes": int(t.n_bytes),
            "sha256": hashlib.sha256(data).hexdigest(),
        })
    assert len(tensors) == tensor_count, "tensor count disagrees with the tensors read"

    return {
        "file": os.path.basename(path),
        "version": version,
        "byte_order": "big" if reader.endianess == GGUFEndian.BIG else "little",
        "alignment": int(reader.alignment),
        "data_offset": int(reader.data_offset),
        "file_size": int(reader.data.shape[0]),
        "kv_count": kv_count,
        "tensor_count": tensor_count,
        "metadata": metadata,
        "tensors": tensors,
    }


def strip(value: Any) -> Any:
    """`value` without its human-only fields (keys starting with "_")."""
    if isinstance(value, dict):
        return {k: strip(x) for k, x in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [strip(x) for x in value]
    return value


def write_json(path: str, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False, allow_nan=False)
        f.write("\n")


def reference_types() -> dict[str, Any]:
    return {
        "value_types": {str(int(t)): t.name for t in GGUFValueType},
        "data_types": {
            str(int(t)): [t.name, int(GGML_QUANT_SIZES[t][0]), int(GGML_QUANT_SIZES[t][1])]
            for t in GGMLQuantizationType
        },
    }


# --------------------------------------------------------------------------------------------
# Writing: random files through GGUFWriter, with what was written kept as canonical JSON.
# --------------------------------------------------------------------------------------------

SPECIAL_F32 = [0.0, -0.0, 1.0, -1.5, float("inf"), float("-inf"), float("nan"),
               3.4028234663852886e38, 1.1754943508222875e-38, 1.401298464324817e-45, 0.1]
SPECIAL_F64 = [0.0, -0.0, 1.0, -2.25, float("inf"), float("-inf"), float("nan"),
               1.7976931348623157e308, 2.2250738585072014e-308, 5e-324, 0.1]
TEXT_SAMPLES = ["hello", "héllo wörld", "日本語のテキスト", "emoji 🦙🚀", "tab\tnew\nline",
                "quote\"back\\slash", "nul\x00inside", " ", "Ωmega", "a" * 300]
NON_UTF8 = [b"\xff\xfe", b"abc\x80def", b"\xc3(", b"\x00\x01\x02\xff", b"\xed\xa0\x80"]
STRUCT_FMT = {
    GGUFValueType.UINT8: "B", GGUFValueType.INT8: "b", GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h", GGUFValueType.UINT32: "I", GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f", GGUFValueType.UINT64: "Q", GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}
SCALAR_TYPES = [t for t in GGUFValueType if t not in (GGUFValueType.STRING, GGUFValueType.ARRAY)]
PLAIN_DTYPES = {  # GGUFWriter infers these from the numpy dtype
    GGMLQuantizationType.F32: np.float32, GGMLQuantizationType.F16: np.float16,
    GGMLQuantizationType.F64: np.float64, GGMLQuantizationType.I8: np.int8,
    GGMLQuantizationType.I16: np.int16, GGMLQuantizationType.I32: np.int32,
    GGMLQuantizationType.I64: np.int64,
}


def random_int(rng: random.Random, vtype: GGUFValueType) -> int:
    lo, hi = INT_TYPES[vtype]
    r = rng.random()
    if r < 0.15:
        return lo
    if r < 0.3:
        return hi
    if r < 0.4:
        return 0
    if r < 0.6:
        return rng.randint(max(lo, -100), min(hi, 100))
    return rng.randint(lo, hi)


def random_float(rng: random.Random, vtype: GGUFValueType) -> float:
    specials = SPECIAL_F32 if vtype == GGUFValueType.FLOAT32 else SPECIAL_F64
    if rng.random() < 0.4:
        return rng.choice(specials)
    return rng.uniform(-1e6, 1e6) * 10.0 ** rng.randint(-30, 30)


def random_string(rng: random.Random, allow_bytes: bool = True) -> str | bytes:
    r = rng.random()
    if r < 0.1:
        return ""
    if r < 0.2 and allow_bytes:
        return rng.choice(NON_UTF8)
    if r < 0.55:
        return rng.choice(TEXT_SAMPLES)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 _.-éßжλ中🙂"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))


def encode_scalar(vtype: GGUFValueType, value: Any) -> dict[str, Any]:
    """The canonical JSON of what GGUFWriter stores for `value` (floats rounded as struct packs
    them; the bits do not depend on the byte order)."""
    if vtype == GGUFValueType.STRING:
        return string_json(value.encode("utf-8") if isinstance(value, str) else bytes(value))
    if vtype == GGUFValueType.BOOL:
        return {"type": "BOOL", "value": bool(value)}
    if vtype in FLOAT_BITS:
        fmt, ufmt = (("<f", "<I") if vtype == GGUFValueType.FLOAT32 else ("<d", "<Q"))
        bits = struct.unpack(ufmt, struct.pack(fmt, value))[0]
        return float_json(vtype, bits)
    return {"type": vtype.name, "value": int(value)}


def random_scalar(rng: random.Random, vtype: GGUFValueType) -> Any:
    if vtype == GGUFValueType.BOOL:
        return rng.random() < 0.5
    if vtype in FLOAT_BITS:
        return random_float(rng, vtype)
    if vtype == GGUFValueType.STRING:
        return random_string(rng)
    return random_int(rng, vtype)


def random_nested(rng: random.Random, depth: int) -> tuple[Any, dict[str, Any]]:
    """A non-empty inner array for GGUFWriter, which infers the element type of inner arrays from
    their first item: str -> STRING, float -> FLOAT32, bool -> BOOL, int -> INT32,
    list -> ARRAY; a `bytes` object is a UINT8 array, but only directly inside the top-level
    array (deeper, get_type() calls bytes a STRING and mixing it with lists fails). Inner arrays
    cannot be empty."""
    kinds = ["str", "float", "bool", "int"] + (["bytes"] if depth == 1 else [])
    kind = rng.choice(kinds + (["list"] if depth < 3 else []))
    n = rng.randint(1, 4)
    if kind == "bytes":
        raw = bytes(rng.randrange(256) for _ in range(n))
        return raw, {"type": "ARRAY", "elem": "UINT8", "len": n,
                     "items": [{"type": "UINT8", "value": b} for b in raw]}
    if kind == "list":
        pairs = [random_nested(rng, depth + 1) for _ in range(n)]
        return [p[0] for p in pairs], {"type": "ARRAY", "elem": "ARRAY", "len": n,
                                       "items": [p[1] for p in pairs]}
    vtype = {"str": GGUFValueType.STRING, "float": GGUFValueType.FLOAT32,
             "bool": GGUFValueType.BOOL, "int": GGUFValueType.INT32}[kind]
    if kind == "str":
        values: list[Any] = [random_string(rng, allow_bytes=False) for _ in range(n)]
    elif kind == "float":
        values = [random_float(rng, GGUFValueType.FLOAT32) for _ in range(n)]
    else:
        values = [random_scalar(rng, vtype) for _ in range(n)]
    return values, {"type": "ARRAY", "elem": vtype.name, "len": n,
                    "items": [encode_scalar(vtype, v) for v in values]}


def tensor_plan(rng: random.Random, ttype: GGMLQuantizationType) -> tuple[np.ndarray, dict]:
    """Random tensor data of type `ttype`: returns the numpy array handed to GGUFWriter and the
    GGUF shape (ne0 first)."""
    block, type_size = GGML_QUANT_SIZES[ttype]
    r = rng.random()
    # 0 dimensions only for the types GGUFReader maps to a numpy dtype: for any other type
    # (BF16 included) it computes a byte shape from shape[-1] and fails with IndexError on a
    # 0-dimensional tensor, which ggml reads as a single element (a reference limitation).
    n_dims = 0 if (r < 0.05 and ttype in PLAIN_DTYPES) else rng.randint(1, 4)
    if block == 1:
        ne0 = rng.randint(1, 33)
    else:
        ne0 = block * rng.randint(1, 3 if block <= 64 else 2)
    dims = [ne0] + [rng.randint(1, 3) for _ in range(max(n_dims - 1, 0))]
    dims = dims[:n_dims]
    if n_dims >= 2 and rng.random() < 0.08:
        dims[rng.randrange(1, n_dims)] = 0  # an empty tensor
    np_shape = tuple(reversed(dims))
    n = int(np.prod(dims)) if dims else 1
    if ttype in PLAIN_DTYPES:
        dt = np.dtype(PLAIN_DTYPES[ttype])
        raw = np.frombuffer(rng.randbytes(n * dt.itemsize), dtype=dt).copy()
        if ttype == GGMLQuantizationType.F32 and n:
            specials = np.array(SPECIAL_F32, dtype=np.float32)
            raw[: min(n, len(specials))] = specials[: min(n, len(specials))]
        return raw.reshape(np_shape), {"raw_dtype": None, "shape": dims}
    if ttype == GGMLQuantizationType.BF16:
        raw = np.frombuffer(rng.randbytes(n * 2), dtype=np.uint16).copy()
        return raw.reshape(np_shape), {"raw_dtype": ttype, "shape": dims}
    # Quantized: raw bytes, numpy shape with the last axis in bytes.
    byte_shape = np_shape[:-1] + (np_shape[-1] // block * type_size,)
    nbytes = int(np.prod(byte_shape))
    raw = np.frombuffer(rng.randbytes(nbytes), dtype=np.uint8).copy()
    return raw.reshape(byte_shape), {"raw_dtype": ttype, "shape": dims}


# Types whose size in the reference's GGML_QUANT_SIZES is known to disagree with ggml (and with
# libgguf): a tensor of such a type written by GGUFWriter is not a valid ggml tensor, so none is
# generated while the reference still has the wrong size. Q8_1: gguf-py 0.19.0 says 32 elements
# in 4 + 4 + 32 = 40 bytes (two f32 scales, an old layout); ggml's block_q8_1 is two ggml_half
# plus 32 int8 = 36 bytes. tests/conformance.rs checks this list against the reference's table.
KNOWN_WRONG_SIZES = {GGMLQuantizationType.Q8_1: (32, 40)}
ALL_TTYPES = [t for t in GGMLQuantizationType
              if KNOWN_WRONG_SIZES.get(t) != tuple(GGML_QUANT_SIZES[t])]


def generate_one(path: str, seed: int, index: int) -> None:
    rng = random.Random(f"{seed}/{index}")
    big = rng.random() < 0.25
    endian = GGUFEndian.BIG if big else GGUFEndian.LITTLE
    arch = rng.choice(["llama", "qwen2", "", "ärch-ü", "gpt2"])
    writer = GGUFWriter(path, arch, endianess=endian)

    expected_kv: dict[str, dict[str, Any]] = {}
    if arch:
        expected_kv["general.architecture"] = string_json(arch.encode("utf-8"))

    entries: list[tuple[str, Any, GGUFValueType, GGUFValueType | None, dict[str, Any]]] = []
    names: set[str] = {"general.architecture", "general.alignment"}

    def key(stem: str) -> str:
        while True:
            prefix = rng.choice(["general", "llama", "tokenizer.ggml", "тест", "模型", "x"])
            k = f"{prefix}.{stem}.{rng.randrange(10**6)}"
            if rng.random() < 0.05:
                k += "." + "k" * rng.randint(100, 400)
            if k not in names:
                names.add(k)
                return k

    # Every scalar type, one or more times.
    for vtype in SCALAR_TYPES + [GGUFValueType.STRING]:
        for _ in range(rng.randint(1, 2)):
            v = random_scalar(rng, vtype)
            entries.append((key(vtype.name.lower()), v, vtype, None, encode_scalar(vtype, v)))
    entries.append((key("empty_string"), "", GGUFValueType.STRING, None,
                    encode_scalar(GGUFValueType.STRING, "")))
    entries.append((key("bytes_string"), rng.choice(NON_UTF8), GGUFValueType.STRING, None, None))
    # Arrays of every element type (GGUFWriter refuses empty arrays).
    for elem in SCALAR_TYPES + [GGUFValueType.STRING]:
        n = rng.choice([1, 2, 3, 7, 16, rng.randint(1, 64)])
        if rng.random() < 0.05:
            n = rng.randint(200, 1000)
        values = [random_scalar(rng, elem) for _ in range(n)]
        items = [encode_scalar(elem, v) for v in values]
        entries.append((key("arr_" + elem.name.lower()), values, GGUFValueType.ARRAY, elem,
                        {"type": "ARRAY", "elem": elem.name, "len": n, "items": items}))
    # Nested arrays.
    for _ in range(rng.randint(1, 3)):
        n = rng.randint(1, 4)
        pairs = [random_nested(rng, 1) for _ in range(n)]
        entries.append((key("nested"), [p[0] for p in pairs], GGUFValueType.ARRAY,
                        GGUFValueType.ARRAY,
                        {"type": "ARRAY", "elem": "ARRAY", "len": n,
                         "items": [p[1] for p in pairs]}))
    rng.shuffle(entries)

    alignment = None
    if rng.random() < 0.4:
        alignment = rng.choice([1, 2, 4, 8, 16, 64, 128, 256, 1024, 4096])
    align_at = rng.randint(0, len(entries))

    for i, (k, v, vtype, sub, exp) in enumerate(entries):
        if alignment is not None and i == align_at:
            writer.add_custom_alignment(alignment)
            expected_kv["general.alignment"] = {"type": "UINT32", "value": alignment}
        writer.add_key_value(k, v, vtype, sub_type=sub)
        expected_kv[k] = exp if exp is not None else string_json(v)
    if alignment is not None and align_at == len(entries):
        writer.add_custom_alignment(alignment)
        expected_kv["general.alignment"] = {"type": "UINT32", "value": alignment}

    # Tensors: the first three of file i rotate through every type (so 40 files cover them all),
    # the rest are random picks.
    n_tensors = rng.choice([0, 1, 3, 5, 8, 12])
    expected_tensors = []
    tnames: set[str] = set()
    for j in range(n_tensors):
        ttype = ALL_TTYPES[(index * 7 + j) % len(ALL_TTYPES)] if j < 3 else rng.choice(ALL_TTYPES)
        data, plan = tensor_plan(rng, ttype)
        while True:
            stem = rng.choice(["blk", "token_embd", "output", "тензор", "层"])
            tname = f"{stem}.{rng.randrange(10**5)}.weight"
            if tname not in tnames:
                tnames.add(tname)
                break
        writer.add_tensor(tname, data, raw_dtype=plan["raw_dtype"])
        stored = data.byteswap() if (big and data.dtype.itemsize > 1) else data
        expected_tensors.append({"name": tname, "shape": plan["shape"], "type": int(ttype),
                                 "sha256": hashlib.sha256(stored.tobytes()).hexdigest()})

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    # What the reference reader sees must be what the reference writer was given.
    seen = describe(path)
    got_kv = {bytes.fromhex(m["key_hex"]).decode("utf-8"): m["value"] for m in seen["metadata"]}
    assert list(got_kv) == list(expected_kv), \
        f"{path}: key order {list(got_kv)} != {list(expected_kv)}"
    for k, v in expected_kv.items():
        assert strip(got_kv[k]) == strip(v), f"{path}: key {k}: read {got_kv[k]} != written {v}"
    assert seen["version"] == 3
    assert seen["byte_order"] == ("big" if big else "little")
    assert seen["alignment"] == (alignment or 32)
    assert len(seen["tensors"]) == len(expected_tensors)
    for t, e in zip(seen["tensors"], expected_tensors):
        got = (bytes.fromhex(t["name_hex"]).decode("utf-8"), t["shape"], t["type"], t["sha256"])
        want = (e["name"], e["shape"], e["type"], e["sha256"])
        assert got == want, f"{path}: tensor read {got} != written {want}"
        assert t["file_offset"] % seen["alignment"] == 0
    write_json(path[: -len(".gguf")] + ".json", seen)


# --------------------------------------------------------------------------------------------
# Split models: GGUFWriter's split_max_tensors / split_max_size / small_first_shard.
# --------------------------------------------------------------------------------------------

SPLIT_TYPES = [GGMLQuantizationType.F32, GGMLQuantizationType.F16, GGMLQuantizationType.I8,
               GGMLQuantizationType.I32, GGMLQuantizationType.Q4_0, GGMLQuantizationType.Q8_0,
               GGMLQuantizationType.Q4_K, GGMLQuantizationType.BF16, GGMLQuantizationType.Q6_K]
# name -> GGUFWriter's split arguments. "whole" is the same model unsplit.
SPLIT_SETS = {
    "whole": {},
    "bytensors": {"split_max_tensors": 4},
    "bysize": {"split_max_size": 60000},
    "smallfirst": {"split_max_tensors": 6, "small_first_shard": True},
}


def split_models(outdir: str, seed: int) -> None:
    """One model of 17 tensors written by GGUFWriter unsplit (whole.gguf) and split three ways
    (SPLIT_SETS: <set>-<i>-of-<n>.gguf); a sidecar per file (what GGUFReader sees) and
    split.json: {"sets": {set: {"files": [...], "shards": [[tensor names of each file]]}},
    "metadata": [[key, type name]...] (the model's own keys, in order), "tensors": [{"name",
    "shape", "type", "sha256"}]} (the model's tensors in order)."""
    rng = random.Random(f"split/{seed}")
    tensors = []
    for j in range(17):
        ttype = SPLIT_TYPES[j % len(SPLIT_TYPES)]
        if j in (3, 11):  # two larger F32 tensors, so that the size limit splits unevenly
            rows, cols = 96, 200
            data = np.frombuffer(rng.randbytes(rows * cols * 4), dtype=np.float32).copy()
            data, raw_dtype = data.reshape(rows, cols), None
            shape = [cols, rows]
            ttype = GGMLQuantizationType.F32
        else:
            data, plan = tensor_plan(rng, ttype)
            raw_dtype, shape = plan["raw_dtype"], plan["shape"]
        tensors.append((f"blk.{j}.weight", data, raw_dtype, {
            "name": f"blk.{j}.weight", "shape": shape, "type": int(ttype),
            "sha256": hashlib.sha256(data.tobytes()).hexdigest()}))

    manifest: dict[str, Any] = {"sets": {}, "tensors": [t[3] for t in tensors]}
    for set_name, split_args in SPLIT_SETS.items():
        path = os.path.join(outdir, set_name + ".gguf")
        writer = GGUFWriter(path, "llama", **split_args)
        writer.add_name("split reference model")
        writer.add_uint32("test.u32", 7)
        writer.add_string("test.string", "héllo")
        writer.add_array("tokenizer.ggml.tokens", ["<s>", "a", "", "</s>"])
        writer.add_array("test.floats", [0.5, -1.5, 3.25])
        writer.add_context_length(4096)
        for name, data, raw_dtype, _ in tensors:
            writer.add_tensor(name, data, raw_dtype=raw_dtype)
        shards = [list(t.keys()) for t in writer.tensors]  # the writer's own split
        files = [p.name for p in writer.format_shard_names(writer.path)]
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        assert (len(files) == 1) == (set_name == "whole"), f"{set_name}: {files}"

        # What the reference reader sees of each file is what the writer was given.
        total = len(tensors)
        for no, (file, names) in enumerate(zip(files, shards)):
            seen = describe(os.path.join(outdir, file))
            got = [bytes.fromhex(t["name_hex"]).decode("utf-8") for t in seen["tensors"]]
            assert got == names, f"{file}: tensors {got} != {names}"
            keys = {bytes.fromhex(m["key_hex"]).decode("utf-8"): m["value"]
                    for m in seen["metadata"]}
            if len(files) > 1:
                assert keys["split.no"] == {"type": "UINT16", "value": no}, keys["split.no"]
                assert keys["split.count"] == {"type": "UINT16", "value": len(files)}
                assert keys["split.tensors.count"] == {"type": "INT32", "value": total}
                assert (no == 0) == ("general.name" in keys), f"{file}: {list(keys)}"
            write_json(os.path.join(outdir, file[: -len(".gguf")] + ".json"), seen)
        if set_name == "whole":
            manifest["metadata"] = [[bytes.fromhex(m["key_hex"]).decode("utf-8"),
                                     m["value"]["type"]] for m in seen["metadata"]]
        manifest["sets"][set_name] = {"files": files, "shards": shards}
    write_json(os.path.join(outdir, "split.json"), manifest)


def main(argv: list[str]) -> int:
    if len(argv) == 5 and argv[1] == "generate":
        outdir, count, seed = argv[2], int(argv[3]), int(argv[4])
        os.makedirs(outdir, exist_ok=True)
        write_json(os.path.join(outdir, "reference-types.json"), reference_types())
        for i in range(count):
            generate_one(os.path.join(outdir, f"s{seed}-{i:03d}.gguf"), seed, i)
        return 0
    if len(argv) == 4 and argv[1] == "split":
        outdir, seed = argv[2], int(argv[3])
        os.makedirs(outdir, exist_ok=True)
        split_models(outdir, seed)
        return 0
    if len(argv) >= 3 and argv[1] == "dump":
        for path in argv[2:]:
            write_json(path + ".json", describe(path))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
