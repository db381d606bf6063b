#!/usr/bin/env bash
# Installs (or uninstalls) libgguf: what `make install` / `make uninstall` run.
#
#   install/install.sh install   [--prefix DIR] [--destdir DIR]
#   install/install.sh uninstall [--prefix DIR] [--destdir DIR]
#
# --prefix    where the files go (default /usr/local); written into gguf.pc, so absolute
# --destdir   a staging root prepended to every path written (packaging: DESTDIR)
#
# It builds the release library in target/install with its soname (libgguf.so.MAJOR), which
# only installed copies carry: programs built in the tree link target/<profile>/libgguf.so by
# path and can never pick up an installed copy instead.
#
# Installs, under DESTDIR/PREFIX:
#   lib/libgguf.so.MAJOR.MINOR.PATCH (soname libgguf.so.MAJOR), lib/libgguf.so.MAJOR and
#   lib/libgguf.so (links), lib/libgguf.a, include/gguf.h, lib/pkgconfig/gguf.pc,
#   lib/cmake/gguf/ggufConfig.cmake and ggufConfigVersion.cmake,
#   bin/gguf-inspect (built with $CC against the installed library, found through the run path
#   $ORIGIN/../lib) and share/libgguf/sample.gguf (what gguf-inspect reads given no FILE)
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
build_dir=$root/target/install/release
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
files=("$lib/libgguf.so.$version" "$lib/libgguf.so.$major" "$lib/libgguf.so" "$lib/libgguf.a"
       "$dest/include/gguf.h" "$lib/pkgconfig/gguf.pc" "$lib/cmake/gguf/ggufConfig.cmake"
       "$lib/cmake/gguf/ggufConfigVersion.cmake" "$dest/bin/gguf-inspect"
       "$dest/share/libgguf/sample.gguf")

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
    (cd "$root" && "${CARGO:-cargo}" rustc --quiet --release --lib --target-dir target/install \
      -- -C "link-arg=-Wl,-soname,libgguf.so.$major") || die "cargo could not build the library"
    for f in libgguf.so libgguf.a; do
      [ -f "$build_dir/$f" ] || die "$build_dir/$f is missing after the build"
    done
    # The inspector's default FILE, the installed sample, as a C string literal.
    sample=$prefix/share/libgguf/sample.gguf
    sample=${sample//\\/\\\\}
    sample=${sample//\"/\\\"}
    "${CC:-cc}" -std=c99 -O2 -Wall -Wextra -Werror -I"$root/include" \
      -DGGUF_INSPECT_DEFAULT_SAMPLE="\"$sample\"" -o "$build_dir/gguf-inspect" \
      "$root/tools/gguf-inspect.c" -L"$build_dir" -lgguf -Wl,-rpath,'$ORIGIN/../lib' ||
      die "could not build gguf-inspect"
    header_version=$(sed -n 's/^#define LIBGGUF_VERSION "\(.*\)"$/\1/p' "$root/include/gguf.h")
    [ "$header_version" = "$version" ] ||
      die "include/gguf.h is for version '$header_version', Cargo.toml says $version: run make header"
    install -d "$lib" "$dest/include" "$lib/pkgconfig" "$lib/cmake/gguf" "$dest/bin" \
      "$dest/share/libgguf"
    install -m 0755 "$build_dir/libgguf.so" "$lib/libgguf.so.$version"
    ln -sfn "libgguf.so.$version" "$lib/libgguf.so.$major"
    ln -sfn "libgguf.so.$major" "$lib/libgguf.so"
    install -m 0644 "$build_dir/libgguf.a" "$lib/libgguf.a"
    install -m 0644 "$root/include/gguf.h" "$dest/include/gguf.h"
    install -m 0755 "$build_dir/gguf-inspect" "$dest/bin/gguf-inspect"
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
    rmdir "$lib/cmake/gguf" 2>/dev/null || true
    rmdir "$lib/cmake" "$lib/pkgconfig" "$dest/share/libgguf" 2>/dev/null || true
    ;;
  *) die "unknown action $action (install or uninstall)" ;;
esac
