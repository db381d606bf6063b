#!/usr/bin/env bash
# Fetches the llama.cpp sources that the PyPI sdist of llama-cpp-python vendors into
# target/llama.cpp/: its tokenizer test files (models/ggml-vocab-*.gguf with .inp/.out), its chat
# templates (models/templates/*.jinja), its header include/llama.h, and the sources the tokenizer
# and quantizer are read from. Nothing is built.
#   tools/fetch-llama-src.sh [VERSION]   (default 0.3.36)
# The sdist is taken from PyPI's simple index (its JSON form) and checked against the SHA-256 the
# index gives: `pip download` of an sdist would first build its build dependencies from source
# (cmake among them, many minutes on two cores) only to read its metadata.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-0.3.36}
dest=target/llama.cpp
if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "$version" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
name="llama_cpp_python-$version.tar.gz"
index=${PIP_INDEX_URL:-https://pypi.org/simple}
read -r url sha < <(curl -fsS -H 'Accept: application/vnd.pypi.simple.v1+json' \
  "${index%/}/llama-cpp-python/" | python3 -c '
import json, sys
name = sys.argv[1]
for f in json.load(sys.stdin)["files"]:
    if f["filename"] == name:
        print(f["url"], f["hashes"]["sha256"])
        break
else:
    sys.exit("no " + name + " in the index")
' "$name")
curl -fsS -o "$tmp/$name" "$url"
echo "$sha  $tmp/$name" | sha256sum -c --quiet
tar xzf "$tmp/$name" -C "$tmp" "llama_cpp_python-$version/vendor/llama.cpp"
rm -rf "$dest"
mkdir -p target
mv "$tmp/llama_cpp_python-$version/vendor/llama.cpp" "$dest"
echo "$version" > "$dest/VERSION"
echo "fetched llama.cpp's sources from llama-cpp-python $version into $dest"
