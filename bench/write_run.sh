#!/usr/bin/env bash
# The writer benchmark (bench/write_bench.c), side by side with plain write() and cp.
#
#   bench/write_run.sh [write_bench options]    e.g. -r 41 -m 256, or -s to fsync on both sides
#
# Builds the release library and write_bench, then runs it on target/tmp/write-bench (the files
# it writes are removed at the end). Environment: CARGO, CC, BENCH_DIR (another directory, e.g.
# on another file system).
. "$(dirname "$0")/common.sh"
dir=${BENCH_DIR:-target/tmp/write-bench}
$CARGO build --release --lib --quiet
mkdir -p "$dir"
build_bench write_bench
target/bench/write_bench "$@" "$dir"
