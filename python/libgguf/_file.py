"""Reading: :func:`open`, :func:`open_memory` and the objects they hand out."""

from __future__ import annotations

import ctypes
import errno
import mmap
import operator
import os
import stat
import weakref
from collections.abc import Mapping
from ctypes import byref, c_uint64, c_void_p
from typing import Any, Iterator, NamedTuple

from . import _convert, _native
from ._buffer import Pin, readonly_view
from ._strings import StringArray
from ._native import (
    ARRAY_GETTERS,
    NO_VIEW,
    UINT64_MAX,
    DataType,
    GGUFArray,
    GGUFError,
    GGUFMemoryEstimate,
    GGUFMemoryParams,
    GGUFMetadataKV,
    GGUFShardInfo,
    GGUFString,
    GGUFTensorInfo,
    GGUFUploadPlan,
    GGUFView,
    GGUFPlacement,
    ValueType,
)

__all__ = [
    "MAX_DEFAULT_THREADS",
    "PARALLEL_MIN_ELEMENTS",
    "Field",
    "GGUFFile",
    "MemoryEstimate",
    "Metadata",
    "Placement",
    "Shard",
    "Tensor",
    "UploadPlan",
    "View",
    "default_threads",
    "open",
    "open_memory",
]

_text = _convert.text


_np: Any = None  # numpy, once imported
_F32: Any = None  # numpy.dtype(numpy.float32)


def _numpy():
    global _np, _F32
    if _np is None:
        try:
            import numpy
        except ImportError as e:  # pragma: no cover (numpy is optional)
            raise ImportError("libgguf: this needs numpy (pip install numpy)") from e
        _F32 = numpy.dtype(numpy.float32)
        _np = numpy
    return _np


#: Fewest output elements (4 MiB of floats) for which ``to_numpy_float`` uses several threads by
#: default: below it, starting threads costs about what they would save.
PARALLEL_MIN_ELEMENTS = 1 << 20
#: Most threads ``to_numpy_float`` uses by default (as ``gguf_read_tensors`` does): past about
#: this many, memory bandwidth rather than cores bounds the simple types.
MAX_DEFAULT_THREADS = 8


def default_threads() -> int:
    """Threads ``to_numpy_float`` uses for a large tensor by default: the CPUs this process may
    run on (``os.sched_getaffinity``, else ``os.cpu_count()``), at most
    :data:`MAX_DEFAULT_THREADS`."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover (macOS, Windows)
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_DEFAULT_THREADS))


class _Handle:
    """Owns a C handle. ``gguf_close`` runs when the last reference goes: the :class:`GGUFFile`
    (until :meth:`GGUFFile.close`) and every buffer of the file's memory handed out, so a
    ``memoryview`` or numpy array of tensor data never outlives the mapping."""

    __slots__ = ("ptr", "lib", "lent", "__weakref__")

    def __init__(self, lib: Any, ptr: int, pin: Any, lent: bool = False):
        self.ptr = ptr
        # A handle read through a file object calls back into Python from its calls.
        self.lib = _native._Gated(lib) if isinstance(pin, _FileReader) else lib
        # Whether the file's bytes are the caller's memory (`open_memory`), which a writable
        # array could alias; a mapping or the library's own buffers cannot be.
        self.lent = lent
        fin = weakref.finalize(self, _close, lib, ptr, pin)
        fin.atexit = False  # at exit the process unmaps everything anyway


def _close(lib: Any, ptr: int, pin: Pin | None) -> None:
    lib.gguf_close(ptr)
    if pin is not None:
        pin.release()


# --------------------------------------------------------------------------------------------
# Opening
# --------------------------------------------------------------------------------------------


def open(
    path: Any,
    *,
    offset: int | None = None,
    length: int = 0,
    populate: bool = False,
    lock: bool = False,
    read: bool = False,
    single_shard: bool = False,
    no_map: bool = False,
    token: str | None = None,
    timeout: float | None = None,
) -> "GGUFFile":
    """Opens a GGUF file: maps it read-only and checks every rule of the format
    (``gguf_open_ex``). Tensor data is neither read nor copied.

    ``path`` is a path; or a file descriptor with its offset (a tuple ``(fd, offset)`` or
    ``(fd, offset, length)``, or ``fd`` with ``offset=`` and optionally ``length=``; a bare
    ``int`` is refused with ``TypeError``, as it is not a path), for a model
    stored inside another file, which is duplicated (``gguf_open_fd``: the caller may close
    ``fd``); or a seekable binary file object (``io.BufferedReader``, a zip member, an fsspec
    file), read through ``gguf_open_reader``: only the header is read, and tensor data is then
    read with :meth:`GGUFFile.read_tensor` / :meth:`GGUFFile.read_tensors` (``Tensor.data``
    raises). ``no_map`` opens a path or descriptor without mapping it, the same way.

    ``path`` may also be an ``http://`` or ``https://`` URL (``gguf_open_url_ex``): only the
    header is downloaded, by range requests, and tensor data is read by ranges with
    :meth:`GGUFFile.read_tensor` / :meth:`GGUFFile.read_tensors`. ``token`` is sent as the bearer
    token (gated models), ``timeout`` (seconds, default 30) bounds every wait for the server. A
    shard's URL opens every shard of a split model by URL. HTTPS trusts the system's roots
    (``SSL_CERT_FILE`` names others).

    ``populate`` faults every page in up front (``MAP_POPULATE``), ``lock`` locks the pages in
    memory (``mlock``; fails when ``ulimit -l`` forbids), ``read`` reads the file into private
    memory instead of mapping it, ``single_shard`` opens one shard of a split model
    (``name-00002-of-00005.gguf``) alone; by default every shard is opened and the file presents
    the whole model. Raises :class:`GGUFError` (with the code, byte offset and message) when the
    file cannot be opened or breaks a rule; when it cannot be opened at all, the error is also
    the ``OSError`` Python's ``open`` would raise (:class:`GGUFOSError`: ``FileNotFoundError``,
    ``PermissionError``, ``IsADirectoryError``, ... with ``errno`` and ``filename``). A NUL
    byte in ``path`` raises ``ValueError``.
    """
    lib = _native.load()
    flags = (
        (_native.OPEN_FLAG_POPULATE if populate else 0)
        | (_native.OPEN_FLAG_LOCK if lock else 0)
        | (_native.OPEN_FLAG_READ if read else 0)
        | (_native.OPEN_FLAG_SINGLE_SHARD if single_shard else 0)
        | (_native.OPEN_FLAG_NO_MAP if no_map else 0)
    )
    if isinstance(path, tuple):
        if not 2 <= len(path) <= 3 or offset is not None:
            raise TypeError("a descriptor is given as (fd, offset) or (fd, offset, length)")
        path, offset, *rest = path
        length = rest[0] if rest else length
    if isinstance(path, int) and not isinstance(path, bool) and offset is not None:
        return _open_fd(lib, path, offset, length, flags)
    if isinstance(path, str) and path.startswith(("http://", "https://")):
        return _open_url(lib, path, token, timeout, flags)
    if token is not None or timeout is not None:
        raise TypeError("token= and timeout= apply to a URL")
    if offset is not None:
        raise TypeError("offset= applies to a file descriptor")
    if not isinstance(path, (str, bytes, os.PathLike)) and hasattr(path, "seek"):
        return _open_reader(lib, path, flags)
    raw = _convert.path(path)
    _refuse_unopenable(raw, os.fspath(path))
    ptr = lib.gguf_open_ex(raw, flags)
    if not ptr:
        raise lib.error()
    return GGUFFile(_Handle(lib, ptr, None), os.fspath(path))


def _open_url(
    lib: Any, url: str, token: str | None, timeout: float | None, flags: int
) -> "GGUFFile":
    options = _native.GGUFUrlOptions()
    if token is not None:
        options.bearer_token = _convert.c_name(token, "token")
    if timeout is not None:
        ms = round(timeout * 1000)
        if not 1 <= ms <= 0xFFFFFFFF:
            raise ValueError(f"timeout={timeout!r} s is outside 0.001 to 4294967.295 s")
        options.timeout_ms = ms
    ptr = lib.gguf_open_url_ex(_convert.c_name(url, "URL"), ctypes.byref(options), flags)
    if not ptr:
        raise lib.error()
    return GGUFFile(_Handle(lib, ptr, None), url)


def _open_fd(lib: Any, fd: int, offset: int, length: int, flags: int) -> "GGUFFile":
    # An ``int`` in C: anything outside its range would be wrapped into another descriptor.
    fd = _convert.integer(fd, -(2**31), 2**31 - 1, "file descriptor")
    ptr = lib.gguf_open_fd(
        fd, _convert.u64(offset, "offset"), _convert.u64(length, "length"), flags
    )
    if not ptr:
        raise lib.error()
    name = f"file descriptor {fd}" + (f" at offset {offset}" if offset else "")
    return GGUFFile(_Handle(lib, ptr, None), name)


class _FileReader:
    """A seekable binary file object as a ``GGUFReadFn``; kept alive (with its C callback) by
    the handle, whose ``release`` runs at ``gguf_close``."""

    def __init__(self, f: Any):
        self.f = f
        self.error: BaseException | None = None
        self.callback = _native.READ_FN(self._read)

    def _read(self, _user: Any, offset: int, dst: int, size: int) -> int:
        if _native.exiting():
            self.error = _native.refuse()
            return -1
        with _native.in_callback():
            try:
                return self._fill(offset, dst, size)
            except BaseException as e:  # noqa: BLE001 (reported as the call's cause)
                # Interrupted at exit (or failing then): the call ends its thread.
                self.error = _native.refuse() if _native.exiting() else e
                return -1

    def _fill(self, offset: int, dst: int, size: int) -> int:
        """Reads up to ``size`` bytes at ``offset`` into ``dst``; fewer only at the end. A file
        object that answers what a blocking binary file cannot (``None``, a negative count,
        more than asked, not an integer) raises, failing the call."""
        f = self.f
        f.seek(offset)
        out = (ctypes.c_char * size).from_address(dst)
        view = memoryview(out).cast("B")
        done = 0
        readinto = getattr(f, "readinto", None)
        name = type(f).__name__
        while done < size:
            asked = size - done
            if readinto is not None:
                n = readinto(view[done:])
                if n is None:
                    raise BlockingIOError(
                        f"libgguf: {name}.readinto returned None (no data without blocking): "
                        "a file object read by the library must block"
                    )
                try:
                    n = operator.index(n)
                except TypeError:
                    raise TypeError(
                        f"libgguf: {name}.readinto returned {type(n).__name__}, not a count"
                    ) from None
                if not 0 <= n <= asked:
                    raise ValueError(
                        f"libgguf: {name}.readinto returned {n} when asked for {asked} bytes"
                    )
            else:
                chunk = f.read(asked)
                if chunk is None:
                    raise BlockingIOError(
                        f"libgguf: {name}.read returned None (no data without blocking): "
                        "a file object read by the library must block"
                    )
                chunk = memoryview(chunk).cast("B")
                n = chunk.nbytes
                if n > asked:
                    raise ValueError(
                        f"libgguf: {name}.read returned {n} bytes when asked for {asked}"
                    )
                view[done : done + n] = chunk
            if not n:
                break
            done += n
        return done

    def release(self) -> None:
        self.f = None


def _open_reader(lib: Any, f: Any, flags: int) -> "GGUFFile":
    size = f.seek(0, os.SEEK_END)
    reader = _FileReader(f)
    with _native.calls_back():
        ptr = lib.gguf_open_reader(reader.callback, None, _convert.u64(size, "size"), flags)
    if not ptr:
        if reader.error is not None and not isinstance(reader.error, Exception):
            raise reader.error  # KeyboardInterrupt, SystemExit: not turned into a GGUFError
        raise lib.error() from reader.error
    name = getattr(f, "name", None)
    return GGUFFile(_Handle(lib, ptr, reader), name if isinstance(name, str) else "<reader>")


_PROBE_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block here (the library refuses it)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _refuse_unopenable(raw: bytes, filename: Any) -> None:
    """Raises the :class:`GGUFOSError` for a path that cannot be opened for reading, or that
    names a directory.

    The C API reports such failures as code ``IO`` with a message, without ``errno``; so the
    path is opened here first, and the errno is that of this very ``open(2)``, never a guess
    made after the library's failure (the file could have changed in between). A path that
    passes goes to the library, which opens it again; if it vanishes in between, the library's
    own ``IO`` error is raised (a :class:`GGUFError`, not an ``OSError``)."""
    try:
        fd = os.open(raw, _PROBE_FLAGS)
    except OSError as e:
        raise _native.os_error(e, raw, filename) from None
    try:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
    finally:
        os.close(fd)
    if is_dir:  # open(2) lets a directory be opened for reading
        e = IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        raise _native.os_error(e, raw, filename)


def open_memory(buffer: Any) -> "GGUFFile":
    """Opens a GGUF file held in memory: any contiguous object supporting the buffer protocol
    (``bytes``, ``bytearray``, ``mmap.mmap``, ``memoryview``, a numpy array). Nothing is copied:
    the buffer is held (a ``bytearray`` cannot be resized, an ``mmap`` cannot be closed) until
    the file and every view of its data are gone. Raises :class:`GGUFError` like :func:`open`;
    errors name the file ``<memory>``."""
    lib = _native.load()
    pin = Pin(buffer)
    try:
        ptr = lib.gguf_open_memory(pin.address or None, pin.size)
        if not ptr:
            raise lib.error()
    except BaseException:
        pin.release()
        raise
    return GGUFFile(_Handle(lib, ptr, pin, lent=True), "<memory>")


# --------------------------------------------------------------------------------------------
# Small value objects
# --------------------------------------------------------------------------------------------


class Field(NamedTuple):
    """A metadata entry's description: its key, :class:`ValueType`, and for arrays the element
    type and element count (``None`` otherwise)."""

    key: str | bytes
    type: ValueType
    element_type: ValueType | None
    length: int | None
    index: int


class Shard(NamedTuple):
    """One file of a model (the only one for an unsplit model)."""

    index: int
    path: str
    file_size: int
    data_offset: int
    alignment: int
    version: int
    tensor_count: int
    first_tensor: int


class MemoryEstimate(NamedTuple):
    """What :meth:`GGUFFile.memory_estimate` returns: bytes per buffer, and the context
    llama.cpp uses."""

    weights: int
    k: int
    v: int
    recurrent: int
    output: int
    compute: int
    total: int
    n_ctx: int
    n_ctx_seq: int
    n_ctx_swa: int
    n_ubatch: int
    cpu: int
    gpu: int
    weights_mapped: int


_FLASH_ATTN = {"auto": -1, "off": 0, "on": 1, False: 0, True: 1}


def _cache_type(t: Any, what: str) -> int:
    if isinstance(t, str):
        try:
            return int(DataType[t.upper()])
        except KeyError:
            raise ValueError(f"{what} {t!r} is not a ggml type name") from None
    return int(t)


class Placement(NamedTuple):
    """Where a tensor lies in an :class:`UploadPlan`: the index of the view holding it whole
    (``None`` if the tensor is larger than any view may be) and its offset inside that view."""

    view: int | None
    offset: int


class View:
    """A page-aligned range of one shard's memory in an :class:`UploadPlan`."""

    __slots__ = ("index", "address", "size", "file_offset", "shard", "_file")

    def __init__(self, file: "_Core", index: int, v: GGUFView):
        self._file = file
        self.index = index
        self.address = v.data or 0
        self.size = v.size
        self.file_offset = v.file_offset
        self.shard = v.shard

    @property
    def data(self) -> memoryview:
        """The view's bytes: a zero-copy, read-only ``memoryview`` (see :attr:`Tensor.data`)."""
        return self._file._slice(self.shard, self.address, self.size)

    def __repr__(self) -> str:
        return (
            f"View(index={self.index}, shard={self.shard}, file_offset={self.file_offset}, "
            f"size={self.size})"
        )


class UploadPlan(NamedTuple):
    """Page-aligned views of at most ``max_view_size`` bytes such that every tensor lies wholly
    inside one (``gguf_plan_upload``): ``placements[i]`` is tensor ``i``'s."""

    page_size: int
    max_view_size: int
    views: list
    placements: list
    n_oversized: int

    @property
    def oversized(self) -> list:
        """Indices of the tensors no view holds (larger than ``max_view_size``)."""
        return [i for i, p in enumerate(self.placements) if p.view is None]


# --------------------------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------------------------

_UNSIGNED_SMALL = (ValueType.UINT8, ValueType.UINT16, ValueType.UINT32)
_SIGNED_SMALL = (ValueType.INT8, ValueType.INT16, ValueType.INT32)
_NUMPY_ELEMENTS = {
    ValueType.UINT8: "u1",
    ValueType.INT8: "i1",
    ValueType.UINT16: "u2",
    ValueType.INT16: "i2",
    ValueType.UINT32: "u4",
    ValueType.INT32: "i4",
    ValueType.FLOAT32: "f4",
    ValueType.BOOL: "?",
    ValueType.UINT64: "u8",
    ValueType.INT64: "i8",
    ValueType.FLOAT64: "f8",
}


def _value_type(t: int) -> ValueType | int:
    try:
        return ValueType(t)
    except ValueError:  # pragma: no cover (the library refuses unknown types)
        return t


def _scalar(kv: GGUFMetadataKV) -> Any:
    t = kv.type
    v = kv.value
    if t in _UNSIGNED_SMALL:
        return v.u32
    if t in _SIGNED_SMALL:
        return v.i32
    if t == ValueType.FLOAT32:
        return v.f32
    if t == ValueType.BOOL:
        return v.b
    if t == ValueType.STRING:
        return _text(ctypes.string_at(v.str, kv.str_len)) if kv.str_len else ""
    if t == ValueType.UINT64:
        return v.u64
    if t == ValueType.INT64:
        return v.i64
    if t == ValueType.FLOAT64:
        return v.f64
    raise AssertionError(f"libgguf: unexpected value type {t}")  # pragma: no cover


class Metadata(Mapping):
    """The file's metadata: an ordered, read-only mapping from each key (``str``; ``bytes`` for a
    key that is not valid UTF-8) to its value, in file order.

    Values: ``int`` for the integer types, ``float`` for FLOAT32/FLOAT64, ``bool``, ``str`` for a
    STRING that is valid UTF-8 (``bytes`` otherwise), and a ``list`` for an ARRAY (of such
    values, or of lists for nested arrays). Arrays are decoded when first read, in bulk by the C
    library's typed getters, and kept; each read returns a new list. :meth:`type`,
    :meth:`field` and :meth:`numpy` give the GGUF types and zero-copy numpy arrays.
    """

    def __init__(self, file: "_Core"):
        self._file = file
        h = file._handle()
        lib = h.lib
        n = lib.gguf_metadata_count(h.ptr)
        keys: dict = {}
        raw: list[bytes] = []
        addrs: list[int] = []
        for i in range(n):
            addr = lib.gguf_get_metadata_by_index(h.ptr, i)
            if not addr:
                raise lib.error()
            kv = GGUFMetadataKV.from_address(addr)
            key = ctypes.string_at(kv.key, kv.key_len)
            raw.append(key)
            addrs.append(addr)
            keys[_text(key)] = i
        self._keys = keys
        self._raw = raw
        self._addrs = addrs
        self._arrays: dict[int, tuple] = {}

    # Mapping
    def __getitem__(self, key: str | bytes) -> Any:
        i = self._index(key)
        kv = self._kv(i)
        if kv.type != ValueType.ARRAY:
            return _scalar(kv)
        return self._array(i, kv)

    def __iter__(self) -> Iterator[str | bytes]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        try:
            self._index(key)  # type: ignore[arg-type]
        except KeyError:
            return False
        return True

    def __repr__(self) -> str:
        return f"<libgguf.Metadata of {len(self)} keys>"

    # Types
    def type(self, key: str | bytes) -> ValueType:
        """The :class:`ValueType` of ``key``'s value."""
        return _value_type(self._kv(self._index(key)).type)

    def element_type(self, key: str | bytes) -> ValueType | None:
        """For an array, the :class:`ValueType` of its elements; otherwise ``None``."""
        kv = self._kv(self._index(key))
        return _value_type(kv.array_type) if kv.type == ValueType.ARRAY else None

    def field(self, key: str | bytes) -> Field:
        """Everything about ``key`` but its value (see :class:`Field`)."""
        i = self._index(key)
        kv = self._kv(i)
        is_array = kv.type == ValueType.ARRAY
        return Field(
            _text(self._raw[i]),
            _value_type(kv.type),
            _value_type(kv.array_type) if is_array else None,
            kv.array_len if is_array else None,
            i,
        )

    def types(self) -> dict:
        """Every key's :class:`ValueType`, in file order."""
        return {k: _value_type(self._kv(i).type) for k, i in self._keys.items()}

    # Arrays
    def numpy(self, key: str | bytes):
        """The numeric or BOOL array under ``key`` as a read-only numpy array without copying:
        it shares the C library's decoded copy (host byte order), which lives as long as the
        file's handle (see :attr:`Tensor.data`). Raises ``TypeError`` for other values.

        For a key holding a NUL byte (which the C getters, taking C strings, cannot name), the
        array is a view of the file's own bytes instead, in the file's byte order."""
        np = _numpy()
        i = self._index(key)
        kv = self._kv(i)
        if kv.type != ValueType.ARRAY or kv.array_type not in ARRAY_GETTERS:
            raise TypeError(f"libgguf: {key!r} is not an array of numbers or booleans")
        h = self._file._handle()
        if b"\0" in self._raw[i]:
            order = ">" if self._file.byte_order == "big" else "<"
            addr, n = kv.array_data, kv.array_len
        else:
            order = "="
            addr, n = self._typed(h, i, kv.array_type)
        dt = np.dtype(order + _NUMPY_ELEMENTS[kv.array_type])
        size = n * dt.itemsize
        buf = readonly_view(h, addr, size) if size else memoryview(b"")
        return np.frombuffer(buf, dtype=dt, count=n)

    def array_string(self, key: str | bytes, index: int) -> str | bytes:
        """Element ``index`` of the string array under ``key``, without decoding the rest
        (``gguf_get_array_string``, O(1) after the first call). ``index`` is an integer from 0;
        past the end raises :class:`GGUFError` (``INVALID_ARGUMENT``), a negative one or one
        beyond 64 bits ``OverflowError``."""
        i = self._index(key)
        index = _convert.u64(index, "a string index")
        h = self._file._handle()
        if b"\0" in self._raw[i]:
            return self._nul_key_string(i, index)
        n = c_uint64()
        addr = h.lib.gguf_get_array_string(h.ptr, self._raw[i], index, byref(n))
        if not addr:
            raise h.lib.error()
        return _text(ctypes.string_at(addr, n.value)) if n.value else ""

    # Internals
    def _index(self, key: str | bytes) -> int:
        try:
            return self._keys[key]
        except KeyError:
            if isinstance(key, bytes):
                alt = _text(key)
                if alt in self._keys:
                    return self._keys[alt]
            raise KeyError(key) from None
        except TypeError:
            raise KeyError(key) from None

    def _nul_key_string(self, i: int, index: int) -> str | bytes:
        """:meth:`array_string` for a key the C getter cannot name (it holds a NUL byte), with
        the C getter's refusals."""
        kv = self._kv(i)
        shown = repr(_text(self._raw[i]))
        if kv.type != ValueType.ARRAY or kv.array_type != ValueType.STRING:
            what = ValueType(kv.array_type if kv.type == ValueType.ARRAY else kv.type).name
            raise GGUFError(
                _native.ErrorCode.WRONG_TYPE, None, f"gguf: key {shown} holds {what}, not STRING"
            )
        values = self._array(i, kv)
        if index >= len(values):
            raise GGUFError(
                _native.ErrorCode.INVALID_ARGUMENT,
                None,
                f"gguf: string index {index} is past the end ({len(values)} strings)",
            )
        return values[index]

    def _kv(self, i: int) -> GGUFMetadataKV:
        self._file._handle()  # raises if closed
        return GGUFMetadataKV.from_address(self._addrs[i])

    def _typed(self, h: _Handle, i: int, elem: int) -> tuple[int, int]:
        name = ARRAY_GETTERS[elem][0]
        n = c_uint64()
        addr = getattr(h.lib, name)(h.ptr, self._raw[i], byref(n))
        if not addr:
            raise h.lib.error()
        return addr, n.value

    def _array(self, i: int, kv: GGUFMetadataKV) -> list | StringArray:
        cached = self._arrays.get(i)
        if cached is not None:
            # A StringArray is read-only: the same one every time; a list is the caller's.
            return cached if isinstance(cached, StringArray) else list(cached)
        h = self._file._handle()
        elem = kv.array_type
        if b"\0" in self._raw[i]:
            values = self._nested(h, i)  # the getters by key take it as a C string
            if elem == ValueType.STRING:
                strings = StringArray.of(values)
                self._arrays[i] = strings
                return strings
        elif elem in ARRAY_GETTERS:
            addr, n = self._typed(h, i, elem)
            values = (ARRAY_GETTERS[elem][1] * n).from_address(addr)[:] if n else []
        elif elem == ValueType.STRING:
            strings = self._strings(h, i, kv)
            self._arrays[i] = strings
            return strings
        else:
            # Nested arrays are listed each time (they are small: no cache to keep in sync).
            return self._nested(h, i)
        self._arrays[i] = tuple(values)
        return values

    def _strings(self, h: _Handle, i: int, kv: GGUFMetadataKV) -> StringArray:
        n = c_uint64()
        addr = h.lib.gguf_get_string_array(h.ptr, self._raw[i], byref(n))
        if not addr:
            raise h.lib.error()
        n = n.value
        if n == 0:
            return StringArray(b"", ())
        # The handle's copy is one block: the strings in order, each followed by a NUL, from
        # the first pointer on (gguf_get_string_array's documented layout). Each length field
        # of the file became one NUL, which gives the block's size. The block and the pointers
        # are copied whole (two memcpy); each string is decoded when it is read.
        length_field = 4 if self._file.version == 1 else 8
        size = kv.array_bytes - n * (length_field - 1)
        ptr = ctypes.sizeof(c_void_p)
        first = c_void_p.from_address(addr).value or 0
        last = c_void_p.from_address(addr + (n - 1) * ptr).value or 0
        block = ctypes.string_at(first, size) if size else b""
        if 0 <= last - first < size and block[size - 1] == 0:
            starts = memoryview(ctypes.string_at(addr, n * ptr)).cast("Q" if ptr == 8 else "I")
            return StringArray(block, starts, first)
        # Not the layout above (never seen): take every string whole from the C library.
        items = []
        out_len = c_uint64()
        for j in range(n):
            p = h.lib.gguf_get_array_string(h.ptr, self._raw[i], j, byref(out_len))
            if not p:
                raise h.lib.error()
            items.append(ctypes.string_at(p, out_len.value))
        return StringArray.of(items)

    def _nested(self, h: _Handle, i: int, path: tuple = ()) -> list:
        """The array at ``path`` inside entry ``i``'s value as decoded by the C library
        (``gguf_get_nested_array``, which reaches the entry by index, whatever its key holds):
        a list of values, of lists for an array of arrays."""
        a = GGUFArray()
        where = (c_uint64 * len(path))(*path) if path else None
        if not h.lib.gguf_get_nested_array(h.ptr, i, where, len(path), byref(a)):
            raise h.lib.error()
        n = a.count
        if a.elem_type == ValueType.ARRAY:
            return [self._nested(h, i, path + (k,)) for k in range(n)]
        if n == 0:
            return []
        if a.elem_type == ValueType.STRING:
            strings = (GGUFString * n).from_address(a.data)
            return [_text(ctypes.string_at(s.data, s.len)) if s.len else "" for s in strings]
        return (ARRAY_GETTERS[a.elem_type][1] * n).from_address(a.data)[:]


# --------------------------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------------------------

# numpy dtype (without byte order) of each plain tensor type; BF16 is given as its bits.
_NUMPY_TENSORS = {
    DataType.F32: "f4",
    DataType.F16: "f2",
    DataType.BF16: "u2",
    DataType.I8: "i1",
    DataType.I16: "i2",
    DataType.I32: "i4",
    DataType.I64: "i8",
    DataType.F64: "f8",
}


class Tensor:
    """A tensor's description and data.

    ``shape`` is in GGUF order (innermost dimension first, ``ne[0]``, as in the file);
    ``dtype`` is the :class:`DataType` (an ``int``), ``dtype_name`` ggml's name for it;
    ``offset`` is relative to the data section of the tensor's shard, ``file_offset`` absolute
    in that shard's file, ``size`` the data's size in bytes.
    """

    __slots__ = (
        "_file",
        "name",
        "shape",
        "n_elements",
        "dtype",
        "offset",
        "file_offset",
        "size",
        "shard",
        "index",
        "_addr",
    )

    def __init__(self, file: "_Core", addr: int):
        info = GGUFTensorInfo.from_address(addr)
        self._file = file
        self._addr = addr
        self.name = _text(ctypes.string_at(info.name, info.name_len))
        self.shape = tuple(info.dims[: info.n_dims])
        self.n_elements = info.n_elements
        try:
            self.dtype = DataType(info.dtype)
        except ValueError:  # pragma: no cover (a type newer than this package)
            self.dtype = info.dtype
        self.offset = info.offset
        self.file_offset = info.file_offset
        self.size = info.size_bytes
        self.shard = info.shard
        self.index = info.index

    @property
    def n_dims(self) -> int:
        return len(self.shape)

    @property
    def dtype_name(self) -> str:
        """ggml's name of the data type, e.g. ``"Q4_K"``."""
        return _dtype_name(_native.load(), int(self.dtype))

    @property
    def data(self) -> memoryview:
        """The tensor's bytes as stored in the file: a read-only ``memoryview`` (format ``B``)
        of the mapping, without copying.

        The view (and anything made from it: slices, numpy arrays) keeps the file's mapping
        alive: it stays valid after :meth:`GGUFFile.close`, which then releases the mapping
        only when the last such view is gone. Do not write through it (it is read-only)."""
        return self._file._slice(self.shard, self._data_address(), self.size)

    def numpy(self):
        """The tensor's data as a read-only numpy array sharing the mapping (zero-copy; see
        :attr:`data`), in numpy's row-major order: the GGUF shape reversed
        (``ne[n-1], ..., ne[0]``).

        F32, F16, F64, I8, I16, I32 and I64 get their numpy types (in the file's byte order);
        BF16 is given as ``uint16`` (its bits: ``(a.astype(np.uint32) << 16).view(np.float32)``
        converts). Quantized types are given as their raw bytes (``uint8``) with the innermost
        axis in bytes (``ne[0] / block_size * block_bytes``), as gguf-py does."""
        np = _numpy()
        shape, dt = self._numpy_layout(np)
        if self.size == 0:
            out = np.empty(shape, dtype=dt)
            out.flags.writeable = False
            return out
        return np.frombuffer(self.data, dtype=dt).reshape(shape)

    def _numpy_layout(self, np: Any) -> tuple:
        """The shape and numpy dtype :meth:`numpy` gives."""
        shape = self.shape[::-1]
        kind = _NUMPY_TENSORS.get(self.dtype)
        order = ">" if self._file.byte_order == "big" else "<"
        if kind is not None:
            dt = np.dtype(order + kind)
        else:
            dt = np.dtype(np.uint8)
            lib = _native.load()
            block = lib.gguf_dtype_block_size(int(self.dtype))
            block_bytes = lib.gguf_dtype_block_bytes(int(self.dtype))
            inner = (self.shape[0] if self.shape else 1) // block * block_bytes
            shape = shape[:-1] + (inner,) if shape else (inner,)
        return shape, dt

    def _new_buffer(self) -> Any:
        """A writable array shaped as :meth:`numpy` gives (a ``bytearray`` without numpy)."""
        try:
            np = _numpy()
        except ImportError:
            return bytearray(self.size)
        shape, dt = self._numpy_layout(np)
        return np.empty(shape, dtype=dt)

    def to_numpy_float(
        self,
        first_row: int = 0,
        n_rows: int | None = None,
        *,
        out: Any = None,
        threads: int | None = None,
    ):
        """The tensor's values as float32, converted from any data type bit for bit as ggml
        converts it (``gguf_tensor_to_float``), in numpy's order: the GGUF shape reversed
        (``ne[n-1], ..., ne[0]``), as :meth:`numpy` gives it. Returns a new array, writable and
        owned by the caller, even for an F32 tensor (:meth:`numpy` is the zero-copy, read-only
        view of one).

        With ``first_row`` or ``n_rows``, only rows ``[first_row, first_row + n_rows)`` (a row
        is ``ne[0]`` elements; ``n_rows`` defaults to the rest), as a 2-D array
        ``(n_rows, ne[0])``.

        ``out``: a numpy array to write into instead of allocating one (a caller converting
        many tensors can reuse one buffer, e.g. ``buf[: t.n_elements]``): C-contiguous,
        writable, dtype float32 in the machine's byte order, of exactly as many elements as
        the rows converted (any shape); it is returned. It must not overlap the tensor's own
        bytes (possible only in memory lent to :func:`open_memory`). Anything else raises
        ``TypeError`` (not a numpy array, another dtype) or ``ValueError`` (size, layout,
        read-only, overlap) before anything is written. With ``out``, converting many tensors
        touches no new memory: a new array's pages, when the allocator hands out fresh ones,
        cost more to fault in than most types cost to convert (see BENCHMARKS.md).

        ``threads``: how many threads convert (``gguf_tensor_to_float_parallel``, rows split
        between them; each writes, so first touches, its own part of the output). ``None``
        (the default): one for fewer than :data:`PARALLEL_MIN_ELEMENTS` values, else
        :func:`default_threads`; ``0``: one per core (the library decides); ``n``: at most
        ``n`` (the library gives each thread at least 65536 values).

        Raises :class:`GGUFError` for a type that cannot be converted (a big-endian file's
        types other than F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q6_K, MXFP4 and NVFP4) or rows past
        the end."""
        np = _np or _numpy()
        h = self._file.h
        if h is None:
            raise ValueError("libgguf: the file is closed")
        row = self.shape[0] if self.shape else 1
        if n_rows is None and first_row.__class__ is int and first_row == 0:
            # The common call, kept short: it is most of the time for small tensors.
            n_rows = self.n_elements // row if row else 0
            n = self.n_elements
            shape = self.shape[::-1]
        else:
            total = self.n_elements // row if row else 0
            first_row = _convert.u64(first_row, "first_row")
            if n_rows is None:
                n_rows = max(total - first_row, 0)
            n_rows = _convert.u64(n_rows, "n_rows")
            if first_row + n_rows > total:
                # The library's error (rows past the end), before allocating for those rows:
                # it checks the range before it writes anything, so one float is room enough.
                room = ctypes.c_float()
                h.lib.gguf_tensor_to_float(
                    h.ptr, self._addr, first_row, n_rows, ctypes.addressof(room)
                )
                raise h.lib.error()
            n = n_rows * row
            shape = (n_rows, row)
        if threads is None:
            threads = 1 if n < PARALLEL_MIN_ELEMENTS else default_threads()
        else:
            threads = _convert.u32(threads, "threads")
        if out is None:
            out = np.empty(shape, dtype=np.float32)
            # The address through ctypes' buffer protocol: a quarter of `out.ctypes`' cost.
            dst = ctypes.addressof(ctypes.c_char.from_buffer(out)) if n else out.ctypes.data
        else:
            dst = self._check_out(np, h, out, n)
        if threads == 1:
            ok = h.lib.gguf_tensor_to_float(h.ptr, self._addr, first_row, n_rows, dst)
        else:
            ok = h.lib.gguf_tensor_to_float_parallel(
                h.ptr, self._addr, first_row, n_rows, dst, threads
            )
        if not ok:
            raise h.lib.error()
        return out

    def _check_out(self, np: Any, h: _Handle, out: Any, n: int) -> int:
        """The address of ``out``, refused (before anything is written) unless
        :meth:`to_numpy_float` can write ``n`` floats there."""
        if out.__class__ is not np.ndarray and not isinstance(out, np.ndarray):
            raise TypeError(
                f"libgguf: out= must be a numpy array, not {type(out).__name__} "
                f"(tensor {self.name!r})"
            )
        if out.dtype != _F32:
            raise TypeError(
                f"libgguf: out= must have dtype float32 in the machine's byte order, not "
                f"{out.dtype.str} (tensor {self.name!r})"
            )
        if out.size != n:
            raise ValueError(
                f"libgguf: out= has {out.size} elements where tensor {self.name!r} gives {n}"
            )
        flags = out.flags
        if not flags.c_contiguous:
            raise ValueError(f"libgguf: out= must be C-contiguous (tensor {self.name!r})")
        if not flags.writeable:
            raise ValueError(f"libgguf: out= is read-only (tensor {self.name!r})")
        if n == 0:
            return out.ctypes.data
        dst = ctypes.addressof(ctypes.c_char.from_buffer(out))
        if h.lent:
            src = h.lib.gguf_tensor_data(h.ptr, self._addr)
            if not src:  # pragma: no cover (memory lent always holds the data)
                raise h.lib.error()
            if dst < src + self.size and src < dst + n * 4:
                raise ValueError(f"libgguf: out= overlaps tensor {self.name!r}'s own data")
        return dst

    def validate(self) -> None:
        """Checks the tensor's values as ggml's ``ggml_validate_row_data`` does
        (``gguf_validate_tensor``): raises :class:`GGUFError` (code ``BAD_VALUE``) naming the
        first NaN or infinity in a float tensor or in a quantized block's scale (element or
        block index, field, byte offset in the tensor's data; the error's ``offset`` is its
        position in the file). Reads the whole tensor at about memory speed; returns None."""
        h = self._file._handle()
        if not h.lib.gguf_validate_tensor(h.ptr, self._addr):
            raise h.lib.error()

    def advise(self, advice: int) -> None:
        """Paging advice for the tensor's pages (``madvise``): a :class:`Paging` value."""
        advice = _convert.u32(advice, "paging advice")
        h = self._file._handle()
        if not h.lib.gguf_advise_tensor(h.ptr, self._addr, advice):
            raise h.lib.error()

    def _data_address(self) -> int:
        h = self._file._handle()
        addr = h.lib.gguf_tensor_data(h.ptr, self._addr)
        if not addr:
            raise h.lib.error()
        return addr

    def __repr__(self) -> str:
        dtype = self.dtype.name if isinstance(self.dtype, DataType) else self.dtype
        return (
            f"Tensor({self.name!r}, shape={self.shape}, dtype={dtype}, "
            f"file_offset={self.file_offset}, size={self.size}, shard={self.shard})"
        )


_DTYPE_NAMES: dict[int, str] = {}


def _dtype_name(lib: Any, dtype: int) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        raw = lib.gguf_dtype_name(dtype)
        name = raw.decode("ascii") if raw else str(dtype)
        _DTYPE_NAMES[dtype] = name
    return name


# --------------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------------


class _Core:
    """What the objects a :class:`GGUFFile` hands out share with it: the handle (``None`` once
    the file is closed), the format facts they need and the views of each shard's memory. It
    refers to none of them, so no reference cycle delays closing."""

    __slots__ = ("h", "version", "byte_order", "shard_views")

    def __init__(self, handle: _Handle):
        self.h: _Handle | None = handle
        self.version: int = handle.lib.gguf_version(handle.ptr)
        self.byte_order = "big" if handle.lib.gguf_byte_order(handle.ptr) == 1 else "little"
        self.shard_views: dict = {}

    def _handle(self) -> _Handle:
        h = self.h
        if h is None:
            raise ValueError("libgguf: the file is closed")
        return h

    @staticmethod
    def _memory_len(h: _Handle, info: GGUFShardInfo) -> int:
        """The length of a shard's memory: a mapped (or read) file's is whole pages, whose
        bytes past the end of the file read as zeros (upload plan views may end there); memory
        lent to ``open_memory`` is the buffer's length. ``gguf_contains`` confirms it."""
        page = mmap.PAGESIZE
        rounded = -(-info.file_size // page) * page
        if rounded != info.file_size and h.lib.gguf_contains(h.ptr, info.base, rounded):
            return rounded
        h.lib.gguf_clear_error()
        return info.file_size

    def _slice(self, shard: int, address: int, size: int) -> memoryview:
        """A read-only view of ``size`` bytes at ``address`` inside shard ``shard``'s memory,
        sliced from one view of the whole shard (which keeps the handle alive)."""
        if size == 0:
            return memoryview(b"")
        entry = self.shard_views.get(shard)
        if entry is None:
            h = self._handle()
            addr = h.lib.gguf_get_shard(h.ptr, shard)
            if not addr:
                raise h.lib.error()
            info = GGUFShardInfo.from_address(addr)
            entry = (info.base, readonly_view(h, info.base, self._memory_len(h, info)))
            self.shard_views[shard] = entry
        base, whole = entry
        start = address - base
        if start < 0 or start + size > len(whole):  # pragma: no cover (the library checks)
            raise AssertionError("libgguf: data outside its shard")
        return whole[start : start + size]


class GGUFFile:
    """An open GGUF file (or split model). Use it as a context manager, or call :meth:`close`.

    Everything is read through the C library; the metadata and tensor list are built on first
    access. Tensor data is never copied: :attr:`Tensor.data` and :meth:`Tensor.numpy` share the
    mapping.
    """

    def __init__(self, handle: _Handle, path: str):
        self._core = core = _Core(handle)
        self.path = path
        lib, ptr = handle.lib, handle.ptr
        #: The format version (1, 2 or 3).
        self.version: int = core.version
        #: The alignment of tensor data (``general.alignment``, or 32).
        self.alignment: int = lib.gguf_alignment(ptr)
        #: The absolute offset of the data section (of the first shard).
        self.data_offset: int = lib.gguf_data_offset(ptr)
        #: The size of the file (of the first shard) in bytes.
        self.file_size: int = lib.gguf_file_size(ptr)
        #: ``"little"`` or ``"big"``: the byte order of the file's numbers.
        self.byte_order: str = core.byte_order
        self._metadata: Metadata | None = None
        self._tensors: list | None = None
        self._by_name: dict | None = None
        self._shards: list | None = None

    # Life cycle
    def close(self) -> None:
        """Closes the file. Memory views and numpy arrays of its data handed out earlier stay
        valid: the mapping is released when the last of them is gone. Idempotent."""
        core = self._core
        core.h = None
        core.shard_views.clear()
        self._metadata = self._tensors = self._by_name = None

    @property
    def closed(self) -> bool:
        return self._core.h is None

    def __enter__(self) -> "GGUFFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<libgguf.GGUFFile {self.path!r} {state}, version {self.version}>"

    def _handle(self) -> _Handle:
        return self._core._handle()

    # Metadata
    @property
    def metadata(self) -> Metadata:
        """The metadata, an ordered mapping key -> value (see :class:`Metadata`)."""
        m = self._metadata
        if m is None:
            m = self._metadata = Metadata(self._core)
        else:
            self._handle()
        return m

    @property
    def metadata_types(self) -> dict:
        """Every key's :class:`ValueType`, in file order (for arrays, see
        ``metadata.element_type(key)``)."""
        return self.metadata.types()

    # Tensors
    @property
    def tensor_count(self) -> int:
        h = self._handle()
        return h.lib.gguf_tensor_count(h.ptr)

    @property
    def tensors(self) -> list:
        """Every :class:`Tensor`, in the model's order (a new list each time)."""
        h = self._handle()
        if self._tensors is None:
            lib = h.lib
            out = []
            for i in range(lib.gguf_tensor_count(h.ptr)):
                addr = lib.gguf_get_tensor_by_index(h.ptr, i)
                if not addr:
                    raise lib.error()
                out.append(Tensor(self._core, addr))
            self._tensors = out
        return list(self._tensors)

    def memory_estimate(
        self,
        n_ctx: int = 0,
        n_batch: int = 2048,
        n_ubatch: int = 512,
        n_seq_max: int = 1,
        type_k: str | int = "F16",
        type_v: str | int = "F16",
        flash_attn: str | bool = "auto",
        swa_full: bool = False,
        kv_unified: bool = False,
        n_gpu_layers: int = 0,
        offload_kqv: bool = True,
    ) -> MemoryEstimate:
        """The memory llama.cpp needs to run this model with these context parameters (as
        ``llama_context_params`` names them; ``n_ctx`` 0 is the training context, the cache
        types are ggml type names or ids, ``flash_attn`` is ``"auto"``, ``"on"`` or ``"off"``),
        from the header alone (``gguf_memory_estimate``). Raises :class:`GGUFError` for an
        architecture whose rules are not known (naming it) or parameters llama.cpp refuses."""
        if flash_attn not in _FLASH_ATTN:
            raise ValueError(f"flash_attn {flash_attn!r} is not 'auto', 'on' or 'off'")
        h = self._handle()
        p = h.lib.gguf_memory_params_default()
        # Each within its C field's range (OverflowError, TypeError otherwise): ctypes would
        # keep the low bits, and 2**32 + 512 become a context of 512.
        p.n_ctx = _convert.u32(n_ctx, "n_ctx")
        p.n_batch = _convert.u32(n_batch, "n_batch")
        p.n_ubatch = _convert.u32(n_ubatch, "n_ubatch")
        p.n_seq_max = _convert.u32(n_seq_max, "n_seq_max")
        p.type_k = _cache_type(type_k, "type_k")
        p.type_v = _cache_type(type_v, "type_v")
        p.flash_attn = _FLASH_ATTN[flash_attn]
        p.swa_full, p.kv_unified = bool(swa_full), bool(kv_unified)
        p.n_gpu_layers = _convert.i32(n_gpu_layers, "n_gpu_layers")
        p.offload_kqv = bool(offload_kqv)
        out = GGUFMemoryEstimate()
        out.size = ctypes.sizeof(out)
        if not h.lib.gguf_memory_estimate(h.ptr, ctypes.byref(p), ctypes.byref(out)):
            raise h.lib.error()
        return MemoryEstimate(*(getattr(out, f) for f in MemoryEstimate._fields))

    @property
    def chat_templates(self) -> list:
        """The names of the file's chat templates: ``None`` for ``tokenizer.chat_template``,
        then the ``<name>`` of each ``tokenizer.chat_template.<name>``."""
        h = self._handle()
        names = []
        for i in range(h.lib.gguf_chat_template_count(h.ptr)):
            raw = h.lib.gguf_chat_template_name(h.ptr, i)
            if raw is None:
                raise h.lib.error()
            names.append(raw.decode("utf-8") if raw else None)
        return names

    def chat_template(self, name: str | None = None):
        """The file's chat template ``name`` (``None``: ``tokenizer.chat_template``), to
        :meth:`~libgguf.FileChatTemplate.render` as transformers renders it. Raises
        :class:`GGUFError` (``NOT_FOUND``) when the file has no such template."""
        from ._chat import FileChatTemplate

        if name not in self.chat_templates:
            key = "tokenizer.chat_template" + ("" if name is None else "." + name)
            raise GGUFError(
                _native.ErrorCode.NOT_FOUND, None, f"gguf: the file has no chat template {key}"
            )
        return FileChatTemplate(self, name)

    def tokenizer(self):
        """The tokenizer of the file's vocabulary (:class:`libgguf.Tokenizer`), exactly as
        llama.cpp tokenizes. It does not need the file to stay open. Raises :class:`GGUFError`
        when the file has no usable vocabulary."""
        from ._tokenizer import Tokenizer

        h = self._handle()
        ptr = h.lib.gguf_tokenizer_open(h.ptr)
        if not ptr:
            raise h.lib.error()
        return Tokenizer(h.lib, ptr)

    def tensor(self, name: str | bytes) -> Tensor:
        """The tensor named ``name`` (``str``, or ``bytes`` for a name that is not UTF-8),
        compared whole: a NUL byte in ``name`` is part of it. Raises :class:`GGUFError` (code
        ``NOT_FOUND``) if there is none, ``TypeError`` for a name of another type."""
        raw = _convert.name_bytes(name, "tensor name")
        h = self._handle()
        if self._by_name is None:
            self._by_name = {t.name: t for t in self.tensors}
        t = self._by_name.get(_text(raw))
        if t is not None:
            return t
        if b"\0" not in raw and not h.lib.gguf_get_tensor(h.ptr, raw):
            raise h.lib.error()  # NOT_FOUND, with the library's message
        raise GGUFError(_native.ErrorCode.NOT_FOUND, None, f"gguf: no tensor named {name!r}")

    # Shards and engine integration
    @property
    def shards(self) -> list:
        """Every file of the model as a :class:`Shard` (one for an unsplit model)."""
        h = self._handle()
        if self._shards is None:
            lib = h.lib
            out = []
            for i in range(lib.gguf_shard_count(h.ptr)):
                addr = lib.gguf_get_shard(h.ptr, i)
                if not addr:
                    raise lib.error()
                s = GGUFShardInfo.from_address(addr)
                out.append(
                    Shard(
                        i,
                        os.fsdecode(ctypes.string_at(s.path)),
                        s.file_size,
                        s.data_offset,
                        s.alignment,
                        s.version,
                        s.tensor_count,
                        s.first_tensor,
                    )
                )
            self._shards = out
        return list(self._shards)

    def plan_upload(self, max_view_size: int | None = None, page_size: int = 0) -> UploadPlan:
        """Plans the upload of every tensor's data (``gguf_plan_upload``): page-aligned views of
        at most ``max_view_size`` bytes (``None``: no limit) such that every tensor lies wholly
        inside one. ``page_size`` is a power of two, or 0 for the system's."""
        limit = UINT64_MAX if max_view_size is None else max_view_size
        limit = _convert.u64(limit, "max_view_size")
        page_size = _convert.u64(page_size, "page_size")
        h = self._handle()
        addr = h.lib.gguf_plan_upload(h.ptr, limit, page_size)
        if not addr:
            raise h.lib.error()
        p = GGUFUploadPlan.from_address(addr)
        views = []
        if p.n_views:
            raw_views = (GGUFView * p.n_views).from_address(p.views)
            views = [View(self._core, i, v) for i, v in enumerate(raw_views)]
        placements = []
        if p.n_tensors:
            raw = (GGUFPlacement * p.n_tensors).from_address(p.placements)
            placements = [
                Placement(None if x.view == NO_VIEW else x.view, x.offset) for x in raw
            ]
        return UploadPlan(p.page_size, p.max_view_size, views, placements, p.n_oversized)

    # Reading tensor data into the caller's memory
    @property
    def is_mapped(self) -> bool:
        """Whether tensor data is in memory (``Tensor.data`` works); false for files opened
        through a reader or with ``no_map`` (``gguf_is_mapped``)."""
        h = self._handle()
        return bool(h.lib.gguf_is_mapped(h.ptr))

    def read_tensor(
        self, tensor: Tensor | str | bytes, out: Any = None, offset: int = 0, size: int | None = None
    ) -> Any:
        """Copies ``size`` bytes (default: to the tensor's end) of the tensor's data from
        ``offset`` into ``out``, a writable buffer (numpy array, ``bytearray``, ...) of at least
        that size, and returns it. Without ``out``, the whole tensor goes into a new numpy array
        shaped as :meth:`Tensor.numpy` gives (a ``bytearray`` for a part, or without numpy).
        Works for every kind of file (``gguf_read_tensor``)."""
        t = tensor if isinstance(tensor, Tensor) else self.tensor(tensor)
        offset = _convert.u64(offset, "offset")
        if size is None:
            size = max(t.size - offset, 0)
        size = _convert.u64(size, "size")
        if out is None:
            whole = offset == 0 and size == t.size
            out = t._new_buffer() if whole else bytearray(size)
        pin = Pin(out, writable=True)
        try:
            if pin.size < size:
                raise ValueError(f"the buffer holds {pin.size} bytes, {size} are read")
            h = self._handle()
            if size and not h.lib.gguf_read_tensor(h.ptr, t._addr, offset, pin.address, size):
                raise h.lib.error()
        finally:
            pin.release()
        return out

    def read_tensors(
        self,
        tensors: list | None = None,
        outs: list | None = None,
        *,
        threads: int = 0,
        direct: bool = False,
        progress: Any = None,
    ) -> list:
        """Reads whole tensors (default: every tensor) into ``outs`` (writable buffers of at
        least each tensor's size; default: new numpy arrays as :meth:`read_tensor` makes) with
        ``gguf_read_tensors``: ``threads`` threads (0: the library decides), ``direct`` to
        bypass the page cache, ``progress(done_bytes, total_bytes)`` called as reads complete
        (return ``False`` to stop: raises :class:`GGUFError` with code ``CANCELLED``). Returns
        ``outs``."""
        ts = self.tensors if tensors is None else [
            t if isinstance(t, Tensor) else self.tensor(t) for t in tensors
        ]
        if outs is None:
            outs = [t._new_buffer() for t in ts]
        if len(outs) != len(ts):
            raise ValueError(f"{len(ts)} tensors but {len(outs)} buffers")
        pins = []
        try:
            for t, out in zip(ts, outs):
                pin = Pin(out, writable=True)
                pins.append(pin)
                if pin.size < t.size:
                    raise ValueError(f"the buffer for {t.name!r} holds {pin.size} bytes, not {t.size}")
            n = len(ts)
            infos = (c_void_p * max(n, 1))(*[t._addr for t in ts])
            dsts = (c_void_p * max(n, 1))(*[p.address or 1 for p in pins])
            error: list = []

            def report(_user: Any, done: int, total: int) -> bool:
                if _native.exiting():
                    error.append(_native.refuse())
                    return False
                with _native.in_callback():
                    try:
                        return progress is None or progress(done, total) is not False
                    except BaseException as e:  # noqa: BLE001 (re-raised below)
                        error.append(_native.refuse() if _native.exiting() else e)
                        return False

            callback = _native.PROGRESS_FN(report)
            h = self._handle()
            flags = _native.READ_FLAG_DIRECT if direct else 0
            threads = _convert.u32(threads, "threads")
            with _native.calls_back():
                ok = h.lib.gguf_read_tensors(h.ptr, infos, dsts, n, threads, flags, callback, None)
            if not ok:
                if error:
                    raise error[0]
                raise h.lib.error()
        finally:
            for p in pins:
                p.release()
        return outs

    def advise(self, advice: int) -> None:
        """Paging advice for the whole data section of every shard (``gguf_advise_data``)."""
        advice = _convert.u32(advice, "paging advice")
        h = self._handle()
        if not h.lib.gguf_advise_data(h.ptr, advice):
            raise h.lib.error()
