#!/usr/bin/env bash
# Digest speed, side by side, warm cache: `gguf-inspect --hash` (the five streams of gguf_hash.py's
# output, each on a thread), the C API's single-stream SHA-256 / SHA-1 / XXH64 of all tensor data
# (bench/digest_file.c), against `sha256sum`, `sha1sum` and `cat FILE > /dev/null` of the same
# file, and the reference `python -m gguf.scripts.gguf_hash`.
#
#   bench/digest.sh [SIZE_MIB]     (default 1024: a file of 64 I8 tensors of random bytes)
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
  $CC -std=c99 -O2 -Wall -Wextra -Werror -Iinclude -o target/release/gguf-inspect \
    tools/gguf-inspect.c -Ltarget/release -lgguf -Wl,-rpath,'$ORIGIN'
  $CC -std=c99 -O2 -Wall -Wextra -Werror -Iinclude -o target/release/digest_file \
    bench/digest_file.c -Ltarget/release -lgguf -Wl,-rpath,'$ORIGIN'
fi
if [ ! -f "$model" ]; then
  "$PYTHON" - "$model" "$size_mib" <<'PY'
import sys, numpy as np, gguf
path, mib = sys.argv[1], int(sys.argv[2])
w = gguf.GGUFWriter(path + ".part", "llama")
rng = np.random.default_rng(1)
per = mib * 2**20 // 64
for i in range(64):
    w.add_tensor(f"blk.{i}.weight", rng.integers(-128, 128, size=per, dtype=np.int8))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
import os; os.replace(path + ".part", path)
PY
fi
bytes=$(stat -c %s "$model")
ins=target/release/gguf-inspect
dig=target/release/digest_file
# The results agree before anything is timed: --hash with the reference, the C API's model
# digests with the model lines of --hash.
"$ins" --hash "$model" > "$out/digest-ours.txt"
"$PYTHON" -m gguf.scripts.gguf_hash "$model" > "$out/digest-reference.txt"
cmp "$out/digest-ours.txt" "$out/digest-reference.txt"
for alg in sha1 sha256; do
  want=$(grep "^$alg  .*  $model\$" "$out/digest-ours.txt" | awk '{print $2}')
  [ "$($dig $alg "$model")" = "$want" ] || { echo "C API $alg disagrees with --hash" >&2; exit 1; }
done

names=("cat > /dev/null" "sha256sum" "sha1sum" "C API sha256 (1 stream)" "C API sha1 (1 stream)"
       "C API xxh64 (1 stream)" "gguf-inspect --hash (5 streams)" "gguf_hash.py (reference)")
run() {
  case $1 in
    0) cat "$model" > /dev/null ;;
    1) sha256sum "$model" > /dev/null ;;
    2) sha1sum "$model" > /dev/null ;;
    3) "$dig" sha256 "$model" > /dev/null ;;
    4) "$dig" sha1 "$model" > /dev/null ;;
    5) "$dig" xxh64 "$model" > /dev/null ;;
    6) "$ins" --hash "$model" > /dev/null ;;
    7) "$PYTHON" -m gguf.scripts.gguf_hash "$model" > /dev/null ;;
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
"$PYTHON" - "$out/digest-times.txt" "$bytes" "${names[@]}" <<'PY'
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
