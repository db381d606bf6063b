#!/usr/bin/env bash
# The tensor-values benchmark (bench/dequant_bench.c): every type converted on one thread by
# libgguf, by ggml's own dequantizers and by memcpy; whole tensors on many threads; validation
# against ggml's and against reading the file (and `cat > /dev/null`, timed here).
#
#   bench/dequant_run.sh [dequant_bench options]    e.g. -r 51 -n 1048576 -m 256 -t 16
#
# Builds the release library, fetches ggml (make ggml) if needed, builds dequant_bench, runs it
# with target/tmp/dequant-bench for its temporary model. Environment: CARGO, CC, MAKE, BENCH_DIR.
# Set GGUF_SIMD=scalar (or avx2) to measure the portable (or AVX2) kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
CC=${CC:-cc}
MAKE=${MAKE:-make}
dir=${BENCH_DIR:-target/tmp/dequant-bench}
$CARGO build --release --lib --quiet
[ -f target/ggml/libggml-base.so ] || $MAKE ggml
mkdir -p target/bench "$dir"
$CC -std=c11 -O2 -Wall -Wextra -Werror -Iinclude bench/dequant_bench.c -Ltarget/release -lgguf \
  -ldl -lpthread -Wl,-rpath,"$PWD/target/release" -o target/bench/dequant_bench
target/bench/dequant_bench "$@" target/ggml "$dir"
