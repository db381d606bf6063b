"""Python values turned into C arguments, refused rather than silently changed.

ctypes converts without complaint: a ``bytes`` argument passed as ``char *`` ends at its first
NUL byte, ``bytes(123)`` is 123 NUL bytes, and an integer is wrapped to the width of its C type
(300 as ``uint8_t`` is 44). Every value the package hands to the C library goes through one of
these functions first, so what the library receives is exactly what the caller gave:

- a NUL byte in a path, key or name raises ``ValueError`` (Python's own ``open`` does the same);
- a key or name that is neither ``str`` nor bytes-like raises ``TypeError``;
- an integer outside its C type's range raises ``OverflowError``; a non-integer where an integer
  is expected (``1.5``, ``"3"``) raises ``TypeError`` instead of being truncated or parsed;
- a finite float beyond FLOAT32's range raises ``OverflowError`` rather than becoming infinity.
"""

from __future__ import annotations

import operator
import os
import struct
from typing import Any

from ._native import ValueType

#: The range of each integer value type (and of the C integer types, by bit width).
INT_RANGES = {
    ValueType.UINT8: (0, 2**8 - 1),
    ValueType.INT8: (-(2**7), 2**7 - 1),
    ValueType.UINT16: (0, 2**16 - 1),
    ValueType.INT16: (-(2**15), 2**15 - 1),
    ValueType.UINT32: (0, 2**32 - 1),
    ValueType.INT32: (-(2**31), 2**31 - 1),
    ValueType.UINT64: (0, 2**64 - 1),
    ValueType.INT64: (-(2**63), 2**63 - 1),
}
#: The ``struct`` format character of each fixed-size value type.
STRUCT = {
    ValueType.UINT8: "B",
    ValueType.INT8: "b",
    ValueType.UINT16: "H",
    ValueType.INT16: "h",
    ValueType.UINT32: "I",
    ValueType.INT32: "i",
    ValueType.FLOAT32: "f",
    ValueType.BOOL: "?",
    ValueType.UINT64: "Q",
    ValueType.INT64: "q",
    ValueType.FLOAT64: "d",
}
_I32 = INT_RANGES[ValueType.INT32]
_U32 = INT_RANGES[ValueType.UINT32]
_U64 = INT_RANGES[ValueType.UINT64]
_F32 = struct.Struct("<f")


def path(value: Any) -> bytes:
    """A file system path (``str``, ``bytes`` or ``os.PathLike``) as the bytes ``open(2)``
    receives."""
    raw = os.fsencode(value)  # TypeError for anything else
    if b"\0" in raw:
        raise ValueError(f"libgguf: embedded null byte in path {value!r}")
    return raw


def name_bytes(value: Any, what: str) -> bytes:
    """A key or tensor name as bytes: ``str`` as UTF-8, bytes-like objects as they are. NUL
    bytes are kept (for lookups that compare whole names)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"libgguf: a {what} is str or bytes, not {type(value).__name__}")


def c_name(value: Any, what: str) -> bytes:
    """A key or tensor name for a C call that takes a NUL-terminated string."""
    raw = name_bytes(value, what)
    if b"\0" in raw:
        raise ValueError(f"libgguf: the {what} {value!r} holds a NUL byte")
    return raw


def text(raw: bytes) -> str | bytes:
    """A STRING value read from a file: ``str`` when it is valid UTF-8, else the bytes
    themselves."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def text_bytes(value: Any, what: str = "string value") -> bytes:
    """A STRING value as bytes (``str`` as UTF-8); NUL bytes are data (the C calls take the
    length)."""
    return name_bytes(value, what)


def integer(value: Any, lo: int, hi: int, what: str) -> int:
    """``value`` as an ``int`` in ``lo..=hi``: ``operator.index`` (so ``bool`` and numpy
    integers pass, ``1.5`` and ``"3"`` do not), then the range."""
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(
            f"libgguf: {what} must be an integer, not {type(value).__name__}"
        ) from None
    if not lo <= n <= hi:
        raise OverflowError(f"libgguf: {what} {n} is outside {lo}..{hi}")
    return n


def i32(value: Any, what: str) -> int:
    return integer(value, *_I32, what)


def u32(value: Any, what: str) -> int:
    return integer(value, *_U32, what)


def u64(value: Any, what: str) -> int:
    return integer(value, *_U64, what)


def of_type(vtype: ValueType, value: Any) -> Any:
    """A scalar of value type ``vtype`` (not STRING or ARRAY) as the Python object ctypes or
    ``struct`` receives for it, checked as the module docstring says."""
    bounds = INT_RANGES.get(vtype)
    if bounds is not None:
        return integer(value, *bounds, f"a {vtype.name} value")
    if vtype == ValueType.BOOL:
        return boolean(value)
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"libgguf: a {vtype.name} value is a number, not {type(value).__name__}")
    x = float(value)  # OverflowError for an int beyond a double
    if vtype == ValueType.FLOAT32:
        try:
            _F32.pack(x)  # refuses a finite value beyond FLOAT32 (inf and nan pass)
        except OverflowError:
            raise OverflowError(f"libgguf: a FLOAT32 value {x!r} is beyond FLOAT32's range") from None
    return x


def boolean(value: Any) -> bool:
    """A BOOL: ``True``/``False`` (Python's, numpy's) or the integers 0 and 1; any other value
    would be silently true."""
    if isinstance(value, bool):
        return value
    if getattr(getattr(value, "dtype", None), "kind", None) == "b":  # numpy.bool_
        return bool(value)
    return integer(value, 0, 1, "a BOOL value") == 1


def pack(vtype: ValueType, values: Any, order: str) -> bytes:
    """The elements of an array of ``vtype`` (a sequence or numpy array), each checked as
    :func:`of_type` does, packed in byte order ``order`` (a ``struct`` prefix)."""
    if hasattr(values, "tolist"):  # numpy: Python ints and floats, whatever the dtype
        values = values.tolist()
    fmt = f"{order}{len(values)}{STRUCT[vtype]}"
    if vtype != ValueType.BOOL:  # struct packs any object as '?', as true or false
        # struct refuses what of_type refuses (out of range, floats as integers, strings as
        # numbers), in one call; its errors name no element, so a refusal is redone below.
        try:
            return struct.pack(fmt, *values)
        except (struct.error, OverflowError, TypeError):
            pass
    checked = []
    for i, v in enumerate(values):
        try:
            checked.append(of_type(vtype, v))
        except (TypeError, OverflowError) as e:
            why = str(e)
            why = why[len("libgguf: ") :] if why.startswith("libgguf: ") else why
            raise type(e)(f"libgguf: element {i}: {why}") from None
    return struct.pack(fmt, *checked)
