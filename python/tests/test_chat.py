"""Chat templates from Python (``libgguf.render_chat_template``, ``GGUFFile.chat_template``)
against transformers' own renderer on the templates inside llama.cpp's vocabulary files
(``$GGUF_LLAMA_SRC_DIR``, else the checkout's ``target/llama.cpp``), and the API's errors."""

from __future__ import annotations

import os
import unittest

import libgguf
from libgguf import GGUFError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA_SRC = os.environ.get("GGUF_LLAMA_SRC_DIR") or os.path.join(ROOT, "target", "llama.cpp")
COMMAND_R = os.path.join(LLAMA_SRC, "models", "ggml-vocab-command-r.gguf")

MESSAGES = [
    {"role": "system", "content": "Réponds en français."},
    {"role": "user", "content": "Hello 👋"},
    {"role": "assistant", "content": "Bonjour !"},
    {"role": "user", "content": "{{ 7*7 }} and 1e-07"},
]


def transformers_render(template, messages, **kwargs):
    from transformers.utils import chat_template_utils as ctu

    rendered, _ = ctu.render_jinja_template(
        conversations=[ctu._normalize_chat_messages(messages)], chat_template=template, **kwargs
    )
    return rendered[0]


class ChatTemplates(unittest.TestCase):
    def test_a_files_templates_render_as_transformers_renders_them(self):
        with libgguf.open(COMMAND_R) as f:
            self.assertEqual(f.chat_templates, [None, "tool_use", "rag"])
            source = f.metadata["tokenizer.chat_template"]
            ours = f.chat_template().render(MESSAGES, add_generation_prompt=True)
            tokens = f.metadata["tokenizer.ggml.tokens"]
            bos = tokens[f.metadata["tokenizer.ggml.bos_token_id"]]
            eos = tokens[f.metadata["tokenizer.ggml.eos_token_id"]]
            want = transformers_render(
                source, MESSAGES, add_generation_prompt=True, bos_token=bos, eos_token=eos
            )
            self.assertEqual(ours, want)
            self.assertTrue(ours.startswith(bos))
            with self.assertRaises(GGUFError) as e:
                f.chat_template("missing")
            self.assertEqual(e.exception.code, libgguf.ErrorCode.NOT_FOUND)

    def test_a_given_template_and_a_compiled_one(self):
        template = (
            "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{% endfor %}"
            "{{ tools | tojson(indent=2) }}{% if add_generation_prompt %}<a>{% endif %}"
        )
        tools = [{"type": "function", "function": {"name": "f", "parameters": {"x": 1.5}}}]
        want = transformers_render(template, MESSAGES, tools=tools, add_generation_prompt=True)
        got = libgguf.render_chat_template(template, MESSAGES, tools=tools, add_generation_prompt=True)
        self.assertEqual(got, want)
        compiled = libgguf.ChatTemplate(template)
        for _ in range(3):
            self.assertEqual(compiled.render(MESSAGES, tools=tools, add_generation_prompt=True), want)
        compiled.close()

    def test_llama_servers_rendering(self):
        template = "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
        messages = [{"role": "developer", "content": "a"}, {"role": "user", "content": "b"}]
        self.assertEqual(libgguf.render_chat_template(template, messages), "[developer:a][user:b]")
        # llama-server makes the developer role a system one (the template shows system text).
        got = libgguf.render_chat_template(template, messages, llama_cpp=True)
        self.assertEqual(got, "[system:a][user:b]")
        self.assertEqual(libgguf.ChatTemplate(template).render(messages, llama_cpp=True), got)

    def test_errors_carry_the_templates_message(self):
        with self.assertRaises(GGUFError) as e:
            libgguf.render_chat_template("{{ raise_exception('roles must alternate') }}", MESSAGES)
        self.assertEqual(e.exception.code, libgguf.ErrorCode.TEMPLATE_RENDER)
        self.assertIn("roles must alternate", str(e.exception))
        with self.assertRaises(GGUFError) as e:
            libgguf.render_chat_template("{% for %}", MESSAGES)
        self.assertEqual(e.exception.code, libgguf.ErrorCode.TEMPLATE_SYNTAX)
        with self.assertRaises(TypeError):
            libgguf.render_chat_template("x", "not a list")
        with self.assertRaises(ValueError):
            libgguf.render_chat_template("x", [{"role": "user", "content": float("nan")}])


if __name__ == "__main__":
    unittest.main()
