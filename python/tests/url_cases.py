"""``libgguf.open(url)``: models read by range requests from the nginx that tests/url.rs starts
on the loopback (it runs this file; the name keeps unittest discovery, which has no server, away
from it).

The servers and models (tests/url.rs): $GGUF_TEST_HTTP and $GGUF_TEST_HTTPS are the bases
(ending in '/'), $GGUF_TEST_SILENT a URL that never answers, $SSL_CERT_FILE the test's CA.
vocab.gguf has a 262144-token vocabulary and tensors t0, t1, t2 of 1M, 256 and 1M FLOAT32
elements, byte j of tensor k being (k * 31 + j * 7 + 3) mod 256; small.gguf two tensors s0, s1
of 1024; split-0000i-of-00003.gguf is vocab.gguf one tensor to a shard; /gated/ wants the token
"sekrit".
"""

import os
import unittest

import numpy as np

import libgguf

HTTP = os.environ["GGUF_TEST_HTTP"]
HTTPS = os.environ["GGUF_TEST_HTTPS"]
SILENT = os.environ["GGUF_TEST_SILENT"]


def pattern(k, n):
    j = np.arange(n, dtype=np.uint64)
    return ((k * 31 + j * 7 + 3) % 256).astype(np.uint8)


class Url(unittest.TestCase):
    def check_vocab(self, f):
        self.assertEqual(len(f.metadata["tokenizer.ggml.tokens"]), 262144)
        self.assertFalse(f.is_mapped)
        self.assertEqual([t.name for t in f.tensors], ["t0", "t1", "t2"])
        for k, t in enumerate(f.tensors):
            got = f.read_tensor(t)
            self.assertEqual(got.shape, (t.shape[0],))
            self.assertTrue(np.array_equal(got.view(np.uint8), pattern(k, t.size)), t.name)

    def test_http(self):
        with libgguf.open(HTTP + "m/vocab.gguf") as f:
            self.check_vocab(f)
            t1 = f.tensor("t1")
            with self.assertRaises(libgguf.GGUFError):
                t1.data  # noqa: B018 (the data stays on the server)
            part = f.read_tensor("t0", offset=1000, size=100)
            self.assertEqual(bytes(part), pattern(0, 1100)[1000:].tobytes())
            outs = f.read_tensors(threads=4)
            for k, out in enumerate(outs):
                self.assertTrue(np.array_equal(out.view(np.uint8), pattern(k, out.nbytes)))

    def test_https(self):
        with libgguf.open(HTTPS + "m/small.gguf") as f:
            buf = bytearray(4096)
            f.read_tensor("s1", out=buf)
            self.assertEqual(bytes(buf), pattern(1, 4096).tobytes())

    def test_split_model_by_a_shards_url(self):
        with libgguf.open(HTTP + "m/split-00003-of-00003.gguf") as f:
            self.assertEqual(
                [s.path for s in f.shards],
                [HTTP + f"m/split-0000{i}-of-00003.gguf" for i in (1, 2, 3)],
            )
            self.check_vocab(f)
        with libgguf.open(HTTP + "m/split-00003-of-00003.gguf", single_shard=True) as f:
            self.assertEqual(len(f.shards), 1)

    def test_token(self):
        with self.assertRaises(libgguf.GGUFError) as e:
            libgguf.open(HTTP + "gated/small.gguf")
        self.assertEqual(e.exception.code, libgguf.ErrorCode.IO)
        self.assertIn("HTTP 401", str(e.exception))
        with libgguf.open(HTTP + "gated/small.gguf", token="sekrit") as f:
            self.assertEqual(len(f.tensors), 2)

    def test_errors(self):
        with self.assertRaises(libgguf.GGUFError) as e:
            libgguf.open(HTTP + "m/missing.gguf")
        self.assertIn("HTTP 404 Not Found for bytes 0-", str(e.exception))
        self.assertIn(HTTP + "m/missing.gguf", str(e.exception))
        with self.assertRaises(libgguf.GGUFError) as e:
            libgguf.open(SILENT, timeout=0.2)
        self.assertIn("no data from the server for 200 ms", str(e.exception))
        with self.assertRaises(ValueError):
            libgguf.open(SILENT, timeout=0)
        with self.assertRaises(TypeError):
            libgguf.open("model.gguf", token="sekrit")
        with self.assertRaises(libgguf.GGUFError) as e:
            libgguf.open(HTTP + "m/small.gguf", lock=True)
        self.assertEqual(e.exception.code, libgguf.ErrorCode.INVALID_ARGUMENT)


if __name__ == "__main__":
    unittest.main()
