#!/usr/bin/env bash
# The open benchmark, side by side: libgguf, ggml's own parser, the bare floor walk and the
# reference Python reader, on models shaped like Gemma 3 and Llama 3 (bench/models.rs).
#
#   bench/run.sh            builds everything, then: open_bench (21 rounds), the Python reference
#                           on the two big vocabularies (3 rounds), heap counts under valgrind
#   bench/run.sh --quick    the same with 5 rounds and without the Python reference (CI smoke run)
#
# Environment: BENCH_ROUNDS (open_bench rounds), PY_ROUNDS (Python rounds), CARGO, CC, MAKE.
# Output: the tables on stdout; every RESULT line also in target/bench/results.txt.
# Fails (non-zero) if any step fails, any reader refuses a model or the readers disagree.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    *) echo "usage: bench/run.sh [--quick]" >&2; exit 2 ;;
  esac
done
CARGO=${CARGO:-cargo}
CC=${CC:-cc}
MAKE=${MAKE:-make}
models=target/bench-models
out=target/bench
if [ $quick = 1 ]; then rounds=${BENCH_ROUNDS:-5}; else rounds=${BENCH_ROUNDS:-21}; fi
py_rounds=${PY_ROUNDS:-3}
start=$(date +%s)

echo "== build: release library, ggml's libggml-base.so, models, C programs"
$CARGO build --release --lib --quiet
$MAKE --no-print-directory ggml
[ $quick = 1 ] || $MAKE --no-print-directory venv
# The generator runs in the dev profile: its dependencies are the ones `make test` builds.
$CARGO run --quiet --example make_bench_models -- "$models"
mkdir -p "$out"
root=$PWD
cflags=(-std=c11 -O2 -Wall -Wextra -Werror -Iinclude -Ibench -Itests/ggml)
libs=(-Ltarget/release -lgguf -Ltarget/ggml -l:libggml-base.so
      "-Wl,-rpath,$root/target/release:$root/target/ggml")
$CC "${cflags[@]}" -o "$out/open_bench" bench/open_bench.c "${libs[@]}"
$CC "${cflags[@]}" -o "$out/open_once" bench/open_once.c "${libs[@]}"

files=("$models/gemma3-like.gguf" "$models/llama3-like.gguf" "$models/many-tensors.gguf"
       "$models/gemma3-like-1tib.gguf")
echo
echo "== open_bench -r $rounds (libgguf, ggml, floor: alternating round-robin in one process)"
"$out/open_bench" -r "$rounds" "${files[@]}" | tee "$out/open_bench.txt"
grep '^RESULT ' "$out/open_bench.txt" > "$out/results.txt"

if [ $quick = 0 ]; then
  echo
  echo "== the reference reader: gguf.GGUFReader (PyPI gguf), $py_rounds rounds"
  for f in "${files[@]:0:2}"; do
    .venv/bin/python bench/reference_open.py "$f" "$py_rounds" | tee -a "$out/python.txt"
  done
  grep '^RESULT ' "$out/python.txt" >> "$out/results.txt"
  rm -f "$out/python.txt"
fi

echo
if command -v valgrind >/dev/null; then
  echo "== heap allocations of one open (valgrind memcheck; minus the process's own baseline)"
  heap() { # MODE FILE -> "ALLOCS BYTES"
    valgrind --tool=memcheck "$out/open_once" "$1" "$2" 2>&1 >/dev/null |
      sed -n 's/.*total heap usage: \([0-9,]*\) allocs, [0-9,]* frees, \([0-9,]*\) bytes allocated.*/\1 \2/p' |
      tr -d ,
  }
  printf '%-20s %-46s %10s %14s\n' file what allocs bytes
  for f in "${files[@]:0:2}"; do
    name=$(basename "$f")
    counts=$(heap none "$f")
    read -r base_n base_b <<< "$counts"
    for mode in ours tokens ggml; do
      counts=$(heap "$mode" "$f")
      read -r n b <<< "$counts"
      if [ -z "${b:-}" ]; then
        echo "bench/run.sh: no heap summary from valgrind for $mode $f" >&2
        exit 1
      fi
      case $mode in
        ours) what="libgguf gguf_open + gguf_close" ;;
        tokens) what="libgguf open + gguf_get_string_array + close" ;;
        ggml) what="ggml gguf_init_from_file + gguf_free" ;;
      esac
      printf '%-20s %-46s %10d %14d\n' "$name" "$what" $((n - base_n)) $((b - base_b))
      echo "RESULT file=$name what=heap_$mode allocs=$((n - base_n)) bytes=$((b - base_b))" >> "$out/results.txt"
    done
  done
else
  echo "== valgrind not found: heap counts skipped"
fi

echo
echo "== summary (medians, ms; \"(of min)\": the ratio of the fastest rounds)"
awk '
  /^RESULT / {
    delete kv
    for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
    f = kv["file"]; w = kv["what"]
    if (!(f in seen)) { seen[f] = 1; order[++n] = f }
    if ("median_ms" in kv) { ms[f, w] = kv["median_ms"]; mn[f, w] = kv["min_ms"] }
  }
  function show(v) { return v == "" ? "-" : sprintf("%.3f", v) }
  function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.1fx", a / b) }
  END {
    printf "%-24s %10s %10s %10s %12s %10s %10s %10s %10s\n", "file", "libgguf", "ggml", "floor", \
      "python ref", "ggml/ours", "(of min)", "py/ours", "ours/floor"
    for (i = 1; i <= n; i++) {
      f = order[i]; o = ms[f, "open_ours"]
      printf "%-24s %10s %10s %10s %12s %10s %10s %10s %10s\n", f, show(o), show(ms[f, "open_ggml"]), \
        show(ms[f, "open_floor"]), show(ms[f, "open_reference_py"]), ratio(ms[f, "open_ggml"], o), \
        ratio(mn[f, "open_ggml"], mn[f, "open_ours"]), ratio(ms[f, "open_reference_py"], o), \
        ratio(o, ms[f, "open_floor"])
    }
  }' "$out/results.txt"
echo
echo "bench/run.sh: done in $(($(date +%s) - start)) s; RESULT lines in $out/results.txt"
