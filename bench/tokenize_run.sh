#!/usr/bin/env bash
# The tokenizer benchmark (bench/tokenize_bench.c, figures in BENCHMARKS.md, "Tokenizing"): tokens per
# second on one thread, libgguf against llama.cpp's llama_tokenize in the same process, over the
# same text, for a SentencePiece, byte-level BPE and WordPiece vocabulary (and the others of
# llama.cpp's sources with TOKENIZE_ALL=1); and the time to build the tokenizer against
# llama.cpp's vocabulary load.
#
#   bench/tokenize_run.sh [-r ROUNDS]
#
# The text: llama.cpp's documentation and sources as the sdist vendors them, with every
# tokenizer test input (many scripts) between them, repeated to about 4 MB
# (target/tmp/tokenize-bench.txt). Environment: CARGO, CC, MAKE.
. "$(dirname "$0")/common.sh"
$MAKE --quiet lib
[ -f target/ggml/libllama.v0.5.0.so ] || $MAKE ggml
[ -f target/llama.cpp/models/ggml-vocab-llama-spm.gguf ] || $MAKE llama-src
mkdir -p target/tmp
build_bench tokenize_bench -ldl
text=target/tmp/tokenize-bench.txt
if [ ! -s "$text" ]; then
  : > "$text.part"
  while [ "$(stat -c %s "$text.part")" -lt 4000000 ]; do
    cat target/llama.cpp/README.md target/llama.cpp/docs/*.md target/llama.cpp/models/*.inp \
      target/llama.cpp/src/llama-vocab.cpp >> "$text.part" 2>/dev/null || true
  done
  mv "$text.part" "$text"
fi
m=target/llama.cpp/models
vocabs=("$m/ggml-vocab-llama-spm.gguf" "$m/ggml-vocab-gemma-4.gguf" "$m/ggml-vocab-llama-bpe.gguf"
  "$m/ggml-vocab-qwen2.gguf" "$m/ggml-vocab-bert-bge.gguf")
if [ "${TOKENIZE_ALL:-0}" = 1 ]; then vocabs=("$m"/ggml-vocab-*.gguf); fi
target/bench/tokenize_bench "$@" target/ggml/libllama.v0.5.0.so "$text" "${vocabs[@]}"
