"""The tokenizer from Python (``GGUFFile.tokenizer()``) against llama.cpp's own tokenizer test
files (``models/ggml-vocab-*.gguf`` with ``.inp`` / ``.out``, in llama.cpp's sources:
``$GGUF_LLAMA_SRC_DIR``, else the checkout's ``target/llama.cpp``), one vocabulary of each
algorithm; and the API's rules (ownership, flags, errors)."""

from __future__ import annotations

import os
import tempfile
import threading
import unittest

import libgguf
from libgguf import GGUFError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA_SRC = os.environ.get("GGUF_LLAMA_SRC_DIR") or os.path.join(ROOT, "target", "llama.cpp")


def vocab(name: str) -> str:
    return os.path.join(LLAMA_SRC, "models", f"ggml-vocab-{name}.gguf")


def cases(name: str) -> list:
    with open(vocab(name) + ".inp", "rb") as f:
        texts = f.read().split(b"\n__ggml_vocab_test__\n")
    if texts and texts[-1] == b"":
        texts.pop()
    with open(vocab(name) + ".out", encoding="utf-8") as f:
        ids = [[int(t) for t in line.split()] for line in f.read().splitlines()]
    assert len(texts) == len(ids), name
    return list(zip(texts, ids))


class LlamaTestFiles(unittest.TestCase):
    def test_each_algorithm_gives_llama_cpp_s_tokens(self):
        for name in ("llama-spm", "llama-bpe", "bert-bge", "gemma-4"):
            with self.subTest(vocab=name):
                with libgguf.open(vocab(name)) as f:
                    tok = f.tokenizer()
                checked = 0
                for text, want in cases(name):
                    self.assertEqual(tok.encode(text, add_special=False), want, text)
                    checked += 1
                self.assertGreater(checked, 10)


class Api(unittest.TestCase):
    def setUp(self):
        with libgguf.open(vocab("llama-spm")) as f:
            self.tok = f.tokenizer()  # used after the file is closed

    def test_encode_and_decode(self):
        tok = self.tok
        self.assertEqual(tok.special_tokens["bos"], 1)
        self.assertEqual(tok.special_tokens["eos"], 2)
        self.assertIsNone(tok.special_tokens["eot"])
        self.assertTrue(tok.add_bos)
        self.assertFalse(tok.add_eos)
        self.assertEqual(tok.n_tokens, 32000)
        ids = tok.encode("Hello world")
        self.assertEqual(ids, [1, 15043, 3186])
        self.assertEqual(tok.encode(b"Hello world", add_special=False), [15043, 3186])
        self.assertEqual(tok.decode(ids[1:]), "Hello world")
        self.assertEqual(tok.decode(ids, unparse_special=True), "<s> Hello world")
        self.assertEqual(tok.encode("</s>", add_special=False, parse_special=True), [2])
        self.assertNotEqual(tok.encode("</s>", add_special=False), [2])
        self.assertEqual(tok.token_to_piece(15043), b" Hello")
        self.assertEqual(tok.token_to_piece(1), b"")
        self.assertEqual(tok.token_to_piece(1, special=True), b"<s>")
        self.assertTrue(tok.is_eog(2))
        self.assertFalse(tok.is_eog(1))
        # Long text: the buffers grow as needed.
        long = "llama " * 3000
        self.assertEqual(tok.decode(tok.encode(long, add_special=False)), long)

    def test_errors(self):
        with self.assertRaises(GGUFError) as e:
            self.tok.decode([1, 32000])
        self.assertIn("token id 32000 is not in the vocabulary", str(e.exception))
        with self.assertRaises(GGUFError):
            self.tok.token_to_piece(-1)
        # Ids past int32_t are refused, not wrapped onto the token they would be modulo 2^32.
        eos = self.tok.special_tokens["eos"]
        for call in (
            lambda: self.tok.decode([2**32 + 5]),
            lambda: self.tok.decode_bytes([1, -(2**31) - 1]),
            lambda: self.tok.is_eog(2**32 + eos),
            lambda: self.tok.token_to_piece(2**32 + 15043),
        ):
            with self.assertRaises(OverflowError):
                call()
        # Text is str or bytes-like: an int is not five NUL bytes, a float not an id.
        for text in (5, 2.0, None, [104, 105]):
            with self.assertRaises(TypeError, msg=repr(text)):
                self.tok.encode(text)
        with self.assertRaises(TypeError):
            self.tok.decode([1.0])
        self.assertEqual(
            self.tok.encode(bytearray(b"Hello"), add_special=False),
            self.tok.encode(memoryview(b"Hello"), add_special=False),
        )
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "no_vocab.gguf")
            w = libgguf.Writer()
            w.set_string("general.name", "no vocabulary")
            w.write_file(path)
            with libgguf.open(path) as f, self.assertRaises(GGUFError) as e:
                f.tokenizer()
            self.assertIn("no tokenizer", str(e.exception))
            w = libgguf.Writer()
            w.set_string("tokenizer.ggml.model", "llamas")
            w.write_file(path)
            with libgguf.open(path) as f, self.assertRaises(GGUFError) as e:
                f.tokenizer()
            self.assertIn("unknown tokenizer model 'llamas'", str(e.exception))

    def test_threads_share_one_tokenizer(self):
        want = self.tok.encode("The quick brown fox 🦙")
        errors = []

        def work():
            for _ in range(50):
                if self.tok.encode("The quick brown fox 🦙") != want:
                    errors.append("differs")

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main()
