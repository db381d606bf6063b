#!/usr/bin/env bash
# Installs (or uninstalls) libgguf: what `make install` / `make uninstall` run.
#
#   install/install.sh install   [--prefix DIR] [--destdir DIR]
#   install/install.sh uninstall [--prefix DIR] [--destdir DIR]
#
# --prefix    where the files go (default /usr/local); written into gguf.pc, so absolute
# --destdir   a staging root prepended to every path written (packaging: DESTDIR)
#
# It installs the release library that `make` built in target/release (or $CARGO_TARGET_DIR/
# release), with its soname libgguf.so.MAJOR: it runs the same command as `make lib`, which
# finds the library up to date after `make` and builds it otherwise (the first time, a few
# minutes). The installed libgguf.so is stripped; its debug information goes to a file of its
# own beside it, lib/.debug/libgguf.so.MAJOR.MINOR.PATCH.debug, which the library names in its
# .gnu_debuglink section (where gdb and other debuggers look for it), as distributions do.
#
# Installs, under DESTDIR/PREFIX:
#   lib/libgguf.so.MAJOR.MINOR.PATCH (soname libgguf.so.MAJOR, stripped), its debug information
#   lib/.debug/libgguf.so.MAJOR.MINOR.PATCH.debug, lib/libgguf.so.MAJOR and
#   lib/libgguf.so (links), lib/libgguf.a (without debug information, as distributions ship
#   static libraries), include/gguf.h, lib/pkgconfig/gguf.pc,
#   lib/cmake/gguf/ggufConfig.cmake and ggufConfigVersion.cmake,
#   bin/gguf-inspect (built with $CC against the installed library, found through the run path
#   $ORIGIN/../lib), bin/gguf-quantize (the same way) and share/libgguf/sample.gguf (what gguf-inspect reads given no FILE)
# The version comes from Cargo.toml; the last three files are made from the templates beside
# this script (@PREFIX@, @VERSION@, @MAJOR@, @MINOR@, @PATCH@, @SIZEOF_VOID_P@ substituted).
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
die() { echo "install.sh: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: install.sh install|uninstall [--prefix DIR] [--destdir DIR]"
action=$1
shift
prefix=/usr/local
destdir=
target_dir=${CARGO_TARGET_DIR:-$root/target}
case $target_dir in /*) ;; *) target_dir=$root/$target_dir ;; esac
build_dir=$target_dir/release
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || die "$1 needs a value"
  case $1 in
    --prefix) prefix=$2 ;;
    --destdir) destdir=$2 ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
case $prefix in
  /*) ;;
  *) die "PREFIX must be an absolute path (it is written into gguf.pc): $prefix" ;;
esac
case $prefix in
  *[[:space:]]*) die "PREFIX must not contain white space (pkg-config cannot quote it): $prefix" ;;
esac
prefix=${prefix%/}

# The package version, from the [package] section of Cargo.toml.
version=$(awk '/^\[/ { in_package = ($0 == "[package]") }
               in_package && /^version *=/ { gsub(/.*= *"|".*/, ""); print; exit }' "$root/Cargo.toml")
[[ $version =~ ^([0-9]+)\.([0-9]+)\.([0-9]+) ]] || die "no version in $root/Cargo.toml"
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]} patch=${BASH_REMATCH[3]}

dest=$destdir$prefix
lib=$dest/lib
debug_file=$lib/.debug/libgguf.so.$version.debug
files=("$lib/libgguf.so.$version" "$debug_file" "$lib/libgguf.so.$major" "$lib/libgguf.so"
       "$lib/libgguf.a"
       "$dest/include/gguf.h" "$lib/pkgconfig/gguf.pc" "$lib/cmake/gguf/ggufConfig.cmake"
       "$lib/cmake/gguf/ggufConfigVersion.cmake" "$dest/bin/gguf-inspect"
       "$dest/bin/gguf-quantize" "$dest/share/libgguf/sample.gguf")

# Writes template $1 to $2 with the placeholders substituted (no sed: PREFIX may hold any byte).
generate() {
  local text
  text=$(<"$here/$1")
  text=${text//@PREFIX@/"$prefix"}
  text=${text//@VERSION@/"$version"}
  text=${text//@MAJOR@/"$major"}
  text=${text//@MINOR@/"$minor"}
  text=${text//@PATCH@/"$patch"}
  text=${text//@SIZEOF_VOID_P@/"$(( $(getconf LONG_BIT) / 8 ))"}
  printf '%s\n' "$text" > "$2.tmp"
  chmod 0644 "$2.tmp"
  mv -f "$2.tmp" "$2"
}

case $action in
  install)
    say() { echo "install.sh: $*"; }
    # The command of `make lib` (Makefile): up to date after `make`, nothing is built again.
    say "the release library with soname libgguf.so.$major, in $build_dir (as \`make\` builds it;" \
      "if make has not, cargo builds it now: a few minutes)"
    (cd "$root" && "${INSTALL_CARGO:-${CARGO:-cargo}}" rustc --release --lib --target-dir "$target_dir" \
      -- -C "link-arg=-Wl,-soname,libgguf.so.$major") || die "cargo could not build the library"
    ln -sfn libgguf.so "$build_dir/libgguf.so.$major"
    for f in libgguf.so libgguf.a; do
      [ -f "$build_dir/$f" ] || die "$build_dir/$f is missing after the build"
    done
    # Stripped copy and debug information, made aside in the build directory.
    # (One of its own per run: two installations may run at once, as the install tests do.)
    stage=$(mktemp -d "$build_dir/install-stage.XXXXXX") || die "cannot create a directory in $build_dir"
    trap 'rm -rf "$stage"' EXIT
    for tool in objcopy strip; do
      command -v "$tool" >/dev/null || die "$tool (binutils) is needed to strip the library"
    done
    say "stripping libgguf.so ($(du -k "$build_dir/libgguf.so" | cut -f1) KiB); its debug" \
      "information goes to lib/.debug/libgguf.so.$version.debug"
    objcopy --only-keep-debug "$build_dir/libgguf.so" "$stage/libgguf.so.$version.debug" ||
      die "objcopy could not extract the debug information"
    strip --strip-unneeded -R .comment -o "$stage/libgguf.so.$version" "$build_dir/libgguf.so" ||
      die "strip failed"
    (cd "$stage" && objcopy --add-gnu-debuglink="libgguf.so.$version.debug" "libgguf.so.$version") ||
      die "objcopy could not add the debug link"
    # The static library without its debug information too (as distributions ship them).
    strip --strip-debug --enable-deterministic-archives -R .comment -o "$stage/libgguf.a" \
      "$build_dir/libgguf.a" || die "strip failed on libgguf.a"
    say "building gguf-inspect against it"
    # The inspector's default FILE, the installed sample, as a C string literal.
    sample=$prefix/share/libgguf/sample.gguf
    sample=${sample//\\/\\\\}
    sample=${sample//\"/\\\"}
    "${INSTALL_CC:-${CC:-cc}}" -std=c99 -O2 -Wall -Wextra -Werror -I"$root/include" \
      -DGGUF_INSPECT_DEFAULT_SAMPLE="\"$sample\"" -o "$stage/gguf-inspect" \
      "$root/tools/gguf-inspect.c" -L"$build_dir" -lgguf -Wl,-rpath,'$ORIGIN/../lib' ||
      die "could not build gguf-inspect"
    say "building gguf-quantize against it"
    "${INSTALL_CC:-${CC:-cc}}" -std=c99 -O2 -Wall -Wextra -Werror -I"$root/include" \
      -o "$stage/gguf-quantize" "$root/tools/gguf-quantize.c" -L"$build_dir" -lgguf \
      -Wl,-rpath,'$ORIGIN/../lib' || die "could not build gguf-quantize"
    header_version=$(sed -n 's/^#define LIBGGUF_VERSION "\(.*\)"$/\1/p' "$root/include/gguf.h")
    [ "$header_version" = "$version" ] ||
      die "include/gguf.h is for version '$header_version', Cargo.toml says $version: run make header"
    say "installing into $dest"
    install -d "$lib" "$lib/.debug" "$dest/include" "$lib/pkgconfig" "$lib/cmake/gguf" \
      "$dest/bin" "$dest/share/libgguf"
    install -m 0755 "$stage/libgguf.so.$version" "$lib/libgguf.so.$version"
    install -m 0644 "$stage/libgguf.so.$version.debug" "$debug_file"
    ln -sfn "libgguf.so.$version" "$lib/libgguf.so.$major"
    ln -sfn "libgguf.so.$major" "$lib/libgguf.so"
    install -m 0644 "$stage/libgguf.a" "$lib/libgguf.a"
    install -m 0644 "$root/include/gguf.h" "$dest/include/gguf.h"
    install -m 0755 "$stage/gguf-inspect" "$dest/bin/gguf-inspect"
    install -m 0755 "$stage/gguf-quantize" "$dest/bin/gguf-quantize"
    install -m 0644 "$root/testdata/sample.gguf" "$dest/share/libgguf/sample.gguf"
    generate gguf.pc.in "$lib/pkgconfig/gguf.pc"
    generate ggufConfig.cmake.in "$lib/cmake/gguf/ggufConfig.cmake"
    generate ggufConfigVersion.cmake.in "$lib/cmake/gguf/ggufConfigVersion.cmake"
    for f in "${files[@]}"; do echo "installed $f"; done
    # The dynamic linker's cache covers the usual system prefixes; refresh it for them.
    if [ -z "$destdir" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null &&
       { [ "$prefix" = /usr/local ] || [ "$prefix" = /usr ]; }; then
      ldconfig || true
    fi
    ;;
  uninstall)
    for f in "${files[@]}"; do
      if [ -e "$f" ] || [ -L "$f" ]; then rm -f "$f" && echo "removed $f"; fi
    done
    # Directories this installation created, if nothing else lives there.
    rmdir "$lib/cmake/gguf" "$lib/.debug" 2>/dev/null || true
    rmdir "$lib/cmake" "$lib/pkgconfig" "$dest/share/libgguf" 2>/dev/null || true
    ;;
  *) die "unknown action $action (install or uninstall)" ;;
esac
