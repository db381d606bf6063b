#!/usr/bin/env bash
# Builds and tests libgguf for the platforms engines ship on, from this Linux x86-64 machine
# (README: Platforms). Usage: tools/cross.sh [TARGET...], TARGET a short name below or a triple;
# none: all of them. Prints one summary line per target, with the time it took, and exits non-zero
# if any failed.
#
#   tested (clippy -D warnings; Rust unit and integration tests, run under the target's runner;
#   the C test programs of c_tests/, built with the target's C compiler against the library
#   built for it):
#     windows  x86_64-win7-windows-gnu    MinGW linker, Wine
#     i686     i686-unknown-linux-gnu     gcc -m32, runs natively
#     s390x    s390x-unknown-linux-gnu    cross gcc, qemu-s390x-static (big-endian)
#     aarch64  aarch64-unknown-linux-gnu  cross gcc, qemu-aarch64-static
#     wasm32   wasm32-unknown-unknown     the library as a .wasm module (rust-lld of the rustup
#              toolchain: Debian's rustc-web has none), no imports, driven through its C
#              functions by Node.js (tests/wasm/smoke.mjs): the memory API and the writer to
#              memory against the host's gguf-inspect --json; files report unsupported.
#              No Rust tests there (their harness needs threads and processes): clippy of the
#              library and the smoke test.
#   type-checked (cargo check of the library and its tests):
#     macos macos-x86 ios android
#
# The standard library of each target: for i686, s390x and aarch64, Debian's prebuilt one
# (libstd-rust-web-dev of the target's architecture, downloaded with `apt-get download` into
# target/cross/apt-<arch> and unpacked into target/cross/sysroot/<arch>-<version>, used through
# --sysroot) when Debian publishes it at exactly the installed rustc-web's version; otherwise, and
# for the other targets (Windows, wasm32, the type-checked ones), built from Debian's rust-web-src
# (-Zbuild-std) by Debian's rustc 1.96. The script says which for each target.
# GGUF_CROSS_BUILD_STD=1 builds every standard library from source.
# Two targets build and run at a time (GGUF_CROSS_LANES=1 for one at a time), each in its own
# cargo target directory: target/cross/build and target/cross/build-2 (the target's own in
# <dir>/<triple>, reused between runs; the build scripts and proc macros, which run on the host,
# in <dir>/debug). GGUF_CROSS_DIR names another root than target/cross, e.g. to time a build from
# nothing. Each target's directory takes about 4 GB; GGUF_CROSS_PRUNE=1 (set by .ci/run, whose
# machine starts empty and whose disk is not ours to size) removes it once the target is done,
# so the run never needs more than two targets' worth at a time.
# Missing Debian packages are installed first (`apt-get update` once).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=tools/wasm-toolchain.sh
. tools/wasm-toolchain.sh
export CARGO_TERM_COLOR=never
# Incremental caches of the crate and its tests (1.8 GB a target) would only serve a rebuild of
# the same target after an edit, which is not what this script is for.
export CARGO_INCREMENTAL=0
# Line tables only (file and line in a failing test's backtrace), not the full debug information:
# a quarter of the disk per target, and less for the linkers and, at opt-level 1 (below), LLVM.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only

# Tests that drive tools only the host has are run by `make test` on the host, never here:
#   c_api's valgrind_*       valgrind (host only); the c_test_* run here, without the host's
#                            ASan/UBSan (no sanitizer runtime for the cross compilers and qemu)
#   c_writer, readme         the reference Python reader and ggml's x86-64 parser; the host cc
#   inspect                  builds tools/gguf-inspect.c with the host cc
#   header                   runs cbindgen (a host build) and the host cc/c++ on the header
#   install                  runs install/install.sh, cmake and pkg-config on the host
#   python                   runs the reference Python package (PyPI gguf in .venv)
#   conformance's libgguf -> reference direction (files_written_by_libgguf_...): the same; the
#                            reference -> libgguf direction runs here, over a corpus the host
#                            generates once (GGUF_CONFORMANCE_CORPUS), the same for every target
#   ggml_crosscheck          loads ggml's prebuilt x86-64 library
#   url                      starts nginx and openssl (network tests run on the host only)
#   shards (two tests)       shards_written_by_the_reference_*, the_reference_reads_*: Python
#   concurrency under TSan   `make tsan` (host nightly toolchain)
#   dequant_ggml, validate_ggml  ggml's x86-64 library (dequant and simd check the same answers
#                            everywhere: ggml's recorded outputs, and the scalar kernels)
#   quantize_iq_ggml         ggml's x86-64 library (quantize_iq checks ggml's recorded
#                            fingerprints everywhere)
#   url                      nginx and the test servers on the host's loopback
#   dequant_tables           runs the table generator on the reference Python package
#   quantize_ggml            ggml's x86-64 library (quantize checks ggml's recorded fingerprints)
#   architecture             reads the source tree and ARCHITECTURE.md (the same on every target)
#   requantize_llama         llama.cpp's x86-64 libllama (requantize checks the same rules everywhere)
#   tokenizer_llama          loads llama.cpp's prebuilt x86-64 libllama (tokenizer_vocab runs everywhere)
#   tokenizer_split          llama.cpp's x86-64 libllama (its Unicode functions, through a C++ shim)
#   memory_llama             llama.cpp's x86-64 libllama and its headers, through a C++ shim (the
#                            memory rules' unit tests and c_api's test_memory run everywhere)
#   chat_transformers        transformers and jinja2 in the host's Python venv
#   chat_llama               llama.cpp's x86-64 libllama-common and its headers, through a C++ shim
#                            (the llama.cpp rendering's unit tests and c_api's test_chat run
#                            everywhere)
#   chat_safety              the runaway templates take seconds each under emulation; the same
#                            bounds, sandbox and errors run everywhere in c_api's test_chat and
#                            fuzz_regressions' chat seeds
HOST_ONLY_TESTS="c_writer readme inspect header install python ggml_crosscheck dequant_ggml
  validate_ggml dequant_tables url architecture quantize_ggml quantize_iq_ggml tokenizer_llama
  tokenizer_split requantize_llama memory_llama requantize_pattern chat_transformers chat_safety
  chat_llama"
HOST_ONLY_SKIPS=(--skip shards_written_by_the_reference_open_as_the_whole_model
  --skip the_reference_reads_our_split_keys_as_it_writes_them --skip valgrind_
  --skip files_written_by_libgguf_read_identically_in_the_reference)
# What every tested target runs besides the library's unit tests: the suite, one binary holding the
# platform-neutral test files as modules (tests/suite/main.rs lists them; one crate to build per
# target instead of one per file), and the files that must be their own process: concurrency
# (its own harness) and the three that count the process's allocations with a global allocator.
SEPARATE_TESTS="concurrency resource_bounds tokenizer_memory writer_copy"
CROSS_TESTS="suite $SEPARATE_TESTS"
# The suite's modules, as tests/suite/main.rs declares them (`#[path = "../FILE.rs"]`).
SUITE_TESTS=$(sed -n 's|^#\[path = "\.\./\([a-z_0-9]*\)\.rs"\]$|\1|p' tests/suite/main.rs | tr '\n' ' ')
# C programs that use POSIX facilities: not built for Windows. test_writer: mkdtemp,
# setrlimit(RLIMIT_FSIZE), sigaction(SIGXFSZ), and it edits a file in place while a handle maps
# it, which Windows refuses (tests/paths.rs checks that refusal there). (test_errors leaves its FIFO, /dev and /proc cases
# out there itself; test_plan_pinned uses _aligned_malloc and Windows' advice and lock rules.)
WINDOWS_C_SKIPS="test_writer"
# Under qemu-user (s390x, aarch64), by design of the emulator:
# - it does not apply RLIMIT_AS to the program it emulates (that would limit qemu itself), so the
#   test that maps under an address space limit runs natively only (host, i686);
# - it keeps state for every guest page mapped, so 1 TiB (or 5 x 200 GiB) of mappings fails with
#   ENOMEM, and page faults it counts are its own: the terabyte tests run natively only, and
#   six_gib_of_tensor_data_opens_with_offsets_above_4_gib covers offsets above 4 GiB there.
QEMU_SKIPS=(--skip a_map_failing_for_address_space_names_the_limits
  --skip a_terabyte_of_tensor_data_opens_with_offsets_above_4_gib
  --skip opening_never_touches_the_data_section
  --skip five_sparse_shards_of_200_gib_open_and_plan)

triple_of() {
  case "$1" in
    windows | win | win64) echo x86_64-win7-windows-gnu ;;
    i686 | x86) echo i686-unknown-linux-gnu ;;
    s390x) echo s390x-unknown-linux-gnu ;;
    aarch64 | arm64) echo aarch64-unknown-linux-gnu ;;
    macos) echo aarch64-apple-darwin ;;
    macos-x86) echo x86_64-apple-darwin ;;
    ios) echo aarch64-apple-ios ;;
    android) echo aarch64-linux-android ;;
    wasm32 | wasm) echo wasm32-unknown-unknown ;;
    *-*) echo "$1" ;;
    *) echo "tools/cross.sh: unknown target '$1'" >&2; exit 2 ;;
  esac
}

if [ $# -eq 0 ]; then
  # The longest first, so that the two lanes (below) end close together.
  set -- s390x aarch64 windows macos macos-x86 ios android i686 wasm32
fi
triples=()
for t in "$@"; do triples+=("$(triple_of "$t")"); done
# The targets only type-checked (no runner here), checked together (below).
checked_triples=()
for t in "${triples[@]}"; do
  case "$t" in
    x86_64-win7-windows-gnu | i686-unknown-linux-gnu | s390x-unknown-linux-gnu | \
      aarch64-unknown-linux-gnu | wasm32-*) ;;
    *) checked_triples+=("$t") ;;
  esac
done

# Debian packages, only those missing. A command is looked for on PATH, not only its package in
# dpkg's list: a cross compiler can be listed while its versioned compiler is gone (removed with
# gcc-multilib, which conflicts with Debian's cross compilers). Nothing here needs gcc-multilib
# (i686's C takes the host's asm headers with -idirafter, below), and nothing pulls it in:
# libc6-dev-i386 recommends it, and installing it removes s390x's and aarch64's compilers, so apt
# is told never to install it ("gcc-multilib-") along with those packages.
need=()
want() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed' || need+=("$1"); }
# want_cmd COMMAND PACKAGE...: the packages, reinstalled, when COMMAND is not on PATH.
need_cmds=()
want_cmd() {
  local cmd=$1
  shift
  command -v "$cmd" >/dev/null 2>&1 && return 0
  need_cmds+=("$cmd")
  need+=("$@")
}
for p in $WASM_TOOLCHAIN_PACKAGES rust-web-clippy; do want "$p"; done
for t in "${triples[@]}"; do
  case "$t" in
    x86_64-win7-windows-gnu)
      want_cmd x86_64-w64-mingw32-gcc gcc-mingw-w64-x86-64 gcc-mingw-w64-x86-64-win32
      want binutils-mingw-w64-x86-64
      want_cmd wine wine wine64 ;;
    i686-unknown-linux-gnu) want libc6-dev-i386; want lib32gcc-12-dev ;;
    # qemu-user-static, never qemu-user as well: the two conflict.
    s390x-unknown-linux-gnu)
      want_cmd s390x-linux-gnu-gcc gcc-s390x-linux-gnu gcc-12-s390x-linux-gnu
      want_cmd qemu-s390x-static qemu-user-static ;;
    aarch64-unknown-linux-gnu)
      want_cmd aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu gcc-12-aarch64-linux-gnu
      want_cmd qemu-aarch64-static qemu-user-static ;;
    aarch64-apple-* | aarch64-linux-android) want_cmd clang clang ;;
    wasm32-*) want_cmd node nodejs ;;
  esac
done
if [ ${#need[@]} -gt 0 ]; then
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  never=()
  [[ " ${need[*]} " =~ \ (gcc-s390x-linux-gnu|gcc-aarch64-linux-gnu|libc6-dev-i386)\  ]] &&
    never=(gcc-multilib-)
  echo "== apt-get install ${need[*]}"
  apt_log="${TMPDIR:-/tmp}/gguf-cross-apt.$$.log"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall \
    "${need[@]}" "${never[@]}"; } >"$apt_log" 2>&1; then
    echo "tools/cross.sh: apt-get cannot install ${need[*]}:" >&2
    grep -E '^(E|W): ' "$apt_log" | head -n 20 >&2
    exit 1
  fi
  rm -f "$apt_log"
  hash -r
  for c in "${need_cmds[@]}"; do
    command -v "$c" >/dev/null 2>&1 && continue
    echo "tools/cross.sh: apt-get installed ${need[*]}, and $c is still not on PATH" >&2
    exit 1
  done
fi

# Debian's toolchain, not rustup's (which has only the host's standard library), and wasm32's
# linker (tools/wasm-toolchain.sh).
wasm_toolchain_env
CARGO=/usr/bin/cargo
export CARGO_TARGET_I686_UNKNOWN_LINUX_GNU_LINKER=gcc
export CARGO_TARGET_I686_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C link-arg=-m32"
export CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_LINKER=s390x-linux-gnu-gcc
export CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_RUNNER="qemu-s390x-static -L /usr/s390x-linux-gnu"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
export CARGO_TARGET_X86_64_WIN7_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_WIN7_WINDOWS_GNU_RUNNER=wine
# sha2's assembly (its `asm` feature, on aarch64) is built even by `cargo check`: clang assembles
# it for Apple and Android targets without their SDKs.
# For iOS, cc-rs asks xcrun for the SDK unless SDKROOT names one: an empty directory will do, as
# assembling needs no headers (`cargo check` links nothing).
export CC_aarch64_apple_darwin=clang CC_aarch64_apple_ios=clang CC_aarch64_linux_android=clang
cross_dir=${GGUF_CROSS_DIR:-$root/target/cross}
mkdir -p "$cross_dir"
cross_dir=$(cd "$cross_dir" && pwd)
export SDKROOT="$cross_dir/no-sdk"
mkdir -p "$SDKROOT"
# ring (TLS for the `net` feature) compiles C even for `cargo check`. Without the SDKs and the NDK
# only clang's own headers are there: freestanding C and ring's mode for no libc headers, plus an
# empty TargetConditionals.h (the one SDK header ring includes on Apple platforms; nothing it
# reads there matters to a check, which links nothing).
ring_stub="$cross_dir/ring-stub-include"
mkdir -p "$ring_stub"
: >"$ring_stub/TargetConditionals.h"
for v in aarch64_apple_darwin x86_64_apple_darwin aarch64_apple_ios aarch64_linux_android; do
  export "CFLAGS_$v=-ffreestanding -nostdlibinc -DRING_CORE_NOSTDLIBINC=1 -isystem $ring_stub"
done
export CC_x86_64_apple_darwin=clang
# i686's C (ring's build script, cc-rs) takes the host's asm headers as gcc-multilib would give
# them, as the C test programs' compiler below does.
export CFLAGS_i686_unknown_linux_gnu="-idirafter /usr/include/x86_64-linux-gnu"
export WINEDEBUG=-all WINEPREFIX="$cross_dir/wine"

# Debian's prebuilt standard library for target $1 (libstd-rust-web-dev of its architecture), as a
# sysroot for rustc's --sysroot: printed on success. Fails (and the caller builds the standard
# library from source) unless Debian publishes the package at exactly the version of the
# installed rustc-web, and unless rustc accepts it. apt works in a directory of its own
# (target/cross/apt-<arch>: the architecture's package lists, the .deb), so the machine's dpkg
# and apt configuration are left as they are.
prebuilt_std() {
  local t=$1 arch version dir sysroot deb log
  case "$t" in
    i686-unknown-linux-gnu) arch=i386 ;;
    s390x-unknown-linux-gnu) arch=s390x ;;
    aarch64-unknown-linux-gnu) arch=arm64 ;;
    *) return 1 ;;
  esac
  [ "${GGUF_CROSS_BUILD_STD:-0}" = 1 ] && return 1
  version=$(dpkg-query -W -f='${Version}' rustc-web 2>/dev/null) || return 1
  sysroot="$cross_dir/sysroot/$arch-$version"
  if [ ! -f "$sysroot/complete" ]; then
    dir="$cross_dir/apt-$arch"
    log="$dir/log"
    mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
    local apt=(-o "APT::Architectures::=$(dpkg --print-architecture)" -o "APT::Architectures::=$arch"
      -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache")
    apt-get "${apt[@]}" update >"$log" 2>&1 || true
    local offered
    offered=$(apt-cache "${apt[@]}" madison "libstd-rust-web-dev:$arch" 2>/dev/null |
      awk -F' [|] ' '{ print $2 }' | sort -u | paste -sd ' ')
    if [[ " $offered " != *" $version "* ]]; then
      echo "== $t: Debian publishes no libstd-rust-web-dev:$arch $version (the installed" \
        "rustc-web's version; apt offers: ${offered:-none}$(grep -m1 '^E: ' "$log" | sed 's/^/; /'))" >&2
      return 1
    fi
    rm -f "$dir"/*.deb
    if ! (cd "$dir" && apt-get "${apt[@]}" download "libstd-rust-web-dev:$arch=$version") >>"$log" 2>&1; then
      echo "== $t: cannot download libstd-rust-web-dev:$arch $version (see $log)" >&2
      return 1
    fi
    deb=$(ls "$dir"/libstd-rust-web-dev_*.deb)
    rm -rf "$sysroot" "$sysroot.tmp"
    mkdir -p "$sysroot.tmp"
    dpkg-deb -x "$deb" "$sysroot.tmp" || return 1
    # The host's libraries beside it: proc macros and build scripts are built for the host.
    ln -s "/usr/lib/rustlib/$(rustc_host)" "$sysroot.tmp/usr/lib/rustlib/$(rustc_host)"
    [ -d "$sysroot.tmp/usr/lib/rustlib/$t/lib" ] || return 1
    mv "$sysroot.tmp" "$sysroot"
    : >"$sysroot/complete"
  fi
  # rustc must take it as its own (the same compiler built both): a program using std.
  if ! echo 'fn main() { println!("{}", std::env::args().count()); }' |
    "$RUSTC" --sysroot "$sysroot/usr" --target "$t" --edition 2021 --emit metadata \
      -o "$cross_dir/sysroot/probe-$arch.rmeta" - >"$cross_dir/sysroot/probe-$arch.log" 2>&1; then
    echo "== $t: rustc refuses the prebuilt standard library in $sysroot" \
      "($(head -c 300 "$cross_dir/sysroot/probe-$arch.log"))" >&2
    return 1
  fi
  echo "$sysroot/usr"
}
# Runs a command, then says how long it took ("== TARGET: WHAT: N s"), keeping its status.
timed() {
  local what=$1 began=$SECONDS status=0
  shift
  "$@" || status=$?
  echo "== $t: $what: $((SECONDS - began)) s"
  return $status
}

rustc_host() { "$RUSTC" -vV | sed -n 's/^host: //p'; }

# The host's inspector (tools/gguf-inspect.c against this checkout's debug library), built once
# before the targets run: the Linux targets' inspectors and the wasm32 module must read the
# bundled sample as it does.
host_inspect="$cross_dir/gguf-inspect-host"
host_dump="$cross_dir/sample-dump-host.txt"
build_host_inspect() {
  rm -f "$host_inspect" "$host_dump" # made again by each run: the sample or the inspector may have changed
  (unset RUSTC RUSTDOC RUSTC_BOOTSTRAP CARGO_TARGET_DIR CARGO_UNSTABLE_BUILD_STD CARGO_PROFILE_DEV_OPT_LEVEL
    cargo build -q --lib) || return 1
  cc -std=c99 -O1 -Iinclude -o "$host_inspect" tools/gguf-inspect.c \
    target/debug/libgguf.a -lpthread -ldl -lm || return 1
  "$host_inspect" testdata/sample.gguf >"$host_dump"
}

# The C API from C, on the Linux targets: the inspector (tools/gguf-inspect.c), built with the
# target's C compiler against the library built for the target (libgguf.a) and run with its
# runner, must dump the bundled little-endian sample exactly as the host's does. (Windows: the
# inspector uses POSIX signals and threads; the DLL is exercised from C in the second phase.)
c_inspect_matches_host() {
  local t=$1 cc=$2 runner=$3
  local d="$CARGO_TARGET_DIR/$t/debug"
  $cc -std=c99 -O1 -Iinclude -o "$d/gguf-inspect" tools/gguf-inspect.c \
    "$d/libgguf.a" -lpthread -ldl -lm || return 1
  $runner "$d/gguf-inspect" testdata/sample.gguf >"$d/sample-dump.txt" || return 1
  diff "$host_dump" "$d/sample-dump.txt"
}

# The C test programs for Windows, built here: a test binary under Wine can start the Linux
# compiler but never learns its exit status. Each program is linked twice, as tests/c_api.rs
# links them elsewhere: PROGRAM-shared.exe through gguf.dll's import library (the DLL copied
# beside it) and PROGRAM-static.exe against libgguf.a; winpthread is linked statically.
build_windows_c_tests() {
  local t=$1 d="$CARGO_TARGET_DIR/$1/debug" src name
  local out="$d/c_tests"
  mkdir -p "$out"
  cp "$d/gguf.dll" "$out/"
  for src in c_tests/test_*.c; do
    name=$(basename "$src" .c)
    [[ " $WINDOWS_C_SKIPS " == *" $name "* ]] && continue
    x86_64-w64-mingw32-gcc -std=c99 -Wall -Wextra -Werror -g -pthread -Iinclude -Ic_tests \
      -o "$out/$name-shared.exe" "$src" "$d/libgguf.dll.a" -static || return 1
    x86_64-w64-mingw32-gcc -std=c99 -Wall -Wextra -Werror -g -pthread -Iinclude -Ic_tests \
      -DGGUF_STATIC -o "$out/$name-static.exe" "$src" "$d/libgguf.a" -static \
      -lws2_32 -luserenv -lntdll -lbcrypt -ladvapi32 -lkernel32 || return 1
  done
}

# The reference's conformance corpus (tests/conformance.rs), generated on the host by the pinned
# reference package: every tested target reads these files and compares with these sidecars.
for t in "${triples[@]}"; do
  case "$t" in
    x86_64-win7-* | i686-* | s390x-* | aarch64-unknown-linux-gnu)
      python=${GGUF_PYTHON:-$root/.venv/bin/python}
      corpus="$cross_dir/conformance-corpus"
      rm -rf "$corpus"
      echo "== host: the reference's conformance corpus ($python)"
      "$python" tests/conformance/generate.py generate "$corpus" 40 1 || {
        echo "tools/cross.sh: cannot generate the conformance corpus: run make venv" >&2
        exit 1
      }
      export GGUF_CONFORMANCE_CORPUS="$corpus"
      break
      ;;
  esac
done

# llama.cpp's tokenizer test files (tests/tokenizer_vocab.rs and tokenizer_memory.rs read them on
# every target), fetched once on the host.
if [ -z "${GGUF_LLAMA_SRC_DIR:-}" ]; then
  [ -f "$root/target/llama.cpp/models/ggml-vocab-llama-spm.gguf" ] || make -C "$root" llama-src
  export GGUF_LLAMA_SRC_DIR="$root/target/llama.cpp"
fi

# Every test file is in one of the lists (host-only, the suite's modules, its own binary): a new
# one is never silently left out here.
for f in tests/*.rs; do
  f=$(basename "$f" .rs)
  if [[ " $(echo $HOST_ONLY_TESTS $SUITE_TESTS $SEPARATE_TESTS) " != *" $f "* ]]; then
    echo "cross.sh: tests/$f.rs is neither host-only (HOST_ONLY_TESTS), a module of tests/suite/main.rs nor in SEPARATE_TESTS" >&2
    exit 2
  fi
done

# choose_std TRIPLE: the standard library for the target (std_args for cargo, and its
# environment: the target's RUSTFLAGS with --sysroot, or CARGO_UNSTABLE_BUILD_STD, which the cargo a
# test runs itself (tests/common: lib_dir builds the C libraries) inherits).
choose_std() {
  local t=$1 build_std sysroot rustflags_var
  # With `test` named, as cargo adds it itself for a test build: otherwise `cargo build` and
  # `cargo test` resolve two standard libraries, and every crate is built twice.
  case "$t" in
    wasm32-*) build_std=std,panic_abort ;;
    *) build_std=std,panic_unwind,test ;;
  esac
  rustflags_var="CARGO_TARGET_$(echo "$t" | tr 'a-z-' 'A-Z_')_RUSTFLAGS"
  if sysroot=$(prebuilt_std "$t"); then
    echo "== $t: standard library: Debian's prebuilt libstd-rust-web-dev ($sysroot)"
    std_args=()
    export "$rustflags_var=${!rustflags_var:+${!rustflags_var} }--sysroot $sysroot"
    unset CARGO_UNSTABLE_BUILD_STD
  else
    echo "== $t: standard library: built from source (-Zbuild-std=$build_std)"
    std_args=(-Zbuild-std="$build_std")
    export CARGO_UNSTABLE_BUILD_STD="${build_std//,/ }"
  fi
}

# run_target TRIPLE: builds and tests one target (each in a subshell of its own: what it exports
# stays with it). Prints its summary line last.
run_target() {
  local t=$1 start=$SECONDS what ok args skips cc runner_var clippy_allow wasm expected
  choose_std "$t"
  case "$t" in
    x86_64-win7-windows-gnu | i686-unknown-linux-gnu | s390x-unknown-linux-gnu | aarch64-unknown-linux-gnu)
      what=tested
      ok=ok
      echo "== $t: cargo test: the unit tests, the suite ($SUITE_TESTS) and $SEPARATE_TESTS" \
        "(host-only test files, run by make test: $HOST_ONLY_TESTS)"
      args=(--lib)
      skips=("${HOST_ONLY_SKIPS[@]}")
      for f in $CROSS_TESTS; do args+=(--test "$f"); done
      # Under qemu the tests run emulated, unoptimized code about ten times slower than
      # optimized (s390x: 700 s of tests at opt-level 0, 110 s at 1, for 100 s more of
      # building): these two build at opt-level 1, overflow checks and debug assertions still
      # on. Every cargo the tests start inherits the setting, so nothing is built twice. The
      # randomized tests whose outcome cannot depend on the platform (tests/common: rounds) run
      # an eighth of their rounds there; i686 and Windows run them all.
      case "$t" in
        s390x-* | aarch64-*)
          skips+=("${QEMU_SKIPS[@]}")
          export CARGO_PROFILE_DEV_OPT_LEVEL=1 GGUF_TEST_ROUNDS_DIVISOR=8
          ;;
      esac
      # The C programs' compiler (tests/common: target_cc); the library they link is built first.
      case "$t" in
        i686-*) cc="gcc -m32 -idirafter /usr/include/x86_64-linux-gnu" ;;
        s390x-*) cc=s390x-linux-gnu-gcc ;;
        aarch64-*) cc=aarch64-linux-gnu-gcc ;;
        x86_64-win7-*) cc=x86_64-w64-mingw32-gcc ;;
      esac
      export GGUF_TEST_CC="$cc"
      unset GGUF_TEST_C_PROGRAMS
      timed "cargo build --lib" "$CARGO" build -q "${std_args[@]}" --target "$t" --lib || ok=FAILED
      if [ "$t" = x86_64-win7-windows-gnu ]; then
        for p in $WINDOWS_C_SKIPS; do skips+=(--skip "c_test_${p#test_}"); done
        build_windows_c_tests "$t" || ok=FAILED
        export GGUF_TEST_C_PROGRAMS="$CARGO_TARGET_DIR/$t/debug/c_tests"
      fi
      echo "== $t: tests skipped here (reasons at the top of tools/cross.sh):" \
        "$(printf '%s\n' "${skips[@]}" | grep -v '^--skip$' | tr '\n' ' ')"
      if [ "$t" = x86_64-win7-windows-gnu ]; then mkdir -p "$WINEPREFIX"; fi
      # Tests that run a scenario in a child process start it through the same runner.
      runner_var="CARGO_TARGET_$(echo "$t" | tr 'a-z-' 'A-Z_')_RUNNER"
      export GGUF_TEST_RUNNER="${!runner_var:-}"
      # Clippy as on the host (make test), for the code this target compiles: Debian's clippy,
      # which matches Debian's rustc and this target's standard library. On Windows, clippy 1.96
      # takes the `const { }` initializers of tests' thread_local! for missing ones (std expands
      # the macro differently there): that lint alone is off.
      clippy_allow=()
      [ "$t" = x86_64-win7-windows-gnu ] && clippy_allow=(-A clippy::missing_const_for_thread_local)
      echo "== $t: cargo clippy -D warnings"
      if ! timed "cargo clippy" env PATH="/usr/bin:$PATH" "$CARGO" clippy -q "${std_args[@]}" \
        --target "$t" "${args[@]}" -- -D warnings "${clippy_allow[@]}"; then
        ok=FAILED
      fi
      if ! timed "cargo test" "$CARGO" test --no-fail-fast "${std_args[@]}" --target "$t" "${args[@]}" \
        -- "${skips[@]}"; then
        ok=FAILED
      fi
      if [ "$t" != x86_64-win7-windows-gnu ]; then
        echo "== $t: the C inspector's dump of testdata/sample.gguf against the host's"
        c_inspect_matches_host "$t" "$cc" "${GGUF_TEST_RUNNER:-}" || ok=FAILED
      fi
      ;;
    wasm32-*)
      what=tested
      ok=ok
      echo "== $t: cargo clippy -D warnings (the library)"
      PATH=/usr/bin:$PATH "$CARGO" clippy -q "${std_args[@]}" --target "$t" --lib \
        -- -D warnings || ok=FAILED
      echo "== $t: the module (gguf.wasm), driven from Node.js: tests/wasm/smoke.mjs"
      wasm="$CARGO_TARGET_DIR/$t/debug/gguf.wasm"
      expected="$CARGO_TARGET_DIR/$t/sample-expected.json"
      # What the host's library reads in the sample: the inspector of this checkout.
      if [ ! -x "$wasm_ld" ]; then
        echo "tools/cross.sh: no rust-lld at $wasm_ld (rustup's toolchain) to link the module" >&2
        ok=FAILED
      elif ! "$CARGO" build -q "${std_args[@]}" --target "$t" --lib; then
        ok=FAILED
      elif ! "$host_inspect" --json testdata/sample.gguf >"$expected"; then
        echo "tools/cross.sh: the host's gguf-inspect cannot read testdata/sample.gguf" >&2
        ok=FAILED
      elif ! node tests/wasm/smoke.mjs "$wasm" testdata/sample.gguf "$expected"; then
        ok=FAILED
      fi
      ;;
  esac
  summary_line "$t" "$what" "$ok" $((SECONDS - start))
}

# run_checked TRIPLE...: every type-checked target in one cargo run: their standard libraries and
# crates build side by side on every core (one after the other, each run left cores idle).
run_checked() {
  local start=$SECONDS ok=ok targets c
  choose_std "$1"
  echo "== $*: cargo check, in one run"
  # The library and the test files the tested targets run (the host-only ones drive Linux tools).
  targets=(--lib)
  for f in $CROSS_TESTS; do targets+=(--test "$f"); done
  for c in "$@"; do targets+=(--target "$c"); done
  "$CARGO" check "${std_args[@]}" "${targets[@]}" || ok=FAILED
  for c in "$@"; do prune "$c"; done
  for c in "$@"; do summary_line "$c" checked "$ok" $((SECONDS - start)); done
}

summary_line() { printf '== summary: %-28s %-7s %-6s %4ds\n' "$@"; }

# GGUF_CROSS_PRUNE=1: the target's build and the tests' files removed once it is done.
prune() {
  [ "${GGUF_CROSS_PRUNE:-0}" = 1 ] || return 0
  echo "== $1: removing $CARGO_TARGET_DIR/$1 and the tests' files in $CARGO_TARGET_DIR/tmp" \
    "($(du -sch "$CARGO_TARGET_DIR/$1" "$CARGO_TARGET_DIR/tmp" 2>/dev/null | tail -n 1 | cut -f1); GGUF_CROSS_PRUNE=1)"
  rm -rf "${CARGO_TARGET_DIR:?}/$1" "${CARGO_TARGET_DIR:?}/tmp"
}

# The units of work: each tested target, and the type-checked ones together, in the order given.
units=()
for t in "${triples[@]}"; do
  case " ${checked_triples[*]} " in
    *" $t "*) [ "$t" = "${checked_triples[0]}" ] && units+=("checked") ;;
    *) units+=("$t") ;;
  esac
done

# The units run two at a time (GGUF_CROSS_LANES), each lane taking the next unit when its last
# is done: one build or test run alone leaves a core idle much of the time (a crate's front end,
# a link, the tail of a test run), which the other lane fills. Each lane has a target directory
# of its own (cargo builds one thing at a time in a directory). Each unit's output is printed
# whole when it is done.
lanes=${GGUF_CROSS_LANES:-2}
work="$cross_dir/units"
rm -rf "$work"
mkdir -p "$work"
echo 0 >"$work/next"
need_host_inspect=0
for t in "${triples[@]}"; do
  case "$t" in i686-* | s390x-* | aarch64-unknown-linux-gnu | wasm32-*) need_host_inspect=1 ;; esac
done
if [ $need_host_inspect = 1 ]; then
  echo "== host: the inspector of this checkout (the dump the targets' inspectors must match)"
  build_host_inspect || { echo "tools/cross.sh: cannot build the host's gguf-inspect" >&2; exit 1; }
fi

# Cargo marks a target directory it creates with CACHEDIR.TAG, and tests/common finds the target
# directory by it (to build the C libraries for the same target): marked here in any case.
lane_dir() {
  local d="$cross_dir/build"
  [ "$1" = 1 ] || d="$cross_dir/build-$1"
  mkdir -p "$d"
  [ -f "$d/CACHEDIR.TAG" ] || printf '%s\n' \
    'Signature: 8a477f597d28d172789f06886806bc55' \
    '# This file is a cache directory tag created by cargo.' \
    '# For information about cache directory tags see https://bford.info/cachedir/' \
    >"$d/CACHEDIR.TAG"
  echo "$d"
}

run_lane() {
  local lane=$1 i unit log status began
  export CARGO_TARGET_DIR
  CARGO_TARGET_DIR=$(lane_dir "$lane")
  while :; do
    i=$(flock "$work/next" sh -c 'i=$(cat "$1"); echo $((i + 1)) >"$1"; echo "$i"' sh "$work/next")
    [ "$i" -lt ${#units[@]} ] || return 0
    unit=${units[$i]}
    log="$work/$i.log"
    status=0 began=$SECONDS
    if [ "$unit" = checked ]; then
      (run_checked "${checked_triples[@]}") >"$log" 2>&1 || status=$?
    else
      (run_target "$unit" && prune "$unit") >"$log" 2>&1 || status=$?
    fi
    # A unit that stopped on an error fails, whatever its own summary said before it.
    if [ $status != 0 ]; then
      echo "== $unit: FAILED (exit status $status)"
      summary_line "$unit" stopped FAILED $((SECONDS - began))
    fi >>"$log"
    flock "$work/output" cat "$log"
  done
}

pids=()
for ((lane = 1; lane <= lanes; lane++)); do
  run_lane "$lane" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done

echo "== cross summary (target, what, result, time: the targets ran $lanes at a time)"
failed=0
for ((i = 0; i < ${#units[@]}; i++)); do
  lines=$(sed -n 's/^== summary: //p' "$work/$i.log")
  if [ -z "$lines" ]; then
    echo "${units[$i]}: no summary (the unit stopped early: its output is above)"
    failed=1
  else
    echo "$lines"
    awk '$3 != "ok" { bad = 1 } END { exit !bad }' <<<"$lines" && failed=1
  fi
done
exit $failed
