#!/usr/bin/env bash
# The memory-estimate benchmark (bench/memory_bench.c, figures in BENCHMARKS.md, "Memory
# estimate"): gguf_memory_estimate against llama.cpp's memory-fit load (no_alloc, no mmap, then
# a context) of the same file, in one process, on the bundled sample and a Llama 3 8B-shaped
# header (examples/make_memory_model.rs, a sparse file).
#
#   bench/memory_run.sh [-r ROUNDS]
#
# Environment: CARGO, CC, MAKE.
. "$(dirname "$0")/common.sh"
$MAKE --quiet lib
[ -f target/ggml/llama.cpp-v0.5.0/include/llama.h ] || $MAKE ggml
mkdir -p target/bench-models
$CARGO run --quiet --release --example make_memory_model target/bench-models/llama3-8b-shape.gguf
g=target/ggml
h=$g/llama.cpp-v0.5.0
build_bench memory_bench -I"$h/include" -I"$h/ggml/include" -L"$g" -l:libllama.v0.5.0.so \
  -l:libggml.v0.5.0.so -lggml-base -Wl,-rpath,"$PWD/$g"
target/bench/memory_bench "$@" "$g/libggml-cpu-x64.so" testdata/sample.gguf \
  target/bench-models/llama3-8b-shape.gguf
