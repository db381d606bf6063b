"""libgguf: a zero-copy GGUF reader and writer, over the C library ``libgguf.so``.

    import libgguf

    with libgguf.open("model.gguf") as f:
        print(f.version, f.metadata["general.architecture"])
        tokens = f.metadata["tokenizer.ggml.tokens"]        # a StringArray: decoded as read
        t = f.tensor("token_embd.weight")
        print(t.shape, t.dtype_name, t.size)               # GGUF order: ne[0] first
        raw = t.data                                       # read-only memoryview of the mapping
        arr = t.numpy()                                    # zero-copy, shape ne[n-1], ..., ne[0]

Everything is read by the C library through ``ctypes``; tensor data is never copied. The
library is found through ``$LIBGGUF_PATH``, the copy bundled by ``pip install``, a checkout's
``target/release`` or ``target/debug``, or the system's search path (see
:func:`library_path`). numpy is used when installed (``Tensor.numpy``, ``Metadata.numpy``).
"""

from ._file import (
    MAX_DEFAULT_THREADS,
    PARALLEL_MIN_ELEMENTS,
    Field,
    GGUFFile,
    MemoryEstimate,
    Metadata,
    Placement,
    Shard,
    Tensor,
    UploadPlan,
    View,
    default_threads,
    open,
    open_memory,
)
from ._native import (
    ByteOrder,
    DataType,
    ErrorCode,
    GGUFError,
    GGUFFileNotFoundError,
    GGUFIsADirectoryError,
    GGUFNotADirectoryError,
    GGUFOSError,
    GGUFPermissionError,
    LibraryNotFoundError,
    Paging,
    ValueType,
    library_path,
    library_version,
)
from ._chat import ChatTemplate, FileChatTemplate, render_chat_template
from ._quantize import quantize, quantize_requires_importance
from ._strings import StringArray
from ._tokenizer import Tokenizer
from ._writer import Writer, infer_type

__version__ = "0.1.0"

__all__ = [
    "ChatTemplate",
    "FileChatTemplate",
    "render_chat_template",
    "ByteOrder",
    "DataType",
    "ErrorCode",
    "Field",
    "GGUFError",
    "GGUFFile",
    "GGUFFileNotFoundError",
    "GGUFIsADirectoryError",
    "GGUFNotADirectoryError",
    "GGUFOSError",
    "GGUFPermissionError",
    "LibraryNotFoundError",
    "MAX_DEFAULT_THREADS",
    "MemoryEstimate",
    "Metadata",
    "PARALLEL_MIN_ELEMENTS",
    "Paging",
    "Placement",
    "Shard",
    "StringArray",
    "Tokenizer",
    "Tensor",
    "UploadPlan",
    "ValueType",
    "View",
    "Writer",
    "default_threads",
    "infer_type",
    "library_path",
    "library_version",
    "open",
    "open_memory",
    "quantize",
    "quantize_requires_importance",
]
