#!/usr/bin/env bash
# The chat-template benchmark (figures in BENCHMARKS.md, "Chat templates"): renders per second of
# one conversation (bench/chat_conversation.json: a system prompt, ten user turns, three tool
# calls with their results, two tools) over five popular templates, libgguf's C API
# (bench/chat_bench.c) beside transformers' render_jinja_template (bench/chat_python.py) and
# llama.cpp's common_chat_templates_apply (bench/chat_llama.cpp), run one after the other in the
# same invocation. libgguf's prompt must be transformers' byte for byte (the run fails if not);
# whether llama.cpp's is the same is shown. Times are each thread's CPU time (the machine may be
# shared), the minimum over the rounds of the mean of a round (medians in
# target/tmp/chat-bench/*.tsv).
#
#   bench/chat_run.sh [--quick]
#
# Environment: CARGO, CC, CXX, MAKE, GGUF_PYTHON (default .venv/bin/python).
. "$(dirname "$0")/common.sh"
CXX=${CXX:-c++}
py=${GGUF_PYTHON:-.venv/bin/python}
args=(-r 50 -t 0.02)
if [ "${1:-}" = --quick ]; then args=(-r 3 -t 0.005); fi
$MAKE --quiet lib
[ -f target/ggml/libllama-common.so ] && [ -f target/ggml/llama.cpp-v0.5.0/common/chat.h ] || $MAKE ggml
[ -d target/llama.cpp/models/templates ] || $MAKE llama-src
[ -x "$py" ] || $MAKE venv
build_bench chat_bench
inc=target/ggml/llama.cpp-v0.5.0
$CXX -std=c++17 -O2 -Wall -Wextra -Werror -isystem "$inc/common" -isystem "$inc/include" \
  -isystem "$inc/ggml/include" bench/chat_llama.cpp -Ltarget/ggml -l:libllama-common.so \
  -Wl,-rpath,"$PWD/target/ggml" -o target/bench/chat_llama
t=target/llama.cpp/models/templates
templates=("$t/meta-llama-Llama-3.1-8B-Instruct.jinja" "$t/Qwen-Qwen3-0.6B.jinja"
  "$t/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja" "$t/google-gemma-4-31B-it.jinja"
  "$t/mistralai-Mistral-Nemo-Instruct-2407.jinja")
req=bench/chat_conversation.json
out=target/tmp/chat-bench
rm -rf "$out"
mkdir -p "$out"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1722000309}
target/bench/chat_bench "${args[@]}" -o "$out" "$req" "${templates[@]}" > "$out/ours.tsv"
"$py" bench/chat_python.py "${args[@]}" -o "$out" "$req" "${templates[@]}" > "$out/hf.tsv" \
  2> >(grep -v "PyTorch was not found" >&2)
# llama.cpp logs a warning per template: kept in llama.log, shown if it fails.
target/bench/chat_llama "${args[@]}" -o "$out" "$req" "${templates[@]}" > "$out/llama.tsv" \
  2> "$out/llama.log" || { cat "$out/llama.log" >&2; exit 1; }
status=0
for tmpl in "${templates[@]}"; do
  name=$(basename "$tmpl")
  if ! cmp -s "$out/$name.ours.txt" "$out/$name.hf.txt"; then
    echo "$name: libgguf's prompt differs from transformers'" >&2
    status=1
  fi
  if cmp -s "$out/$name.ours.txt" "$out/$name.llama.txt"; then echo "$name yes"; else echo "$name no"; fi
done > "$out/same.txt"
echo "$(lscpu 2>/dev/null | sed -n "s/^Model name: *//p"), one thread;" \
  "${args[*]}; CPU times in microseconds (minimum over the rounds)"
join -t $'\t' <(sort "$out/ours.tsv") <(sort "$out/hf.tsv") \
  | join -t $'\t' - <(sort "$out/llama.tsv") \
  | join -t $'\t' - <(tr ' ' '\t' < "$out/same.txt" | sort) \
  | awk -F'\t' '
    BEGIN {
      printf "%-44s %9s %9s %9s %10s %12s %8s %12s %8s %6s\n", "template", "compile", "render",
        "oneshot", "renders/s", "transformers", "speedup", "llama.cpp", "speedup", "same"
    }
    {
      # $2 compile, $4 render, $6 oneshot (ours); $8 transformers; $10 llama.cpp init,
      # $12 apply, $14 parse + apply; $16 llama.cpp prompt the same
      name = $1; sub(/\.jinja$/, "", name)
      printf "%-44s %9.1f %9.1f %9.1f %10.0f %12.0f %7.1fx %12.0f %7.1fx %6s\n", name, $2, $4,
        $6, 1e6 / $4, 1e6 / $8, $8 / $4, 1e6 / $12, $12 / $4, $16
    }'
exit $status
