#!/usr/bin/env bash
# Digest speed, side by side, warm cache: `gguf-inspect --hash` (the five streams of gguf_hash.py's
# output, each on a thread), the C API's single-stream SHA-256 / SHA-1 / XXH64 of all tensor data
# (bench/digest_file.c), against `sha256sum`, `sha1sum` and `cat FILE > /dev/null` of the same
# file, `openssl dgst` (SHA instructions where the CPU has them; coreutils' sums may not use them),
# and the reference `python -m gguf.scripts.gguf_hash`.
#
#   bench/digest.sh [SIZE_MIB]     (default 1024: a file of 64 I8 tensors of pseudo-random bytes,
#                                  written by bench/digest_file.c --make)
#
# Environment: ROUNDS (default 9), PYTHON (default .venv/bin/python), CC, CARGO; SKIP_BUILD=1
# uses target/release as it is. Prints per command the minimum and median seconds and GB/s
# (10^9 bytes of the file per second).
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-1024}
rounds=${ROUNDS:-9}
PYTHON=${PYTHON:-.venv/bin/python}
CC=${CC:-cc}
CARGO=${CARGO:-cargo}
out=target/bench
mkdir -p "$out"
model=$out/digest-${size_mib}m.gguf

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  $CARGO build --release --lib --quiet
  $CC -std=c99 -O2 -Wall -Wextra -Werror -pthread -Iinclude -o target/release/gguf-inspect \
    tools/gguf-inspect.c -Ltarget/release -lgguf -Wl,-rpath,'$ORIGIN'
  $CC -std=c99 -O2 -Wall -Wextra -Werror -Iinclude -o target/release/digest_file \
    bench/digest_file.c -Ltarget/release -lgguf -Wl,-rpath,'$ORIGIN'
fi
[ -f "$model" ] || target/release/digest_file --make "$size_mib" "$model"
# The reference needs Python with PyPI gguf (make venv); without it its row is left out.
reference=1
"$PYTHON" -c 'import gguf' 2>/dev/null || { reference=0; echo "no $PYTHON with gguf: no reference row"; }
bytes=$(stat -c %s "$model")
ins=target/release/gguf-inspect
dig=target/release/digest_file
# The results agree before anything is timed: --hash with the reference, the C API's model
# digests with the model lines of --hash.
"$ins" --hash "$model" > "$out/digest-ours.txt"
if [ $reference = 1 ]; then
  "$PYTHON" -m gguf.scripts.gguf_hash "$model" > "$out/digest-reference.txt"
  cmp "$out/digest-ours.txt" "$out/digest-reference.txt"
fi
for alg in sha1 sha256; do
  want=$(grep "^$alg  .*  $model\$" "$out/digest-ours.txt" | awk '{print $2}')
  [ "$($dig $alg "$model")" = "$want" ] || { echo "C API $alg disagrees with --hash" >&2; exit 1; }
done

names=("cat > /dev/null" "sha256sum" "sha1sum" "openssl dgst -sha256" "openssl dgst -sha1"
       "C API sha256 (1 stream)" "C API sha1 (1 stream)" "C API xxh64 (1 stream)"
       "gguf-inspect --hash (5 streams)")
[ $reference = 0 ] || names+=("gguf_hash.py (reference)")
run() {
  case $1 in
    0) cat "$model" > /dev/null ;;
    1) sha256sum "$model" > /dev/null ;;
    2) sha1sum "$model" > /dev/null ;;
    3) openssl dgst -sha256 "$model" > /dev/null ;;
    4) openssl dgst -sha1 "$model" > /dev/null ;;
    5) "$dig" sha256 "$model" > /dev/null ;;
    6) "$dig" sha1 "$model" > /dev/null ;;
    7) "$dig" xxh64 "$model" > /dev/null ;;
    8) "$ins" --hash "$model" > /dev/null ;;
    9) "$PYTHON" -m gguf.scripts.gguf_hash "$model" > /dev/null ;;
  esac
}
cat "$model" > /dev/null # warm the cache
: > "$out/digest-times.txt"
for r in $(seq "$rounds"); do
  for c in "${!names[@]}"; do
    t0=$(date +%s%N)
    run "$c"
    t1=$(date +%s%N)
    echo "$c $(( t1 - t0 ))" >> "$out/digest-times.txt"
  done
done
echo "file: $model, $bytes bytes; $rounds rounds; $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
python3 - "$out/digest-times.txt" "$bytes" "${names[@]}" <<'PY'
import sys, statistics
path, size, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times = {}
for line in open(path):
    c, ns = line.split()
    times.setdefault(int(c), []).append(int(ns) / 1e9)
print(f"| {'command':34} | min s | median s | GB/s (min) | GB/s (median) |")
print(f"| {'---':34} | ---: | ---: | ---: | ---: |")
for c, name in enumerate(names):
    t = times[c]
    lo, med = min(t), statistics.median(t)
    print(f"| {name:34} | {lo:.3f} | {med:.3f} | {size / lo / 1e9:.2f} | {size / med / 1e9:.2f} |")
PY
