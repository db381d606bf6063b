#!/usr/bin/env bash
# Fuzzes each target for SECONDS (default 60) with cargo-fuzz (libFuzzer, nightly toolchain).
#   fuzz/run.sh [SECONDS] [TARGET...]
# Corpora live in fuzz/corpus/<target> (not committed); they are seeded with the bundled sample
# (open), the small models in fuzz/seeds/<target> (read: 16 bytes of choices, then the file;
# tokenize: small vocabularies cut from llama.cpp's, see fuzz/regressions/README.md) and the
# regression inputs. A crash leaves its input in fuzz/artifacts/<target>: copy it into
# fuzz/regressions/<target>/ so `cargo test --test fuzz_regressions` replays it forever.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(open roundtrip read http_response tokenize requantize)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  cp -n regressions/"$t"/* "corpus/$t/" 2>/dev/null || true
  [ "$t" = open ] && cp -n ../testdata/sample.gguf corpus/open/ 2>/dev/null || true
  cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
  echo "== fuzzing $t for ${seconds}s"
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$seconds" -max_len=65536 \
    -print_final_stats=1 2>&1 | grep -E "^(stat::|#[0-9]+ *DONE|==|SUMMARY|Done)" || true
  # cargo fuzz exits non-zero on a crash; grep above hides its status, so check artifacts.
  if compgen -G "artifacts/$t/crash-*" >/dev/null || compgen -G "artifacts/$t/leak-*" >/dev/null; then
    echo "fuzzing $t found a crash: see fuzz/artifacts/$t" >&2
    exit 1
  fi
done
