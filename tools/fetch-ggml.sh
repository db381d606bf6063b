#!/usr/bin/env bash
# Fetches llama.cpp's prebuilt libraries from the npm package @node-llama-cpp/linux-x64 into
# target/ggml/, for the cross-check tests and the benchmarks: libggml-base.so (ggml's GGUF
# parser, dequantizers, quantizers and validation) and libllama (llama.cpp's tokenizer and
# quantizer) with the libggml it links and ggml's baseline x86-64 CPU backend (for running a
# model: libllama loads the backends found beside it; only the baseline one is fetched, so that
# results do not depend on the machine's instruction sets). The headers the libraries were
# built from (include/, src/*.h and ggml/include/ of llama.cpp v0.5.0, from the git bundle in npm
# node-llama-cpp of the same version) go to target/ggml/llama.cpp-v0.5.0/, for the shim of
# tests/memory_llama.rs, which reads llama.cpp's internal figures. libllama-common.so (llama.cpp's
# common library: llama-server's chat path) and its common/ headers (common/*.h and
# common/jinja/*.h) serve the shim of tests/chat_llama.rs and bench/chat_llama.cpp.
#   tools/fetch-ggml.sh [VERSION]        (default 3.22.1)
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-3.22.1}
dest=target/ggml
libs=(libggml-base.so libggml.v0.5.0.so libllama.v0.5.0.so libggml-cpu-x64.so libllama-common.so)
have=1
for lib in "${libs[@]}"; do [ -f "$dest/$lib" ] || have=0; done
[ -f "$dest/llama.cpp-v0.5.0/src/llama-ext.h" ] || have=0
[ -f "$dest/llama.cpp-v0.5.0/common/chat.h" ] || have=0
[ -f "$dest/llama.cpp-v0.5.0/common/jinja/runtime.h" ] || have=0
if [ "$have" = 1 ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@node-llama-cpp/linux-x64@$version" >/dev/null && tar xzf ./*.tgz)
mkdir -p "$dest"
for lib in "${libs[@]}"; do cp "$tmp/package/bins/linux-x64/$lib" "$dest/"; done
(cd "$tmp" && npm pack --silent "node-llama-cpp@$version" >/dev/null \
  && tar xzf "node-llama-cpp-$version.tgz" package/llama/gitRelease.bundle \
  && git -c advice.detachedHead=false clone --quiet package/llama/gitRelease.bundle llama.cpp)
rm -rf "$dest/llama.cpp-v0.5.0"
mkdir -p "$dest/llama.cpp-v0.5.0/src" "$dest/llama.cpp-v0.5.0/ggml" "$dest/llama.cpp-v0.5.0/common/jinja"
cp -r "$tmp/llama.cpp/include" "$dest/llama.cpp-v0.5.0/"
cp "$tmp/llama.cpp/src/"*.h "$dest/llama.cpp-v0.5.0/src/"
cp -r "$tmp/llama.cpp/ggml/include" "$dest/llama.cpp-v0.5.0/ggml/"
cp "$tmp/llama.cpp/common/"*.h "$dest/llama.cpp-v0.5.0/common/"
cp "$tmp/llama.cpp/common/jinja/"*.h "$dest/llama.cpp-v0.5.0/common/jinja/"
echo "$version" > "$dest/VERSION"
echo "fetched ${libs[*]} from @node-llama-cpp/linux-x64@$version into $dest"
