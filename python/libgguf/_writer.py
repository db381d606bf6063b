"""Writing: :class:`Writer`, over the C API's ``gguf_writer_*``."""

from __future__ import annotations

import ctypes
import os
import struct
from typing import Any, Sequence

from . import _convert, _native
from ._buffer import Pin
from ._convert import INT_RANGES, STRUCT, c_name, text_bytes
from ._native import DataType, ValueType
from ._strings import StringArray

__all__ = ["Writer"]

_SETTERS = {
    ValueType.UINT8: "gguf_writer_set_uint8",
    ValueType.INT8: "gguf_writer_set_int8",
    ValueType.UINT16: "gguf_writer_set_uint16",
    ValueType.INT16: "gguf_writer_set_int16",
    ValueType.UINT32: "gguf_writer_set_uint32",
    ValueType.INT32: "gguf_writer_set_int32",
    ValueType.FLOAT32: "gguf_writer_set_float32",
    ValueType.BOOL: "gguf_writer_set_bool",
    ValueType.UINT64: "gguf_writer_set_uint64",
    ValueType.INT64: "gguf_writer_set_int64",
    ValueType.FLOAT64: "gguf_writer_set_float64",
}
# Tensor data type of each numpy dtype kind+size (uint16 is ambiguous: pass dtype=BF16).
_FROM_NUMPY = {
    ("f", 4): DataType.F32,
    ("f", 2): DataType.F16,
    ("f", 8): DataType.F64,
    ("i", 1): DataType.I8,
    ("i", 2): DataType.I16,
    ("i", 4): DataType.I32,
    ("i", 8): DataType.I64,
}


# A non-NULL pointer for empty tensor data (NULL asks to stream the data later).
_EMPTY_BUFFER = ctypes.create_string_buffer(1)
_EMPTY = ctypes.addressof(_EMPTY_BUFFER)


def _key(key: str | bytes) -> bytes:
    return c_name(key, "key")


def infer_type(value: Any) -> ValueType:
    """The GGUF type :meth:`Writer.set` gives a Python value, as gguf-py does: ``bool`` ->
    BOOL, ``int`` -> INT32 (INT64, then UINT64, when it does not fit), ``float`` -> FLOAT32,
    ``str``/``bytes`` -> STRING, a list or tuple -> ARRAY."""
    if isinstance(value, bool):
        return ValueType.BOOL
    if isinstance(value, int):
        for t in (ValueType.INT32, ValueType.INT64, ValueType.UINT64):
            lo, hi = INT_RANGES[t]
            if lo <= value <= hi:
                return t
        raise OverflowError(f"libgguf: {value} does not fit in 64 bits")
    if isinstance(value, float):
        return ValueType.FLOAT32
    if isinstance(value, (str, bytes, bytearray)):
        return ValueType.STRING
    if isinstance(value, (list, tuple, StringArray)):
        return ValueType.ARRAY
    try:  # numpy scalars and arrays, without importing numpy
        kind, size = value.dtype.kind, value.dtype.itemsize
    except AttributeError:
        raise TypeError(f"libgguf: no GGUF type for {type(value).__name__}") from None
    if getattr(value, "ndim", 0):
        return ValueType.ARRAY
    return _NUMPY_SCALARS[(kind, size)]


_NUMPY_SCALARS = {
    ("u", 1): ValueType.UINT8,
    ("i", 1): ValueType.INT8,
    ("u", 2): ValueType.UINT16,
    ("i", 2): ValueType.INT16,
    ("u", 4): ValueType.UINT32,
    ("i", 4): ValueType.INT32,
    ("f", 4): ValueType.FLOAT32,
    ("b", 1): ValueType.BOOL,
    ("u", 8): ValueType.UINT64,
    ("i", 8): ValueType.INT64,
    ("f", 8): ValueType.FLOAT64,
}


def _encode(elem: ValueType, values: Sequence[Any], out: bytearray) -> None:
    """Appends ``values`` as the elements of an array of ``elem``, encoded as in a
    little-endian version-3 file (what ``gguf_writer_set_array_encoded`` reads)."""
    if elem == ValueType.STRING:
        for v in values:
            raw = text_bytes(v)
            out += struct.pack("<Q", len(raw))
            out += raw
    elif elem == ValueType.ARRAY:
        for v in values:
            inner = _element_type(v)
            out += struct.pack("<IQ", inner, len(v))
            _encode(inner, v, out)
    else:
        out += _convert.pack(elem, values, "<")


def _element_type(values: Sequence[Any]) -> ValueType:
    """The element type of an array given without one: that of its first element."""
    if hasattr(values, "dtype"):
        return _NUMPY_SCALARS[(values.dtype.kind, values.dtype.itemsize)]
    if len(values) == 0:
        raise ValueError("libgguf: give the element type of an empty array")
    return infer_type(values[0])


class Writer:
    """Builds a GGUF file: metadata of every type, tensors from bytes or numpy arrays.

    ``version`` (1, 2 or 3), ``byte_order`` (``"little"`` or ``"big"``) and ``alignment`` (a
    power of two, stored as ``general.alignment``) are fixed at construction. Tensor data is not
    copied: the writer holds each buffer until it is closed. ``Writer.from_file(f)`` starts from
    an open file (an editor: change the metadata, keep the tensors, write elsewhere).

        w = libgguf.Writer()
        w.set("general.architecture", "llama")
        w.set("llama.block_count", 32, libgguf.ValueType.UINT32)
        w.add_tensor("token_embd.weight", numpy.zeros((8, 4), numpy.float32))
        w.write_file("model.gguf")
    """

    def __init__(
        self,
        *,
        version: int = 3,
        byte_order: str = "little",
        alignment: int | None = None,
        _ptr: int | None = None,
        _source: Any = None,
    ):
        lib = _native.load()
        self._lib = lib
        self._ptr = _ptr if _ptr is not None else lib.gguf_writer_new()
        if not self._ptr:
            raise lib.error()
        self._keep: list[Any] = [_source] if _source is not None else []
        if byte_order not in ("little", "big"):
            raise ValueError("libgguf: byte_order is 'little' or 'big'")
        self.byte_order = byte_order
        if _source is None:  # from_file takes both from the file
            version = _convert.u32(version, "version")
            self._check(lib.gguf_writer_set_version(self._ptr, version))
            self._check(lib.gguf_writer_set_byte_order(self._ptr, byte_order == "big"))
        if alignment is not None:
            alignment = _convert.u32(alignment, "alignment")
            self._check(lib.gguf_writer_set_alignment(self._ptr, alignment))

    @classmethod
    def from_file(cls, file: Any) -> "Writer":
        """A writer holding everything ``file`` (a :class:`GGUFFile`) holds: metadata (less the
        ``split.*`` keys of a split model), version, byte order and every tensor, whose data is
        read from ``file`` when written. ``file`` is kept open until the writer is closed."""
        h = file._handle()
        ptr = h.lib.gguf_writer_from_file(h.ptr)
        if not ptr:
            raise h.lib.error()
        return cls(_ptr=ptr, _source=h, byte_order=file.byte_order, version=file.version)

    # Life cycle
    def close(self) -> None:
        """Frees the writer and lets go of the tensor data it held."""
        ptr, self._ptr = self._ptr, None
        if ptr:
            self._lib.gguf_writer_free(ptr)
        for k in self._keep:
            if isinstance(k, Pin):
                k.release()
        self._keep = []

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover (interpreter shutdown)
            pass

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _w(self) -> int:
        if not self._ptr:
            raise ValueError("libgguf: the writer is closed")
        return self._ptr

    def _check(self, ok: bool) -> None:
        if not ok:
            raise self._lib.error()

    # Metadata
    def set(
        self,
        key: str,
        value: Any,
        type: ValueType | None = None,
        element_type: ValueType | None = None,
    ) -> None:
        """Sets ``key`` to ``value`` (replacing an earlier value). ``type`` defaults to
        :func:`infer_type`'s choice; for an ARRAY, ``element_type`` defaults to that of the
        first element (lists inside the list make a nested array).

        Nothing is silently changed: an integer outside ``type``'s range raises
        ``OverflowError``, as does a finite float beyond FLOAT32's range (infinities and NaN
        are kept; smaller values round to the nearest FLOAT32); a non-integer for an integer
        type (``1.5``, ``"3"``) raises ``TypeError``; BOOL takes ``True``, ``False``, 0 and
        1. A key holding a NUL byte raises ``ValueError``, a key that is neither ``str`` nor
        bytes ``TypeError``."""
        if type is None:
            type = infer_type(value)
        type = ValueType(type)
        if type == ValueType.ARRAY:
            self.set_array(key, value, element_type)
        elif type == ValueType.STRING:
            self.set_string(key, value)
        else:
            k = _key(key)
            value = _convert.of_type(type, value)
            self._check(getattr(self._lib, _SETTERS[type])(self._w(), k, value))

    def set_string(self, key: str, value: str | bytes) -> None:
        """Sets ``key`` to a STRING (``str`` is written as UTF-8; ``bytes`` as they are, NUL
        bytes included)."""
        k, raw = _key(key), text_bytes(value)
        self._check(self._lib.gguf_writer_set_string(self._w(), k, raw, len(raw)))

    def set_array(
        self, key: str, values: Sequence[Any], element_type: ValueType | None = None
    ) -> None:
        """Sets ``key`` to an ARRAY of ``element_type`` (default: that of the first element; a
        numpy array's dtype). Nested arrays are lists of lists (each inner array's type is its
        first element's). Each element is checked as :meth:`set` checks a value."""
        k = _key(key)
        if element_type is None:
            element_type = _element_type(values)
        elem = ValueType(element_type)
        w = self._w()
        if elem == ValueType.STRING:
            raws = [text_bytes(v) for v in values]
            n = len(raws)
            strs = (ctypes.c_char_p * n)(*raws)
            lens = (ctypes.c_size_t * n)(*map(len, raws))
            self._check(self._lib.gguf_writer_set_string_array(w, k, strs, lens, n))
        elif elem == ValueType.ARRAY:
            out = bytearray()
            _encode(elem, values, out)
            buf = bytes(out)
            self._check(
                self._lib.gguf_writer_set_array_encoded(
                    w, k, int(elem), len(values), buf, len(buf)
                )
            )
        else:
            data = _convert.pack(elem, values, "=")
            n = len(data) // struct.calcsize(STRUCT[elem])
            self._check(self._lib.gguf_writer_set_array(w, k, int(elem), data, n))

    def remove(self, key: str) -> None:
        """Removes ``key``; raises :class:`GGUFError` (``NOT_FOUND``) if it is not set."""
        self._check(self._lib.gguf_writer_remove_key(self._w(), _key(key)))

    # Tensors
    def add_tensor(
        self,
        name: str,
        data: Any,
        *,
        dtype: DataType | int | None = None,
        shape: Sequence[int] | None = None,
    ) -> None:
        """Adds a tensor. ``data`` is a numpy array or any bytes-like object, held (not copied)
        until the writer is closed. ``dtype`` defaults to the numpy array's (float32 -> F32,
        float16 -> F16, float64 -> F64, int8/16/32/64 -> I8/I16/I32/I64); give it for BF16
        (``uint16`` bits), quantized types (raw bytes) and bytes-like data. ``shape`` is in
        GGUF order (innermost first); it defaults to the numpy shape reversed (for a ``uint8``
        array given with another ``dtype``, such as ``libgguf.quantize``'s output, its last axis
        counted in that type's elements), or to one dimension of the data's length for bytes. A numpy array in the other byte order than
        the writer's is converted (a copy). ``name`` is ``str`` or bytes without NUL bytes
        (``TypeError``, ``ValueError``); ``dtype`` and every dimension are integers in range
        (``TypeError``, ``OverflowError``)."""
        raw = c_name(name, "tensor name")
        if hasattr(data, "dtype") and hasattr(data, "shape"):
            import numpy as np

            if dtype is None:
                dtype = _FROM_NUMPY.get((data.dtype.kind, data.dtype.itemsize))
                if dtype is None:
                    raise TypeError(
                        f"libgguf: no tensor type for numpy {data.dtype}: pass dtype="
                    )
            if shape is None:
                shape = tuple(reversed(data.shape))
                if data.dtype == np.uint8 and data.ndim > 0 and dtype is not None:
                    # Bytes of another type (``libgguf.quantize``'s output, whose last axis is a
                    # row's bytes): the innermost dimension counts that type's elements.
                    shape = (self._elements(dtype, data.shape[-1]),) + shape[1:]
            if data.dtype.itemsize > 1 and data.dtype.byteorder != "|":
                want = ">" if self.byte_order == "big" else "<"
                data = data.astype(data.dtype.newbyteorder(want), copy=False)
            data = np.ascontiguousarray(data)
        else:
            if dtype is None:
                raise TypeError("libgguf: pass dtype= for tensor data given as bytes")
            if shape is None:
                shape = (len(memoryview(data).cast("B")),)
        dtype = _convert.u32(dtype, "dtype")
        shape = [_convert.u64(d, "a dimension") for d in shape]
        n_dims = _convert.u32(len(shape), "the number of dimensions")
        w = self._w()
        pin = Pin(data)
        self._keep.append(pin)
        dims = (ctypes.c_uint64 * max(n_dims, 1))(*shape)
        self._check(
            self._lib.gguf_writer_add_tensor(
                w, raw, n_dims, dims, dtype, pin.address or _EMPTY, pin.size
            )
        )

    def _elements(self, dtype: DataType | int, row_bytes: int) -> int:
        """How many elements of ``dtype`` ``row_bytes`` bytes hold (``ValueError`` unless a
        whole number of its blocks)."""
        t = _convert.u32(dtype, "dtype")
        block = self._lib.gguf_dtype_block_size(t)
        block_bytes = self._lib.gguf_dtype_block_bytes(t)
        if block == 0 or block_bytes == 0 or row_bytes % block_bytes:
            raise ValueError(
                f"libgguf: a row of {row_bytes} bytes is not a whole number of blocks of "
                f"type {int(t)} ({block_bytes} bytes each): pass shape="
            )
        return row_bytes // block_bytes * block

    # Output
    def write_file(self, path: str | bytes | os.PathLike) -> None:
        """Writes the whole file to ``path`` (a NUL byte in it raises ``ValueError``)."""
        raw = _convert.path(path)
        self._check(self._lib.gguf_writer_write_file(self._w(), raw))
