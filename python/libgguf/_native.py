"""The C library: finding and loading ``libgguf``, the C types of ``include/gguf.h``, and errors.

Everything here mirrors ``include/gguf.h``; the layouts of the structures are checked against
the Rust definitions by ``tests/python.rs`` (``GGUF_FFI_LAYOUT``).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import enum
import os
import sys
import threading
from typing import Any
from ctypes import (
    POINTER,
    Structure,
    Union,
    c_bool,
    c_char_p,
    c_double,
    c_float,
    c_int8,
    c_int16,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)

__all__ = [
    "ByteOrder",
    "DataType",
    "ErrorCode",
    "GGUFError",
    "GGUFFileNotFoundError",
    "GGUFIsADirectoryError",
    "GGUFNotADirectoryError",
    "GGUFOSError",
    "GGUFPermissionError",
    "LibraryNotFoundError",
    "Paging",
    "ValueType",
    "library_path",
    "library_version",
    "load",
]

# --------------------------------------------------------------------------------------------
# Enumerations (GGUFValueType, GGUFDataType, GGUFErrorCode in gguf.h)
# --------------------------------------------------------------------------------------------


class _NamedIntEnum(enum.IntEnum):
    """An ``IntEnum`` that prints as its name, ``ValueType.UINT32``: since Python 3.11
    ``str()`` and f-strings of an ``IntEnum`` give the bare number. Numeric formats (``f"{t:d}"``,
    ``:x``) still give the number, and ``int(t)`` and comparisons with ints are unchanged."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, spec: str) -> str:
        if spec and spec[-1] in "bcdoxXneEfFgG%":
            return int.__format__(int(self), spec)
        return format(str(self), spec)


class ValueType(_NamedIntEnum):
    """The type of a metadata value (``GGUFValueType``)."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


class DataType(_NamedIntEnum):
    """The data type of a tensor (``GGUFDataType``, ggml's ``ggml_type``)."""

    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39
    NVFP4 = 40
    Q1_0 = 41
    Q2_0 = 42


class ErrorCode(_NamedIntEnum):
    """Why an operation failed (``GGUFErrorCode``); the numbers are stable."""

    NONE = 0
    IO = 1
    NULL_ARGUMENT = 2
    INVALID_ARGUMENT = 3
    NOT_FOUND = 4
    WRONG_TYPE = 5
    OUT_OF_MEMORY = 6
    INTERNAL = 7
    UNSUPPORTED = 8
    CANCELLED = 9
    TRUNCATED = 10
    BAD_MAGIC = 11
    UNSUPPORTED_VERSION = 12
    TENSOR_COUNT_TOO_LARGE = 13
    KEY_COUNT_TOO_LARGE = 14
    STRING_TOO_LONG = 15
    EMPTY_KEY = 20
    DUPLICATE_KEY = 21
    BAD_VALUE_TYPE = 22
    ARRAY_TOO_LONG = 23
    ARRAY_TOO_DEEP = 24
    BAD_BOOL = 25
    BAD_ALIGNMENT = 26
    DUPLICATE_TENSOR = 30
    TOO_MANY_DIMS = 31
    SIZE_OVERFLOW = 32
    BAD_DATA_TYPE = 33
    BAD_BLOCK_MULTIPLE = 34
    MISALIGNED_OFFSET = 35
    DATA_OUT_OF_BOUNDS = 36
    DATA_OVERLAP = 37
    BAD_VALUE = 38
    SHARD_MISMATCH = 40
    TEMPLATE_SYNTAX = 50
    TEMPLATE_RENDER = 51
    TEMPLATE_LIMIT = 52
    BAD_REQUEST = 53


class ByteOrder(_NamedIntEnum):
    """Byte order of a file's numbers (``GGUFByteOrder``)."""

    LITTLE = 0
    BIG = 1


class Paging(_NamedIntEnum):
    """Paging advice for mapped bytes (``GGUFPaging``, ``madvise``)."""

    NORMAL = 0
    WILL_NEED = 1
    DONT_NEED = 2
    SEQUENTIAL = 3
    RANDOM = 4


OPEN_FLAG_POPULATE = 1
OPEN_FLAG_LOCK = 2
OPEN_FLAG_READ = 4
OPEN_FLAG_SINGLE_SHARD = 8
OPEN_FLAG_NO_MAP = 16
READ_FLAG_DIRECT = 1
NO_VIEW = 0xFFFF_FFFF_FFFF_FFFF
UINT64_MAX = 0xFFFF_FFFF_FFFF_FFFF

# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class GGUFError(Exception):
    """A failure reported by libgguf.

    ``code`` is an :class:`ErrorCode` (a plain ``int`` for a code this package does not know),
    ``offset`` the byte offset in the file the error concerns (``None`` when it concerns no
    particular byte), ``message`` the library's message, e.g.
    ``gguf: model.gguf: offset 1024: tensor 'x' data ends at 9437216, past the end of the file``.
    """

    def __init__(self, code: int, offset: int | None, message: str):
        try:
            code = ErrorCode(code)
        except ValueError:
            pass
        super().__init__(code, offset, message)
        self.code = code
        self.offset = offset
        self.message = message

    def __str__(self) -> str:
        return self.message


class GGUFOSError(GGUFError, OSError):
    """A file could not be opened: a :class:`GGUFError` (code ``IO``) that is also the
    ``OSError`` Python's own ``open`` raises for the same path, with ``errno``, ``strerror``
    and ``filename`` (the path as given, ``os.fspath`` of a path-like object). The subclasses
    are also the matching built-in ``OSError`` subclasses: ``FileNotFoundError``,
    ``PermissionError``, ``IsADirectoryError``, ``NotADirectoryError``."""

    def __init__(
        self,
        code: int,
        offset: int | None,
        message: str,
        errno: int | None = None,
        strerror: str | None = None,
        filename: object = None,
    ):
        # OSError.__init__ (reached through GGUFError's) reads (code, offset, message) as
        # (errno, strerror, filename) and keeps two in args: every field is set again below.
        GGUFError.__init__(self, code, offset, message)
        self.args = (self.code, offset, message)
        self.errno = errno
        self.strerror = strerror
        self.filename = filename

    def __reduce__(self):  # OSError's would rebuild it from (errno, strerror, filename)
        args = (self.code, self.offset, self.message, self.errno, self.strerror, self.filename)
        return type(self), args, self.__dict__ or None

    def __str__(self) -> str:
        return self.message


class GGUFFileNotFoundError(GGUFOSError, FileNotFoundError):
    """The file (or a directory on its path) does not exist (``ENOENT``)."""


class GGUFPermissionError(GGUFOSError, PermissionError):
    """The file may not be read (``EACCES``, ``EPERM``)."""


class GGUFIsADirectoryError(GGUFOSError, IsADirectoryError):
    """The path names a directory (``EISDIR``)."""


class GGUFNotADirectoryError(GGUFOSError, NotADirectoryError):
    """A component of the path is not a directory (``ENOTDIR``)."""


_OS_ERRORS = {
    FileNotFoundError: GGUFFileNotFoundError,
    PermissionError: GGUFPermissionError,
    IsADirectoryError: GGUFIsADirectoryError,
    NotADirectoryError: GGUFNotADirectoryError,
}


def os_error(e: OSError, path: bytes, filename: object) -> GGUFOSError:
    """The exception for an ``OSError`` met opening ``path``: the class matching ``e``'s (a
    :class:`GGUFOSError` for other errno values), with the library's kind of message."""
    shown = printable(path.decode("utf-8", "backslashreplace"))
    why = e.strerror or os.strerror(e.errno or 0)
    cls = _OS_ERRORS.get(type(e), GGUFOSError)
    return cls(
        ErrorCode.IO, None, f"gguf: {shown}: cannot open the file: {why}", e.errno, why, filename
    )


def printable(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN`` (as the library's messages show
    them), so that a name cannot drive the terminal it is printed on."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 0x100 else ascii(c)[1:-1]
        for c in text
    )


class LibraryNotFoundError(ImportError):
    """libgguf's shared library could not be found or loaded (see :func:`library_path`)."""


# --------------------------------------------------------------------------------------------
# C structures
# --------------------------------------------------------------------------------------------


class GGUFValue(Union):
    _fields_ = [
        ("u8", c_uint8),
        ("i8", c_int8),
        ("u16", c_uint16),
        ("i16", c_int16),
        ("u32", c_uint32),
        ("i32", c_int32),
        ("f32", c_float),
        ("u64", c_uint64),
        ("i64", c_int64),
        ("f64", c_double),
        ("b", c_bool),
        ("str", c_void_p),
    ]


class GGUFMetadataKV(Structure):
    _fields_ = [
        ("key", c_void_p),
        ("type", c_uint32),
        ("value", GGUFValue),
        ("array_len", c_uint64),
        ("array_data", c_void_p),
        ("key_len", c_uint64),
        ("str_len", c_uint64),
        ("array_type", c_uint32),
        ("array_bytes", c_uint64),
        ("index", c_uint64),
    ]


class GGUFString(Structure):
    _fields_ = [("data", c_void_p), ("len", c_uint64)]


class GGUFArray(Structure):
    _fields_ = [("elem_type", c_uint32), ("count", c_uint64), ("data", c_void_p)]


class GGUFTensorInfo(Structure):
    _fields_ = [
        ("name", c_void_p),
        ("n_elements", c_uint64),
        ("n_dims", c_uint32),
        ("dims", c_uint64 * 4),
        ("offset", c_uint64),
        ("dtype", c_uint32),
        ("size_bytes", c_uint64),
        ("file_offset", c_uint64),
        ("name_len", c_uint64),
        ("index", c_uint64),
        ("shard", c_uint32),
    ]


class GGUFView(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("size", c_uint64),
        ("file_offset", c_uint64),
        ("shard", c_uint32),
    ]


class GGUFPlacement(Structure):
    _fields_ = [("view", c_uint64), ("offset", c_uint64)]


class GGUFUploadPlan(Structure):
    _fields_ = [
        ("page_size", c_uint64),
        ("max_view_size", c_uint64),
        ("n_views", c_uint64),
        ("views", c_void_p),
        ("n_tensors", c_uint64),
        ("placements", c_void_p),
        ("n_oversized", c_uint64),
    ]


class GGUFShardInfo(Structure):
    _fields_ = [
        ("path", c_void_p),
        ("file_size", c_uint64),
        ("data_offset", c_uint64),
        ("alignment", c_uint64),
        ("version", c_uint32),
        ("tensor_count", c_uint64),
        ("first_tensor", c_uint64),
        ("base", c_void_p),
    ]


class GGUFUrlOptions(Structure):
    _fields_ = [
        ("bearer_token", c_char_p),
        ("timeout_ms", c_uint32),
        ("max_redirects", c_uint32),
        ("deadline_ms", c_uint32),
    ]


class GGUFSpecialTokens(Structure):
    _fields_ = [
        (name, c_int32)
        for name in (
            "bos", "eos", "eot", "eom", "unk", "sep", "pad", "mask", "nl",
            "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep",
        )
    ] + [("add_bos", c_bool), ("add_eos", c_bool)]


class GGUFMemoryParams(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("n_ctx", c_uint32),
        ("n_batch", c_uint32),
        ("n_ubatch", c_uint32),
        ("n_seq_max", c_uint32),
        ("type_k", c_uint32),
        ("type_v", c_uint32),
        ("flash_attn", c_int32),
        ("n_gpu_layers", c_int32),
        ("swa_full", c_bool),
        ("kv_unified", c_bool),
        ("offload_kqv", c_bool),
    ]


class GGUFMemoryEstimate(Structure):
    _fields_ = [("size", c_size_t)] + [
        (name, c_uint64)
        for name in ("weights", "k", "v", "recurrent", "output", "compute", "total")
    ] + [
        (name, c_uint32) for name in ("n_ctx", "n_ctx_seq", "n_ctx_swa", "n_ubatch")
    ] + [("cpu", c_uint64), ("gpu", c_uint64), ("weights_mapped", c_uint64)]


#: The structures above by their C names (for the layout check in the tests).
STRUCTS = {
    "GGUFMemoryParams": GGUFMemoryParams,
    "GGUFMemoryEstimate": GGUFMemoryEstimate,
    "GGUFSpecialTokens": GGUFSpecialTokens,
    "GGUFValue": GGUFValue,
    "GGUFMetadataKV": GGUFMetadataKV,
    "GGUFString": GGUFString,
    "GGUFArray": GGUFArray,
    "GGUFTensorInfo": GGUFTensorInfo,
    "GGUFView": GGUFView,
    "GGUFPlacement": GGUFPlacement,
    "GGUFUploadPlan": GGUFUploadPlan,
    "GGUFShardInfo": GGUFShardInfo,
    "GGUFUrlOptions": GGUFUrlOptions,
}

# Element type of each fixed-size array value type, and its typed getter in the C API.
ARRAY_GETTERS = {
    ValueType.UINT8: ("gguf_get_uint8_array", c_uint8),
    ValueType.INT8: ("gguf_get_int8_array", c_int8),
    ValueType.UINT16: ("gguf_get_uint16_array", c_uint16),
    ValueType.INT16: ("gguf_get_int16_array", c_int16),
    ValueType.UINT32: ("gguf_get_uint32_array", c_uint32),
    ValueType.INT32: ("gguf_get_int32_array", c_int32),
    ValueType.FLOAT32: ("gguf_get_float_array", c_float),
    ValueType.BOOL: ("gguf_get_bool_array", c_bool),
    ValueType.UINT64: ("gguf_get_uint64_array", c_uint64),
    ValueType.INT64: ("gguf_get_int64_array", c_int64),
    ValueType.FLOAT64: ("gguf_get_float64_array", c_double),
}

_u64p = POINTER(c_uint64)
_FILE = c_void_p
#: ``GGUFReadFn`` and ``GGUFProgressFn`` (``gguf_open_reader``, ``gguf_read_tensors``).
READ_FN = ctypes.CFUNCTYPE(ctypes.c_int64, c_void_p, c_uint64, c_void_p, c_uint64)
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_bool, c_void_p, c_uint64, c_uint64)
_WRITER = c_void_p

# name: (restype, argtypes)
_PROTOTYPES = {
    "gguf_library_version": (c_char_p, []),
    "gguf_last_error_code": (c_uint32, []),
    "gguf_last_error": (c_void_p, []),
    "gguf_last_error_offset": (c_int64, []),
    "gguf_clear_error": (None, []),
    "gguf_open": (_FILE, [c_char_p]),
    "gguf_open_ex": (_FILE, [c_char_p, c_uint32]),
    "gguf_open_memory": (_FILE, [c_void_p, c_size_t]),
    "gguf_open_fd": (_FILE, [ctypes.c_int32, c_uint64, c_uint64, c_uint32]),
    "gguf_open_reader": (_FILE, [READ_FN, c_void_p, c_uint64, c_uint32]),
    "gguf_open_url_ex": (_FILE, [c_char_p, POINTER(GGUFUrlOptions), c_uint32]),
    "gguf_open_url_with": (_FILE, [c_char_p, POINTER(GGUFUrlOptions), c_size_t, c_uint32]),
    "gguf_is_mapped": (ctypes.c_bool, [_FILE]),
    "gguf_read_tensor": (ctypes.c_bool, [_FILE, c_void_p, c_uint64, c_void_p, c_uint64]),
    "gguf_read_tensors": (
        ctypes.c_bool,
        [_FILE, c_void_p, c_void_p, c_uint64, c_uint32, c_uint32, PROGRESS_FN, c_void_p],
    ),
    "gguf_close": (None, [_FILE]),
    "gguf_tokenizer_open": (c_void_p, [_FILE]),
    "gguf_chat_render_template": (
        c_int64,
        [c_char_p, c_uint64, c_char_p, c_uint64, c_char_p, c_uint64, c_uint32],
    ),
    "gguf_chat_render": (
        c_int64,
        [_FILE, c_char_p, c_char_p, c_uint64, c_char_p, c_uint64, c_uint32],
    ),
    "gguf_chat_template_count": (c_uint64, [_FILE]),
    "gguf_chat_template_name": (c_char_p, [_FILE, c_uint64]),
    "gguf_chat_template_compile": (c_void_p, [c_char_p, c_uint64]),
    "gguf_chat_template_render": (
        c_int64,
        [c_void_p, c_char_p, c_uint64, c_char_p, c_uint64, c_uint32],
    ),
    "gguf_chat_template_free": (None, [c_void_p]),
    "gguf_memory_params_default": (GGUFMemoryParams, []),
    "gguf_memory_estimate": (
        c_bool,
        [_FILE, POINTER(GGUFMemoryParams), POINTER(GGUFMemoryEstimate)],
    ),
    "gguf_tokenizer_close": (None, [c_void_p]),
    "gguf_tokenizer_n_tokens": (c_int32, [c_void_p]),
    "gguf_tokenizer_special_tokens": (c_bool, [c_void_p, POINTER(GGUFSpecialTokens)]),
    "gguf_token_is_eog": (c_bool, [c_void_p, c_int32]),
    "gguf_tokenize": (c_int64, [c_void_p, c_char_p, c_uint64, POINTER(c_int32), c_uint64, c_uint32]),
    "gguf_detokenize": (c_int64, [c_void_p, POINTER(c_int32), c_uint64, c_char_p, c_uint64, c_uint32]),
    "gguf_token_to_piece": (c_int64, [c_void_p, c_int32, c_char_p, c_uint64, c_uint32]),
    "gguf_version": (c_uint32, [_FILE]),
    "gguf_alignment": (c_uint64, [_FILE]),
    "gguf_data_offset": (c_uint64, [_FILE]),
    "gguf_file_size": (c_uint64, [_FILE]),
    "gguf_byte_order": (c_uint32, [_FILE]),
    "gguf_metadata_count": (c_uint64, [_FILE]),
    "gguf_get_metadata": (c_void_p, [_FILE, c_char_p]),
    "gguf_get_metadata_by_index": (c_void_p, [_FILE, c_uint64]),
    "gguf_get_string_array": (c_void_p, [_FILE, c_char_p, _u64p]),
    "gguf_get_array_string": (c_void_p, [_FILE, c_char_p, c_uint64, _u64p]),
    "gguf_get_nested_array": (c_bool, [_FILE, c_uint64, _u64p, c_uint64, POINTER(GGUFArray)]),
    "gguf_tensor_count": (c_uint64, [_FILE]),
    "gguf_get_tensor": (c_void_p, [_FILE, c_char_p]),
    "gguf_get_tensor_by_index": (c_void_p, [_FILE, c_uint64]),
    "gguf_tensor_data": (c_void_p, [_FILE, c_void_p]),
    "gguf_tensor_to_float": (c_bool, [_FILE, c_void_p, c_uint64, c_uint64, c_void_p]),
    "gguf_tensor_to_float_parallel": (
        c_bool,
        [_FILE, c_void_p, c_uint64, c_uint64, c_void_p, c_uint32],
    ),
    "gguf_dequantize": (c_bool, [c_uint32, c_void_p, c_uint64, c_void_p]),
    "gguf_validate_tensor": (c_bool, [_FILE, c_void_p]),
    "gguf_dtype_name": (c_char_p, [c_uint32]),
    "gguf_dtype_block_size": (c_uint64, [c_uint32]),
    "gguf_dtype_block_bytes": (c_uint64, [c_uint32]),
    "gguf_value_type_name": (c_char_p, [c_uint32]),
    "gguf_plan_upload": (c_void_p, [_FILE, c_uint64, c_uint64]),
    "gguf_shard_count": (c_uint32, [_FILE]),
    "gguf_get_shard": (c_void_p, [_FILE, c_uint32]),
    "gguf_contains": (c_bool, [_FILE, c_void_p, c_uint64]),
    "gguf_advise_tensor": (c_bool, [_FILE, c_void_p, c_uint32]),
    "gguf_advise_data": (c_bool, [_FILE, c_uint32]),
    # The writer.
    "gguf_writer_new": (_WRITER, []),
    "gguf_writer_from_file": (_WRITER, [_FILE]),
    "gguf_writer_free": (None, [_WRITER]),
    "gguf_writer_set_version": (c_bool, [_WRITER, c_uint32]),
    "gguf_writer_set_byte_order": (c_bool, [_WRITER, c_uint32]),
    "gguf_writer_set_alignment": (c_bool, [_WRITER, c_uint32]),
    "gguf_writer_set_uint8": (c_bool, [_WRITER, c_char_p, c_uint8]),
    "gguf_writer_set_int8": (c_bool, [_WRITER, c_char_p, c_int8]),
    "gguf_writer_set_uint16": (c_bool, [_WRITER, c_char_p, c_uint16]),
    "gguf_writer_set_int16": (c_bool, [_WRITER, c_char_p, c_int16]),
    "gguf_writer_set_uint32": (c_bool, [_WRITER, c_char_p, c_uint32]),
    "gguf_writer_set_int32": (c_bool, [_WRITER, c_char_p, c_int32]),
    "gguf_writer_set_float32": (c_bool, [_WRITER, c_char_p, c_float]),
    "gguf_writer_set_bool": (c_bool, [_WRITER, c_char_p, c_bool]),
    "gguf_writer_set_uint64": (c_bool, [_WRITER, c_char_p, c_uint64]),
    "gguf_writer_set_int64": (c_bool, [_WRITER, c_char_p, c_int64]),
    "gguf_writer_set_float64": (c_bool, [_WRITER, c_char_p, c_double]),
    "gguf_writer_set_string": (c_bool, [_WRITER, c_char_p, c_void_p, c_size_t]),
    "gguf_writer_set_array": (c_bool, [_WRITER, c_char_p, c_uint32, c_void_p, c_uint64]),
    "gguf_writer_set_string_array": (
        c_bool,
        [_WRITER, c_char_p, c_void_p, c_void_p, c_uint64],
    ),
    "gguf_writer_set_array_encoded": (
        c_bool,
        [_WRITER, c_char_p, c_uint32, c_uint64, c_void_p, c_size_t],
    ),
    "gguf_writer_remove_key": (c_bool, [_WRITER, c_char_p]),
    "gguf_writer_add_tensor": (
        c_bool,
        [_WRITER, c_char_p, c_uint32, c_void_p, c_uint32, c_void_p, c_uint64],
    ),
    "gguf_writer_write_file": (c_bool, [_WRITER, c_char_p]),
}
for _name, _ctype in ARRAY_GETTERS.values():
    _PROTOTYPES[_name] = (c_void_p, [_FILE, c_char_p, _u64p])

# --------------------------------------------------------------------------------------------
# Finding and loading the library
# --------------------------------------------------------------------------------------------

if sys.platform == "darwin":
    LIBRARY_FILE = "libgguf.dylib"
elif sys.platform == "win32":
    LIBRARY_FILE = "gguf.dll"
else:
    LIBRARY_FILE = "libgguf.so"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _checkout_root() -> str | None:
    """The repository root when this package runs from a checkout (``<repo>/python/libgguf``)."""
    root = os.path.dirname(os.path.dirname(_PACKAGE_DIR))
    if os.path.isfile(os.path.join(root, "Cargo.toml")) and os.path.isfile(
        os.path.join(root, "include", "gguf.h")
    ):
        return root
    return None


def candidates() -> list[tuple[str, str]]:
    """Where the library is looked for, in order, as ``(how, path)`` pairs.

    1. ``$LIBGGUF_PATH`` (the library file, or a directory holding it): when set, nothing else
       is tried;
    2. the copy bundled inside this package by ``pip install`` (``libgguf/libgguf.so``);
    3. in a checkout of the repository: ``$CARGO_TARGET_DIR`` or ``target``, ``release`` then
       ``debug``;
    4. ``ctypes.util.find_library("gguf")`` (the system's search path).
    """
    env = os.environ.get("LIBGGUF_PATH")
    if env:
        path = os.path.join(env, LIBRARY_FILE) if os.path.isdir(env) else env
        return [("$LIBGGUF_PATH", path)]
    found = [("bundled", os.path.join(_PACKAGE_DIR, LIBRARY_FILE))]
    root = _checkout_root()
    if root is not None:
        target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(root, "target")
        target = os.path.join(root, target)  # relative to the root; no-op when absolute
        for profile in ("release", "debug"):
            found.append(("checkout", os.path.join(target, profile, LIBRARY_FILE)))
    system = ctypes.util.find_library("gguf")
    if system:
        found.append(("system", system))
    return found


class _Library:
    """The loaded library with every prototype declared."""

    def __init__(self, path: str, dll: ctypes.CDLL):
        self.path = path
        self.dll = dll
        missing = []
        for name, (restype, argtypes) in _PROTOTYPES.items():
            try:
                fn = getattr(dll, name)
            except AttributeError:
                missing.append(name)
                continue
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)
        if missing:
            raise LibraryNotFoundError(
                f"libgguf: {path} lacks {', '.join(missing)}: it is older than this package "
                f"(rebuild it with `cargo build --release --lib`, or point LIBGGUF_PATH at a "
                f"current build)"
            )
        self.version = dll.gguf_library_version().decode("ascii", "replace")

    def error(self) -> GGUFError:
        """The calling thread's last error, as an exception."""
        code = self.gguf_last_error_code()
        offset = self.gguf_last_error_offset()
        msg = ctypes.string_at(self.gguf_last_error()).decode("utf-8", "replace")
        if not msg:
            msg = f"gguf: error {code}"
        return GGUFError(code, None if offset < 0 else offset, msg)


class _Gated:
    """The library, for a handle whose calls may call back into Python (a file object read
    through ``gguf_open_reader``): every ``gguf_*`` call runs inside :func:`calls_back`."""

    def __init__(self, lib: _Library):
        self._lib = lib

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._lib, name)
        if not name.startswith("gguf_"):
            return attr

        def gated(*args: Any) -> Any:
            _refused.flag = False
            with calls_back():
                result = attr(*args)
            if _refused.flag:  # a callback of this call was refused: the call failed for it
                raise exit_error()
            return result

        return gated


# Callbacks at interpreter exit. A thread that takes the GIL back once the interpreter is
# finalizing is ended by Python with pthread_exit, whose forced unwinding aborts the process
# ("FATAL: exception not rethrown") when it meets the library's frames below a callback. So no
# library call that may call back is left running when finalization starts: at exit (atexit
# handlers run before it), new ones are refused, callbacks already running are interrupted and
# fail, callbacks not yet started fail at once, and the exit waits for the calls to return.
_gate = threading.Condition(threading.Lock())
_exiting = False
_calls = 0
_callback_threads: dict[int, int] = {}
#: How long the exit waits for calls to return (a callback blocked in a system call cannot be
#: interrupted; it is left to the process's end).
EXIT_WAIT = 5.0


def exiting() -> bool:
    """Whether the interpreter is exiting: callbacks then fail at once."""
    return _exiting or sys.is_finalizing()


#: Whether a callback on this thread was refused because the interpreter is exiting.
_refused = threading.local()


def refuse() -> SystemExit:
    """For a callback that refuses to run at exit: marks the thread's call as failed for that
    reason and returns what the call raises."""
    _refused.flag = True
    return exit_error()


def exit_error() -> SystemExit:
    """What a call refused at exit raises: ``SystemExit``, which ends a thread without a
    traceback, as the exit would."""
    return SystemExit("libgguf: the interpreter is exiting: calls into Python are refused")


@contextlib.contextmanager
def calls_back() -> Any:
    """Around a library call that may call back into Python: refused once the interpreter is
    exiting, and waited for by the exit."""
    global _calls
    with _gate:
        if exiting():
            raise exit_error()
        _calls += 1
    try:
        yield
    finally:
        with _gate:
            _calls -= 1
            _gate.notify_all()


@contextlib.contextmanager
def in_callback() -> Any:
    """Around a callback's Python code: at exit, the thread is interrupted there (an exception
    raised in it, which the callback turns into a failure)."""
    ident = threading.get_ident()
    with _gate:
        _callback_threads[ident] = _callback_threads.get(ident, 0) + 1
    try:
        yield
    finally:
        with _gate:
            left = _callback_threads.pop(ident) - 1
            if left:
                _callback_threads[ident] = left
            elif _exiting:
                # An interruption not yet delivered must not land outside the callback.
                _set_async_exc(ident, None)


_RAISE_IN = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
_CLEAR_IN = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


def _set_async_exc(ident: int, exc: Any) -> None:
    """Raises ``exc`` in thread ``ident`` at its next bytecode (``None``: clears a pending one)."""
    if exc is None:
        _CLEAR_IN(ident, None)
    else:
        _RAISE_IN(ident, exc)


@atexit.register
def _at_exit() -> None:
    global _exiting
    with _gate:
        _exiting = True
        for ident in _callback_threads:
            # SystemExit itself: a thread it ends is ended without a traceback.
            _set_async_exc(ident, SystemExit)
        _gate.wait_for(lambda: _calls == 0, timeout=EXIT_WAIT)


_loaded: _Library | None = None
_lock = threading.Lock()


def load() -> _Library:
    """Loads the library (once per process) and returns it; raises
    :class:`LibraryNotFoundError` naming every place tried."""
    global _loaded
    lib = _loaded
    if lib is not None:
        return lib
    with _lock:
        if _loaded is not None:
            return _loaded
        tried = []
        for how, path in candidates():
            if how != "system" and not os.path.isfile(path):
                tried.append(f"{how}: {path} (no such file)")
                continue
            try:
                dll = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{how}: {path} ({e})")
                continue
            _loaded = _Library(path, dll)
            return _loaded
        raise LibraryNotFoundError(
            "libgguf: cannot find the shared library "
            f"{LIBRARY_FILE}. Install the package with `pip install ./python` (which builds "
            "it), build it with `cargo build --release --lib` in the repository, or set "
            "LIBGGUF_PATH to the library file. Tried:\n  " + "\n  ".join(tried)
        )


def library_path() -> str:
    """The path of the shared library in use (loading it if needed)."""
    return load().path


def library_version() -> str:
    """The version of the loaded shared library, e.g. ``"0.1.0"``."""
    return load().version
