"""Chat templates: a conversation rendered into the prompt text exactly as transformers'
``apply_chat_template(..., tokenize=False)`` renders it, in libgguf's sandbox (the template reads
nothing but the conversation, and its work is bounded)."""

from __future__ import annotations

import ctypes
import json
from typing import Any

from . import _native


def _request(messages, tools, documents, add_generation_prompt, continue_final_message, kwargs):
    if isinstance(messages, (str, bytes)) or not hasattr(messages, "__iter__"):
        raise TypeError(f"messages must be a list of dicts, not {type(messages).__name__}")
    request: dict[str, Any] = {"messages": list(messages)}
    if tools is not None:
        request["tools"] = tools
    if documents is not None:
        request["documents"] = documents
    request["add_generation_prompt"] = add_generation_prompt
    request["continue_final_message"] = continue_final_message
    for key, value in kwargs.items():
        request[key] = value
    # allow_nan=False: NaN and infinities have no JSON form the library reads.
    return json.dumps(request, ensure_ascii=False, allow_nan=False).encode("utf-8")


# GGUF_CHAT_LLAMA_CPP (gguf.h).
_LLAMA_CPP = 1


def _render(
    lib, call, messages, tools, documents, add_generation_prompt, continue_final_message,
    llama_cpp, variables,
) -> str:
    """Every render path: the request as JSON, then ``call(request, request_len, out,
    out_size, flags)`` (one of the C render functions) with a buffer grown to the prompt's
    length."""
    raw = _request(
        messages, tools, documents, add_generation_prompt, continue_final_message, variables
    )
    flags = _LLAMA_CPP if llama_cpp else 0
    room = 4096
    while True:
        buf = ctypes.create_string_buffer(room)
        n = call(raw, len(raw), buf, room, flags)
        if n < 0:
            raise lib.error()
        if n <= room:
            return buf.raw[:n].decode("utf-8")
        room = n


class ChatTemplate:
    """A compiled chat template: :meth:`render` it over many conversations. Made by
    :meth:`GGUFFile.chat_template` (with the file's special tokens as defaults) or from a
    template's source."""

    def __init__(self, source: str, defaults: dict | None = None):
        self._lib = _native.load()
        raw = source.encode("utf-8")
        ptr = self._lib.gguf_chat_template_compile(raw, len(raw))
        if not ptr:
            raise self._lib.error()
        self._ptr = ptr
        self.source = source
        self._defaults = dict(defaults or {})

    def render(
        self,
        messages,
        tools=None,
        documents=None,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        llama_cpp: bool = False,
        **kwargs,
    ) -> str:
        """The prompt, as transformers renders it (with ``llama_cpp=True``: as llama-server
        renders it, ``GGUF_CHAT_LLAMA_CPP``). Other keyword arguments are template variables
        (``bos_token``, ``enable_thinking``, ...). Raises :class:`GGUFError` with the
        template's own message when it raises, or the line and column of what failed."""
        return _render(
            self._lib,
            lambda raw, n, buf, room, flags: self._lib.gguf_chat_template_render(
                self._ptr, raw, n, buf, room, flags
            ),
            messages, tools, documents, add_generation_prompt, continue_final_message,
            llama_cpp, {**self._defaults, **kwargs},
        )

    def close(self) -> None:
        """Frees the compiled template (also done when it is collected)."""
        if getattr(self, "_ptr", None):
            self._lib.gguf_chat_template_free(self._ptr)
            self._ptr = None

    def __del__(self):
        if not _native.exiting():
            self.close()


class FileChatTemplate:
    """One of a file's chat templates (:meth:`GGUFFile.chat_template`): rendered with the
    file's special tokens (``bos_token``, ``eos_token``, ...) as defaults that the keyword
    arguments replace (``gguf_chat_render``). Valid while the file is open."""

    def __init__(self, file, name: str | None):
        self._file = file
        self.name = name
        self._key = name.encode("utf-8") if name is not None else None

    def render(
        self,
        messages,
        tools=None,
        documents=None,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        llama_cpp: bool = False,
        **kwargs,
    ) -> str:
        """The prompt, as transformers renders it, or llama-server with ``llama_cpp=True``
        (see :meth:`ChatTemplate.render`)."""
        h = self._file._handle()
        return _render(
            h.lib,
            lambda raw, n, buf, room, flags: h.lib.gguf_chat_render(
                h.ptr, self._key, raw, n, buf, room, flags
            ),
            messages, tools, documents, add_generation_prompt, continue_final_message,
            llama_cpp, kwargs,
        )


def render_chat_template(
    template: str,
    messages,
    tools=None,
    documents=None,
    add_generation_prompt: bool = False,
    continue_final_message: bool | str = False,
    llama_cpp: bool = False,
    **kwargs,
) -> str:
    """Renders ``template`` (a chat template's source) over ``messages`` as transformers'
    ``apply_chat_template(..., tokenize=False)`` does (``gguf_chat_render_template``), or as
    llama-server does with ``llama_cpp=True``."""
    lib = _native.load()
    raw_t = template.encode("utf-8")
    return _render(
        lib,
        lambda raw, n, buf, room, flags: lib.gguf_chat_render_template(
            raw_t, len(raw_t), raw, n, buf, room, flags
        ),
        messages, tools, documents, add_generation_prompt, continue_final_message,
        llama_cpp, kwargs,
    )
