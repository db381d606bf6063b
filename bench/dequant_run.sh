#!/usr/bin/env bash
# The tensor-values benchmark (bench/dequant_bench.c): every type converted on one thread by
# libgguf and by ggml's own dequantizers, beside memcpy and plain stores of the output size, at
# three output sizes (in L1, L2, L3 here); whole tensors on many threads; validation
# against ggml's and against reading the file; then, on the same file (warm), the time of
# `cat FILE > /dev/null` and of `gguf-inspect --verify FILE` (which validates every tensor).
#
#   bench/dequant_run.sh [dequant_bench options]    e.g. -r 51 -n 4096,1048576 -m 256 -t 16
#   bench/dequant_run.sh -r 21 -n 262144,1048576 -y Q4_K,Q8_0 -a 16 -m 0   (two types, outputs
#                        16 bytes off 64-byte alignment, no threads, validation or cat)
#
# Builds the release library and the inspector, fetches ggml (make ggml) if needed, builds
# dequant_bench and runs it with target/tmp/dequant-bench for its model (removed at the end).
# Environment: CARGO, CC, MAKE, BENCH_DIR. GGUF_SIMD=scalar (or avx2) measures the portable (or
# AVX2) kernels.
. "$(dirname "$0")/common.sh"
dir=${BENCH_DIR:-target/tmp/dequant-bench}
$MAKE --quiet inspect
[ -f target/ggml/libggml-base.so ] || $MAKE ggml
mkdir -p "$dir"
build_bench dequant_bench -ldl -lpthread
target/bench/dequant_bench -k "$@" target/ggml "$dir"
model=$dir/dequant-bench.gguf
[ -f "$model" ] || exit 0 # -m 0: no file written
trap 'rm -f "$model"' EXIT
best() { # best of 5 wall times of "$@", in seconds
  local b=999 t0 t1
  for _ in 1 2 3 4 5; do
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    b=$(awk -v a="$b" -v c="$(( t1 - t0 ))" 'BEGIN { c /= 1e9; printf "%.4f", (c < a) ? c : a }')
  done
  echo "$b"
}
size=$(stat -c %s "$model")
echo
echo "== the same file, warm, best of 5 wall times (s): cat vs gguf-inspect --verify"
printf 'cat FILE > /dev/null        %6s s  (%d bytes)\n' "$(best cat "$model")" "$size"
printf 'gguf-inspect --verify FILE  %6s s\n' "$(best target/release/gguf-inspect --verify "$model")"
