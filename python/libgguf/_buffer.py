"""Memory shared with the C library: pinning a Python buffer (for ``open_memory`` and the
writer's tensor data) and exposing C memory as read-only ``memoryview`` objects."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_char_p, c_int, c_ssize_t, c_void_p


class _PyBuffer(Structure):
    """CPython's ``Py_buffer`` (stable layout since Python 3.3)."""

    _fields_ = [
        ("buf", c_void_p),
        ("obj", c_void_p),
        ("len", c_ssize_t),
        ("itemsize", c_ssize_t),
        ("readonly", c_int),
        ("ndim", c_int),
        ("format", c_char_p),
        ("shape", c_void_p),
        ("strides", c_void_p),
        ("suboffsets", c_void_p),
        ("internal", c_void_p),
    ]


try:
    _get_buffer = ctypes.pythonapi.PyObject_GetBuffer
    _get_buffer.argtypes = [ctypes.py_object, POINTER(_PyBuffer), c_int]
    _get_buffer.restype = c_int
    _release_buffer = ctypes.pythonapi.PyBuffer_Release
    _release_buffer.argtypes = [POINTER(_PyBuffer)]
    _release_buffer.restype = None
except (AttributeError, OSError):  # not CPython
    _get_buffer = _release_buffer = None

_PyBUF_SIMPLE = 0
_PyBUF_WRITABLE = 1


class Pin:
    """The bytes of a Python object supporting the buffer protocol, held in place: the object
    cannot be resized or freed (a ``bytearray`` refuses to resize, an ``mmap`` to close) until
    :meth:`release`. ``address`` and ``size`` describe the bytes; nothing is copied, except on
    Python implementations without ``ctypes.pythonapi`` for read-only buffers."""

    __slots__ = ("address", "size", "_view", "_obj", "__weakref__")

    def __init__(self, obj: object, writable: bool = False):
        self._obj = obj
        if _get_buffer is not None:
            view = _PyBuffer()
            # A writable request fails (BufferError) for read-only or non-contiguous buffers.
            flags = _PyBUF_WRITABLE if writable else _PyBUF_SIMPLE
            _get_buffer(obj, ctypes.byref(view), flags)  # raises BufferError
            self._view = view
            self.address = view.buf or 0
            self.size = view.len
            return
        mv = memoryview(obj).cast("B")  # pragma: no cover (not CPython)
        if writable and mv.readonly:
            raise BufferError("the buffer is read-only")
        if mv.readonly:
            data = ctypes.create_string_buffer(mv.tobytes(), len(mv))
        else:
            data = (ctypes.c_char * len(mv)).from_buffer(mv)
        self._view = data
        self.address = ctypes.addressof(data)
        self.size = len(mv)

    def release(self) -> None:
        view, self._view = self._view, None
        if view is not None and _release_buffer is not None and isinstance(view, _PyBuffer):
            _release_buffer(ctypes.byref(view))
        self._obj = None


def readonly_view(owner: object, address: int, size: int) -> memoryview:
    """A read-only ``memoryview`` (format ``B``) of the ``size`` bytes at ``address``, keeping
    ``owner`` alive for as long as the view, or any view or array made from it, lives."""
    if size == 0:
        return memoryview(b"")
    arr = (ctypes.c_ubyte * size).from_address(address)
    arr._owner = owner  # ctypes instances take attributes: the memory's owner rides along
    return memoryview(arr).cast("B").toreadonly()
