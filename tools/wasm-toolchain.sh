# The toolchain that builds libgguf for wasm32-unknown-unknown, sourced by tools/cross.sh and by
# js/build.sh (the npm package's wasm modules). rustup cannot fetch the wasm32 standard library
# here: Debian's rustc-web builds it from Debian's rust-web-src (-Zbuild-std, RUSTC_BOOTSTRAP),
# and the module is linked by rust-lld, which only rustup's toolchain ships (Debian's rustc-web
# has none).

# The Debian packages the wasm32 build needs.
WASM_TOOLCHAIN_PACKAGES="rustc-web rust-web-src cargo-web"

# Installs the packages of WASM_TOOLCHAIN_PACKAGES that are missing (apt-get, as root), or says
# which are missing and fails.
wasm_toolchain_install() {
  local need=() p
  for p in $WASM_TOOLCHAIN_PACKAGES "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== apt-get install ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "the wasm32 build needs Debian's ${need[*]}: apt-get install ${need[*]} (as root)" >&2
    return 1
  fi
}

# Debian's toolchain, not rustup's (which has only the host's standard library), and rust-lld
# as the wasm32 linker (wasm_ld names it; it may be missing, which the caller reports).
wasm_toolchain_env() {
  export RUSTC_BOOTSTRAP=1 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
  wasm_ld=$(env -u RUSTC rustc --print sysroot 2>/dev/null)/lib/rustlib/x86_64-unknown-linux-gnu/bin/rust-lld
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$wasm_ld"
}
