#!/usr/bin/env bash
# Fetches ggml's prebuilt libggml-base.so (the reference GGUF parser) from the npm package
# @node-llama-cpp/linux-x64 into target/ggml/, for the cross-check tests and the benchmarks.
#   tools/fetch-ggml.sh [VERSION]        (default 3.22.1)
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-3.22.1}
dest=target/ggml
if [ -f "$dest/libggml-base.so" ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@node-llama-cpp/linux-x64@$version" >/dev/null && tar xzf ./*.tgz)
mkdir -p "$dest"
cp "$tmp/package/bins/linux-x64/libggml-base.so" "$dest/"
echo "$version" > "$dest/VERSION"
echo "fetched libggml-base.so from @node-llama-cpp/linux-x64@$version into $dest"
