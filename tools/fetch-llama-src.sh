#!/usr/bin/env bash
# Fetches the llama.cpp sources that the PyPI sdist of llama-cpp-python vendors into
# target/llama.cpp/: its tokenizer test files (models/ggml-vocab-*.gguf with .inp/.out), its
# header include/llama.h, and the sources the tokenizer and quantizer are read from. Nothing is
# built.
#   tools/fetch-llama-src.sh [VERSION]   (default 0.3.36)
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-0.3.36}
dest=target/llama.cpp
if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "$version" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --no-binary :all: \
  "llama-cpp-python==$version" -d "$tmp" >/dev/null
tar xzf "$tmp"/llama_cpp_python-"$version".tar.gz -C "$tmp" \
  "llama_cpp_python-$version/vendor/llama.cpp"
rm -rf "$dest"
mv "$tmp/llama_cpp_python-$version/vendor/llama.cpp" "$dest"
echo "$version" > "$dest/VERSION"
echo "fetched llama.cpp's sources from llama-cpp-python $version into $dest"
