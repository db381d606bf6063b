"""Floats to tensor types: :func:`quantize`, byte for byte as ggml's ``ggml_quantize_chunk``
(the C library's ``gguf_quantize``)."""

from __future__ import annotations

import ctypes
from ctypes import c_bool, c_uint32, c_uint64, c_void_p
from typing import Any

from . import _convert
from ._native import DataType, load

__all__ = ["quantize", "quantize_requires_importance"]

_declared = False


def _lib() -> Any:
    global _declared
    lib = load()
    if not _declared:
        dll = lib.dll
        for name, restype, argtypes in (
            ("gguf_quantize", c_uint64,
             [c_uint32, c_void_p, c_uint64, c_uint64, c_void_p, c_void_p, c_uint64]),
            ("gguf_quantize_parallel", c_uint64,
             [c_uint32, c_void_p, c_uint64, c_uint64, c_void_p, c_void_p, c_uint64, c_uint32]),
            ("gguf_quantize_size", c_uint64, [c_uint32, c_uint64, c_uint64]),
            ("gguf_quantize_requires_importance", c_bool, [c_uint32]),
        ):
            fn = getattr(dll, name)
            fn.restype = restype
            fn.argtypes = argtypes
        _declared = True
    return lib


def _data_type(value: Any) -> DataType:
    if isinstance(value, str):
        try:
            return DataType[value.upper()]
        except KeyError:
            raise ValueError(f"unknown tensor type {value!r}") from None
    return DataType(int(value))


def quantize_requires_importance(type: Any) -> bool:
    """Whether quantizing to ``type`` needs importance weights (IQ2_XXS, IQ2_XS, IQ1_S)."""
    return bool(_lib().dll.gguf_quantize_requires_importance(int(_data_type(type))))


def quantize(array: Any, type: Any, importance: Any = None, threads: int = 1) -> Any:
    """Quantizes ``array`` (floats; its last axis is a row) into ``type`` (a :class:`DataType`,
    its name such as ``"Q4_K"``, or its id), byte for byte as ggml's ``ggml_quantize_chunk``
    writes it. ``importance``: ``None`` or one weight per value of a row (an importance
    matrix's column). ``threads``: how many threads share the rows (0: one per core); the bytes
    do not depend on it. Returns a ``numpy.uint8`` array shaped like ``array`` with the last axis
    replaced by the bytes of a row (as the reference ``gguf.quants.quantize`` shapes its
    output). Raises :class:`GGUFError` when the type cannot be quantized, the row is not a whole
    number of the type's blocks, or weights are needed and missing or of the wrong length.
    """
    import numpy as np

    lib = _lib()
    dll = lib.dll
    dtype = _data_type(type)
    # A uint32_t (OverflowError, TypeError otherwise): ctypes would keep the low bits, and -1
    # become 4294967295 threads.
    threads = _convert.u32(threads, "threads")
    # np.ascontiguousarray makes a scalar (and None, as NaN) one value long: the axis is
    # checked on the array as given.
    src = np.asarray(array, dtype=np.float32)
    if src.ndim == 0:
        raise ValueError("quantize needs at least one axis (a row)")
    src = np.ascontiguousarray(src)
    n_per_row = src.shape[-1]
    n_rows = src.size // n_per_row if n_per_row else 0
    imp = None
    if importance is not None:
        imp = np.ascontiguousarray(importance, dtype=np.float32).reshape(-1)
        if imp.size != n_per_row:
            raise ValueError(
                f"importance holds {imp.size} weights; a row has {n_per_row} values")
    row_bytes = dll.gguf_quantize_size(int(dtype), 1, n_per_row)
    if row_bytes == 0:
        raise lib.error()
    out = np.empty(src.shape[:-1] + (row_bytes,), dtype=np.uint8)
    if n_rows == 0:
        return out
    imp_ptr = None if imp is None else imp.ctypes.data
    if threads == 1:
        n = dll.gguf_quantize(int(dtype), src.ctypes.data, n_rows, n_per_row, imp_ptr,
                              out.ctypes.data, out.nbytes)
    else:
        n = dll.gguf_quantize_parallel(int(dtype), src.ctypes.data, n_rows, n_per_row, imp_ptr,
                                       out.ctypes.data, out.nbytes, threads)
    if n != out.nbytes:
        raise lib.error()
    return out
