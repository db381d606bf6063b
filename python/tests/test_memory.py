"""``GGUFFile.memory_estimate``: the memory llama.cpp needs at a context size, each figure of
a small llama-shaped model worked out here from llama.cpp's rules (the context padded to 256
and split per sequence, K and V per layer and stream, the output buffer, the weights padded to
32 bytes), the keyword names and defaults, and the refusals."""

from __future__ import annotations

import os
import tempfile
import unittest

import libgguf
from libgguf import DataType, ErrorCode, GGUFError


def write_model(arch: str = "llama") -> str:
    """2 layers, width 64, 2 query heads of 32, 1 KV head, 100 dummy tokens, a training
    context of 1024; zero weights in F32."""
    fd, path = tempfile.mkstemp(suffix=".gguf")
    os.close(fd)
    with libgguf.Writer() as w:
        w.set("general.architecture", arch)
        w.set("tokenizer.ggml.model", "none")
        for key, v in [
            ("vocab_size", 100), ("block_count", 2), ("embedding_length", 64),
            ("context_length", 1024), ("feed_forward_length", 128),
            ("attention.head_count", 2), ("attention.head_count_kv", 1),
        ]:
            w.set(f"{arch}.{key}", v, type=libgguf.ValueType.UINT32)
        shapes = {"token_embd.weight": (64, 100), "output_norm.weight": (64,)}
        for i in range(2):
            shapes.update({
                f"blk.{i}.attn_norm.weight": (64,), f"blk.{i}.attn_q.weight": (64, 64),
                f"blk.{i}.attn_k.weight": (64, 32), f"blk.{i}.attn_v.weight": (64, 32),
                f"blk.{i}.attn_output.weight": (64, 64), f"blk.{i}.ffn_norm.weight": (64,),
                f"blk.{i}.ffn_gate.weight": (64, 128), f"blk.{i}.ffn_down.weight": (128, 64),
                f"blk.{i}.ffn_up.weight": (64, 128),
            })
        for name, shape in shapes.items():
            n = 1
            for d in shape:
                n *= d
            w.add_tensor(name, bytes(4 * n), dtype=DataType.F32, shape=shape)
        w.write_file(path)
    return path


class MemoryEstimateTest(unittest.TestCase):
    def setUp(self):
        self.path = write_model()
        self.addCleanup(os.unlink, self.path)

    def test_figures_follow_llama_cpp_rules(self):
        kv_row = 1 * 32 * 2  # KV heads x head size x F16
        with libgguf.open(self.path) as f:
            weights = sum((t.size + 31) // 32 * 32 for t in f.tensors)
            e = f.memory_estimate()  # n_ctx 0: the training context
            self.assertEqual((e.n_ctx, e.n_ctx_seq), (1024, 1024))
            self.assertEqual(e.k, 2 * 1024 * kv_row)
            self.assertEqual(e.v, e.k)
            self.assertEqual(e.recurrent, 0)
            self.assertEqual(e.output, 100 * 4)
            self.assertEqual(e.weights, weights)
            ts = f.tensors
            self.assertEqual(
                e.weights_mapped, ts[-1].file_offset + ts[-1].size - ts[0].file_offset
            )
            self.assertEqual(
                e.total, e.weights + e.k + e.v + e.recurrent + e.output + e.compute
            )
            # 1000 tokens over 3 sequences: 1024 / 3, padded to 512 each, 1536 in all.
            e = f.memory_estimate(n_ctx=1000, n_seq_max=3)
            self.assertEqual((e.n_ctx, e.n_ctx_seq), (1536, 512))
            self.assertEqual(e.k, 2 * 1536 * kv_row)
            self.assertEqual(e.output, 3 * 100 * 4)
            e = f.memory_estimate(n_ctx=1000, n_seq_max=3, kv_unified=True)
            self.assertEqual((e.n_ctx, e.n_ctx_seq), (1024, 1024))
            # Q8_0 K: 34 bytes per 32 values.
            e = f.memory_estimate(n_ctx=512, type_k="Q8_0", flash_attn="on")
            self.assertEqual(e.k, 2 * 512 * 34)
            self.assertEqual(e.v, 2 * 512 * kv_row)
            self.assertEqual(f.memory_estimate(type_k=DataType.Q8_0).k, 2 * 1024 * 34)

    def test_refusals(self):
        with libgguf.open(self.path) as f:
            with self.assertRaises(GGUFError) as e:
                f.memory_estimate(type_v="Q8_0", flash_attn="off")
            self.assertEqual(e.exception.code, ErrorCode.INVALID_ARGUMENT)
            self.assertIn("flash attention", str(e.exception))
            with self.assertRaises(ValueError):
                f.memory_estimate(flash_attn="sometimes")
            with self.assertRaises(ValueError):
                f.memory_estimate(type_k="F17")
            # Beyond the C fields' ranges: refused, never cut to their low bits (2**32 + 512
            # would be a context of 512, 2**31 GPU layers -2**31, all of them).
            for kw in (
                {"n_ctx": 2**32 + 512},
                {"n_ctx": -1},
                {"n_batch": 2**32},
                {"n_ubatch": -512},
                {"n_seq_max": 2**40},
                {"n_gpu_layers": 2**31},
                {"n_gpu_layers": -(2**31) - 1},
            ):
                with self.assertRaises(OverflowError, msg=str(kw)):
                    f.memory_estimate(**kw)
            with self.assertRaises(TypeError):
                f.memory_estimate(n_ctx=512.0)
            self.assertEqual(f.memory_estimate(n_gpu_layers=-(2**31)).n_ctx, 1024)
        other = write_model("no-such-arch")
        self.addCleanup(os.unlink, other)
        with libgguf.open(other) as f:
            with self.assertRaises(GGUFError) as e:
                f.memory_estimate()
            self.assertEqual(e.exception.code, ErrorCode.UNSUPPORTED)
            self.assertIn("no-such-arch", str(e.exception))


if __name__ == "__main__":
    unittest.main()
