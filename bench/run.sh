#!/usr/bin/env bash
# The open benchmark, side by side: libgguf, ggml's own parser, the bare floor walk and the
# reference Python reader, on models shaped like Gemma 3 and Llama 3 and on files of 1000, 10000
# and 100000 tensors (bench/models.rs).
#
#   bench/run.sh            builds everything, then: open_bench (21 rounds), the Python reference
#                           on the two big vocabularies (3 rounds), heap counts under valgrind,
#                           instruction counts of one open under callgrind
#   bench/run.sh --quick    the same with 5 rounds, without the Python reference and the
#                           100000-tensor file, instruction counts only on the 1000- and
#                           10000-tensor files and ggml's only on the first (CI smoke run)
#
# ggml is left out on the 100000-tensor file (open_bench -G): its open compares every tensor name
# with every earlier one, about a minute an open there.
#
# Environment: BENCH_ROUNDS (open_bench rounds), PY_ROUNDS (Python rounds), CARGO, CC, MAKE;
# BASELINE_LIB_DIR: a directory holding another build's libgguf.so (say, main's), whose
# open_bench and instruction counts are then run too, labelled "baseline", for before/after.
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
$MAKE -s --no-print-directory lib  # the library `make` builds (its soname), so that no later step builds it again
$MAKE --no-print-directory ggml
[ $quick = 1 ] || $MAKE --no-print-directory venv
names=(gemma3-like.gguf llama3-like.gguf many-tensors.gguf gemma3-like-1tib.gguf
       tensors-1k.gguf tensors-10k.gguf)
[ $quick = 1 ] || names+=(tensors-100k.gguf)
# The generator runs in the dev profile: its dependencies are the ones `make test` builds.
$CARGO run --quiet --example make_bench_models -- "$models" --only "$(IFS=,; echo "${names[*]}")"
mkdir -p "$out"
root=$PWD
cflags=(-std=c11 -O2 -Wall -Wextra -Werror -Iinclude -Ibench -Itests/ggml)
build_c() { # LIBDIR SUFFIX: open_bench and open_once linked to LIBDIR's libgguf.so
  local libs=(-L"$1" -lgguf -Ltarget/ggml -l:libggml-base.so "-Wl,-rpath,$1:$root/target/ggml")
  $CC "${cflags[@]}" -o "$out/open_bench$2" bench/open_bench.c "${libs[@]}"
  $CC "${cflags[@]}" -o "$out/open_once$2" bench/open_once.c "${libs[@]}"
}
build_c "$root/target/release" ""
baseline=${BASELINE_LIB_DIR:-}
if [ -n "$baseline" ]; then
  baseline=$(cd "$baseline" && pwd)
  build_c "$baseline" "_baseline"
fi

files=()
for n in "${names[@]}"; do files+=("$models/$n"); done
echo
echo "== open_bench -r $rounds (libgguf, ggml, floor: alternating round-robin in one process)"
"$out/open_bench" -r "$rounds" -G 20000 "${files[@]}" | tee "$out/open_bench.txt"
grep '^RESULT ' "$out/open_bench.txt" > "$out/results.txt"
if [ -n "$baseline" ]; then
  echo
  echo "== the same with the baseline library ($baseline/libgguf.so)"
  "$out/open_bench_baseline" -r "$rounds" -G 20000 "${files[@]}" | tee "$out/open_bench_baseline.txt"
  grep '^RESULT ' "$out/open_bench_baseline.txt" | sed 's/^RESULT /RESULT lib=baseline /' >> "$out/results.txt"
fi

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
if command -v valgrind >/dev/null; then
  echo "== instructions of one open (callgrind, counting only the open: open_once_* in bench/open_once.c)"
  instr() { # EXE MODE FILE -> instruction count
    valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect="open_once_$2" \
      "$1" "$2" "$3" 2>&1 | sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
  }
  printf '%-24s %8s %14s %14s %14s %14s %10s %10s %11s\n' file tensors libgguf baseline floor ggml \
    ours/floor base/floor "per tensor"
  counted=(tensors-1k.gguf tensors-10k.gguf)
  [ $quick = 1 ] || counted=(gemma3-like.gguf llama3-like.gguf "${counted[@]}" tensors-100k.gguf)
  for n in "${counted[@]}"; do
    [ -f "$models/$n" ] && [[ " ${names[*]} " == *" $n "* ]] || continue
    t=$(sed -n "s/^$n: .*, \([0-9]*\) tensors.*/\1/p" "$out/open_bench.txt")
    ours=$(instr "$out/open_once" ours "$models/$n")
    floor=$(instr "$out/open_once" floor "$models/$n")
    base=-
    [ -z "$baseline" ] || base=$(instr "$out/open_once_baseline" ours "$models/$n")
    ggml=-
    # ggml's open is quadratic in the tensor count: 1.6e9 instructions at 10000 tensors.
    if [ "$t" -le 1000 ] || { [ $quick = 0 ] && [ "$t" -le 20000 ]; }; then
      ggml=$(instr "$out/open_once" ggml "$models/$n")
    fi
    if [ -z "$ours" ] || [ -z "$floor" ] || [ -z "$ggml" ] || [ -z "$base" ]; then
      echo "bench/run.sh: no instruction count from callgrind for $n" >&2
      exit 1
    fi
    ratio() { [ "$1" = - ] && echo - || awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
    per=$(awk -v a="$ours" -v b="$floor" -v t="$t" 'BEGIN { printf "%.0f (%.0f)", a / t, b / t }')
    printf '%-24s %8d %14s %14s %14s %14s %10s %10s %11s\n' "$n" "$t" "$ours" "$base" "$floor" \
      "$ggml" "$(ratio "$ours" "$floor")" "$(ratio "$base" "$floor")" "$per"
    echo "RESULT file=$n what=instructions ours=$ours baseline=$base floor=$floor ggml=$ggml tensors=$t" >> "$out/results.txt"
  done
  echo "(per tensor: libgguf's, then the floor's, instructions per tensor)"
else
  echo "== valgrind not found: instruction counts skipped"
fi

echo
echo "== summary (medians, ms; \"(of min)\": the ratio of the fastest rounds)"
awk '
  /^RESULT / {
    delete kv
    for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
    f = kv["file"]; w = kv["what"]
    if (kv["lib"] == "baseline") { if (w == "open_ours") base[f] = kv["median_ms"]; next }
    if (!(f in seen)) { seen[f] = 1; order[++n] = f }
    if ("median_ms" in kv) { ms[f, w] = kv["median_ms"]; mn[f, w] = kv["min_ms"] }
  }
  function show(v) { return v == "" ? "-" : sprintf("%.3f", v) }
  function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.1fx", a / b) }
  END {
    printf "%-24s %10s %10s %10s %10s %12s %10s %10s %10s %10s %10s\n", "file", "libgguf", "baseline", \
      "ggml", "floor", "python ref", "ggml/ours", "(of min)", "py/ours", "ours/floor", "base/floor"
    for (i = 1; i <= n; i++) {
      f = order[i]; o = ms[f, "open_ours"]
      printf "%-24s %10s %10s %10s %10s %12s %10s %10s %10s %10s %10s\n", f, show(o), show(base[f]), \
        show(ms[f, "open_ggml"]), show(ms[f, "open_floor"]), show(ms[f, "open_reference_py"]), \
        ratio(ms[f, "open_ggml"], o), ratio(mn[f, "open_ggml"], mn[f, "open_ours"]), \
        ratio(ms[f, "open_reference_py"], o), ratio(o, ms[f, "open_floor"]), \
        ratio(base[f], ms[f, "open_floor"])
    }
  }' "$out/results.txt"
echo
echo "bench/run.sh: done in $(($(date +%s) - start)) s; RESULT lines in $out/results.txt"
