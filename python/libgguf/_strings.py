"""StringArray: a GGUF string array as a lazy, read-only sequence."""

from __future__ import annotations

import bisect
import operator
from collections.abc import Sequence
from typing import Any, Iterator

from ._convert import text as _text

_PREVIEW = 3  # elements shown by repr


class StringArray(Sequence):
    """A string array from a file's metadata (``metadata[key]``), decoded one element at a time.

    It holds one copy of the strings (a block of the strings in order, each followed by a NUL
    byte, as ``gguf_get_string_array`` lays them out) and where each starts; an element becomes
    a ``str`` when it is read (or stays ``bytes`` when it is not valid UTF-8, as everywhere in
    this package). So getting a 262144-token vocabulary costs little more than the C call, and
    reading a few tokens decodes only those. It does not depend on the file staying open.

    It is a read-only ``collections.abc.Sequence``: ``len``, indexing (negative indexes count
    from the end), slices (a ``list``), iteration, ``in``, ``index``, ``count``, and ``==`` with
    a ``list``, a ``tuple`` or another ``StringArray`` (element by element). :meth:`tolist`
    decodes every element at once into a ``list``, the fastest way to get them all.
    """

    __slots__ = ("_block", "_starts", "_base", "_n", "_plain")

    def __init__(self, block: bytes, starts: Sequence[int], base: int = 0):
        """``block``: the strings, each followed by a NUL byte; ``starts``: where each string
        starts, as ``base`` plus its offset in ``block`` (the C call's pointers, with the first
        one as ``base``), in increasing order."""
        self._block = block
        self._starts = starts
        self._base = base
        self._n = len(starts)
        # Whether the block's only NULs are the separators: then a string can be found by
        # searching the block for it between NULs.
        self._plain = block.count(0) == self._n

    @classmethod
    def of(cls, items: Sequence[str | bytes]) -> "StringArray":
        """A StringArray of ``items`` (``str`` taken as UTF-8)."""
        raws = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in items]
        starts, at = [], 0
        for b in raws:
            starts.append(at)
            at += len(b) + 1
        return cls(b"".join(b + b"\0" for b in raws), starts)

    def __len__(self) -> int:
        return self._n

    def _span(self, j: int) -> tuple[int, int]:
        """Where element ``j`` (in range) lies in the block."""
        start = self._starts[j] - self._base
        end = self._starts[j + 1] - self._base - 1 if j + 1 < self._n else len(self._block) - 1
        return start, end

    def _element(self, j: int) -> str | bytes:
        start, end = self._span(j)
        return _text(self._block[start:end])

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return [self._element(j) for j in range(*key.indices(self._n))]
        j = operator.index(key)
        if j < 0:
            j += self._n
        if not 0 <= j < self._n:
            raise IndexError("libgguf: StringArray index out of range")
        return self._element(j)

    def tolist(self) -> list:
        """Every element, decoded at once, as a new ``list``."""
        if self._n == 0:
            return []
        if self._plain:
            try:
                items = self._block.decode("utf-8").split("\0")
            except UnicodeDecodeError:  # some string is not UTF-8: that one stays bytes
                items = [_text(b) for b in self._block.split(b"\0")]
            items.pop()  # what follows the last NUL
            return items
        return [self._element(j) for j in range(self._n)]  # some string holds a NUL byte

    def __iter__(self) -> Iterator[str | bytes]:
        return iter(self.tolist())

    def __reversed__(self) -> Iterator[str | bytes]:
        return reversed(self.tolist())

    def _find(self, value: object) -> int | None:
        """The index of the first element equal to ``value``, or ``None``."""
        if isinstance(value, str):
            try:
                raw = value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: no decoded element holds one
                return None
        elif isinstance(value, (bytes, bytearray)):
            raw = bytes(value)
            if isinstance(_text(raw), str):  # valid UTF-8: such an element is a str
                return None
        else:
            return None
        if b"\0" in raw and self._plain:
            return None  # the block's only NULs are separators
        if not self._plain:
            return next((j for j in range(self._n) if self._element(j) == value), None)
        # The element's bytes lie between two NULs (or start the block).
        if self._block.startswith(raw + b"\0"):
            return 0
        at = self._block.find(b"\0" + raw + b"\0")
        if at < 0:
            return None
        # The element starting just after that NUL.
        return bisect.bisect_left(self._starts, self._base + at + 1)

    def __contains__(self, value: object) -> bool:
        return self._find(value) is not None

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        if start == 0 and stop is None:
            j = self._find(value)
            if j is None:
                raise ValueError(f"libgguf: {value!r} is not in the StringArray")
            return j
        return super().index(value, start, stop if stop is not None else self._n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StringArray):
            if self._n != other._n:
                return False
            if self._plain and other._plain:
                return self._block == other._block
            return self.tolist() == other.tolist()
        if isinstance(other, (list, tuple)):
            return len(other) == self._n and self.tolist() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compares equal to lists, which do not hash

    def __reduce__(self) -> tuple:
        # For pickle and copy: the starts may be a view of the C library's pointers.
        return (StringArray, (self._block, [s - self._base for s in self._starts]))

    def __repr__(self) -> str:
        shown = [repr(self._element(j)) for j in range(min(self._n, _PREVIEW))]
        if self._n > _PREVIEW:
            shown.append("...")
        return f"<libgguf.StringArray of {self._n} strings: [{', '.join(shown)}]>"
