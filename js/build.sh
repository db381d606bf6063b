#!/usr/bin/env bash
# Builds the package's wasm modules (npm run build): dist/libgguf.wasm, the reader gguf()
# loads, and dist/libgguf-open.wasm, the reader with the tensor values, the tokenizer and the
# chat templates that open() loads, from js/wasm
# (which calls the library in the repository above), with the toolchain tools/cross.sh uses for
# wasm32 (tools/wasm-toolchain.sh: Debian's rustc-web with -Zbuild-std, rustup's rust-lld),
# installing Debian's packages for it where they are missing (as root). Cargo builds into
# ../target/js (LIBGGUF_JS_TARGET_DIR names another directory).
set -euo pipefail
cd "$(dirname "$0")"
js=$PWD
. ../tools/wasm-toolchain.sh
wasm_toolchain_install
wasm_toolchain_env
if [ ! -x "$wasm_ld" ]; then
  echo "js/build.sh: no rust-lld at $wasm_ld (rustup's toolchain) to link the module" >&2
  exit 1
fi
# rust-lld through js/wasm/wasm-ld, which drops the exports of the library's C API.
export LIBGGUF_JS_LLD="$wasm_ld" CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$js/wasm/wasm-ld"
export CARGO_TARGET_DIR=${LIBGGUF_JS_TARGET_DIR:-$js/../target/js}
export CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0
# The standard library built for the module (a panic, which the library never reaches from any
# input, aborts: the crate's release profile has panic = "abort").
std=(-Zbuild-std=std,panic_abort)
mkdir -p dist
build() { # FEATURES OUTPUT [CARGO ARGUMENTS...]
  local features=$1 output=$2
  shift 2
  /usr/bin/cargo build -q --release "${std[@]}" --target wasm32-unknown-unknown \
    --manifest-path wasm/Cargo.toml ${features:+--features "$features"} "$@"
  cp "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/libgguf_js.wasm" "dist/$output"
}
# The reader optimized for speed (gguf() over a large vocabulary: BENCHMARKS.md), the open()
# module, over ten times larger, for size. Only the module's own crate is raised to opt-level 3
# for the reader: the link-time optimization, which sees the whole program, runs at the final
# crate's level, so the two builds share everything else (the standard library, the
# dependencies and libgguf, built once at "s"), and the reader is as fast as with every crate
# at 3.
build "" libgguf.wasm --config 'profile.release.package.libgguf-js.opt-level=3'
build open libgguf-open.wasm
rm -f dist/libgguf-text.wasm
for f in dist/libgguf.wasm dist/libgguf-open.wasm; do
  echo "$f: $(wc -c <"$f") bytes, $(gzip -9 -c "$f" | wc -c) gzipped"
done
