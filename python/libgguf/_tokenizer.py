"""The tokenizer of a file's vocabulary (``GGUFFile.tokenizer()``): text to tokens and back,
exactly as llama.cpp's ``llama_tokenize`` / ``llama_detokenize``.

    with libgguf.open("model.gguf") as f:
        tok = f.tokenizer()            # independent of the file once made
    ids = tok.encode("Hello world")    # BOS added as the model says
    text = tok.decode(ids)

A tokenizer is immutable: any number of threads may use one at once.
"""

from __future__ import annotations

import ctypes
from typing import Any, Iterable

from . import _convert
from ._native import GGUFSpecialTokens

# Flags of include/gguf.h.
_ADD_SPECIAL = 1
_PARSE_SPECIAL = 2
_REMOVE_SPECIAL = 1
_UNPARSE_SPECIAL = 2

def _token_id(value: Any) -> int:
    """A token id for a C call: an integer (``TypeError`` otherwise) within int32_t
    (``OverflowError`` otherwise, rather than wrapping onto another token)."""
    return _convert.i32(value, "a token id")


class Tokenizer:
    """A file's vocabulary made into a tokenizer (see :meth:`GGUFFile.tokenizer`)."""

    def __init__(self, lib: Any, ptr: int):
        self._lib = lib
        self._ptr = ptr
        #: How many tokens the vocabulary has.
        self.n_tokens: int = lib.gguf_tokenizer_n_tokens(ptr)
        s = GGUFSpecialTokens()
        if not lib.gguf_tokenizer_special_tokens(ptr, ctypes.byref(s)):
            raise lib.error()
        #: The special tokens: ``{"bos": 1, "eos": 2, ...}``, ``None`` where there is none.
        self.special_tokens: dict = {
            name: (None if getattr(s, name) < 0 else getattr(s, name))
            for name, _ in GGUFSpecialTokens._fields_
            if name not in ("add_bos", "add_eos")
        }
        #: Whether ``encode(..., add_special=True)`` adds BOS, and EOS.
        self.add_bos: bool = bool(s.add_bos)
        self.add_eos: bool = bool(s.add_eos)

    def __del__(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            self._lib.gguf_tokenizer_close(ptr)

    def __repr__(self) -> str:
        return f"<libgguf.Tokenizer {self.n_tokens} tokens>"

    def encode(
        self, text: str | bytes, add_special: bool = True, parse_special: bool = False
    ) -> list:
        """The token ids of ``text`` (``str``, encoded as UTF-8, or any ``bytes``).
        ``add_special`` adds the model's BOS/EOS; ``parse_special`` reads special-token text
        (``<|im_start|>``) as those tokens. Anything else (an ``int``, which ``bytes()`` would
        make that many NUL bytes) raises ``TypeError``."""
        raw = _convert.text_bytes(text, "text to tokenize")
        flags = (_ADD_SPECIAL if add_special else 0) | (_PARSE_SPECIAL if parse_special else 0)
        room = len(raw) + 8
        while True:
            out = (ctypes.c_int32 * room)()
            n = self._lib.gguf_tokenize(self._ptr, raw, len(raw), out, room, flags)
            if n < 0:
                raise self._lib.error()
            if n <= room:
                return list(out[:n])
            room = n

    def decode_bytes(
        self, ids: Iterable[int], remove_special: bool = False, unparse_special: bool = False
    ) -> bytes:
        """The text of ``ids`` as bytes (a token may end inside a UTF-8 sequence). An id that
        is not an integer raises ``TypeError``; one outside int32_t, ``OverflowError``."""
        ids = [_token_id(i) for i in ids]
        arr = (ctypes.c_int32 * len(ids))(*ids)
        flags = (_REMOVE_SPECIAL if remove_special else 0) | (
            _UNPARSE_SPECIAL if unparse_special else 0
        )
        room = len(ids) * 8 + 16
        while True:
            buf = ctypes.create_string_buffer(room)
            n = self._lib.gguf_detokenize(self._ptr, arr, len(ids), buf, room, flags)
            if n < 0:
                raise self._lib.error()
            if n <= room:
                return buf.raw[:n]
            room = n

    def decode(
        self, ids: Iterable[int], remove_special: bool = False, unparse_special: bool = False
    ) -> str:
        """The text of ``ids``, as llama.cpp's ``llama_detokenize`` (invalid UTF-8 replaced)."""
        return self.decode_bytes(ids, remove_special, unparse_special).decode("utf-8", "replace")

    def token_to_piece(self, token: int, special: bool = False) -> bytes:
        """One token's text (control tokens' only with ``special``)."""
        token = _token_id(token)
        room = 64
        while True:
            buf = ctypes.create_string_buffer(room)
            n = self._lib.gguf_token_to_piece(
                self._ptr, token, buf, room, _UNPARSE_SPECIAL if special else 0
            )
            if n < 0:
                raise self._lib.error()
            if n <= room:
                return buf.raw[:n]
            room = n

    def is_eog(self, token: int) -> bool:
        """Whether ``token`` ends generation (``OverflowError`` for an id outside int32_t)."""
        return bool(self._lib.gguf_token_is_eog(self._ptr, _token_id(token)))
