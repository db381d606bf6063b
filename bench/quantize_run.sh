#!/usr/bin/env bash
# The quantization benchmark (bench/quantize_bench.c): every non-IQ type quantized on one thread
# by libgguf (gguf_quantize) and by ggml (ggml_quantize_chunk), without and with importance
# weights; outputs compared byte for byte.
#
#   bench/quantize_run.sh [quantize_bench options] [TYPE...]    e.g. -r 31 -n 64 Q4_K Q6_K
#
# Builds the release library, fetches ggml (make ggml) if needed, builds quantize_bench and
# runs it twice (plain, then -i). Environment: CARGO, CC, MAKE.
. "$(dirname "$0")/common.sh"
$CARGO build --release --lib --quiet
[ -f target/ggml/libggml-base.so ] || $MAKE ggml
build_bench quantize_bench -ldl
target/bench/quantize_bench "$@" target/ggml
echo
target/bench/quantize_bench -i "$@" target/ggml
