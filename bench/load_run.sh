#!/usr/bin/env bash
# The loading benchmark (bench/load_bench.c): every tensor of a multi-gigabyte model into caller
# buffers, cold and warm page cache, gguf_read_tensors direct and buffered against memcpy from a
# fresh mapping and `dd iflag=direct bs=16M`, side by side in one run.
#
#   bench/load_run.sh [load_bench options]    e.g. -r 7 -g 3 -t 4
#
# Builds the release library and load_bench, writes the model (3 GiB by default) to
# target/tmp/load-bench unless it exists, runs, and removes the model (KEEP_MODEL=1 keeps it).
# Environment: CARGO, CC, BENCH_DIR (another directory, e.g. on another device).
. "$(dirname "$0")/common.sh"
dir=${BENCH_DIR:-target/tmp/load-bench}
$CARGO build --release --lib --quiet
mkdir -p "$dir"
build_bench load_bench
model="$dir/load-model.gguf"
[ "${KEEP_MODEL:-0}" = 1 ] || trap 'rm -f "$model"' EXIT
uname -srm
grep -m1 'model name' /proc/cpuinfo 2>/dev/null || true
df -hT "$dir" | tail -1
target/bench/load_bench "$@" "$model"
