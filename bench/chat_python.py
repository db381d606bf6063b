"""transformers' side of the chat-template benchmark (bench/chat_run.sh; figures in BENCHMARKS.md,
"Chat templates").

    chat_python.py [-r ROUNDS] [-t SECONDS] [-o DIR] REQUEST TEMPLATE...

Renders the request in REQUEST over each TEMPLATE as tests/chat/reference.py does (the steps of
apply_chat_template(..., tokenize=False) before render_jinja_template, then
render_jinja_template, whose compiled template transformers caches): json.loads of the request
included, as libgguf parses its JSON on every render. Each of ROUNDS rounds (default 20) repeats
the render for at least SECONDS (default 0.02) of the thread's CPU time (as chat_bench.c
counts it) and takes the mean; prints one tab-separated line
per template: name, render us (min, median). With -o, the prompt goes to DIR/NAME.hf.txt.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "chat"))
import reference  # noqa: E402


def measure(template, request, rounds, seconds):
    reference.render(template, request)  # warm up: compiles and caches the template
    times = []
    for _ in range(rounds):
        calls = 0
        t0 = time.thread_time()
        while True:
            reference.render(template, request)
            calls += 1
            t1 = time.thread_time()
            if t1 - t0 >= seconds:
                break
        times.append((t1 - t0) / calls * 1e6)
    times.sort()
    return times[0], times[len(times) // 2]


def main():
    args = sys.argv[1:]
    rounds, seconds, out_dir = 20, 0.02, None
    while len(args) > 1 and args[0] in ("-r", "-t", "-o"):
        if args[0] == "-r":
            rounds = int(args[1])
        elif args[0] == "-t":
            seconds = float(args[1])
        else:
            out_dir = args[1]
        args = args[2:]
    if len(args) < 2:
        sys.exit("usage: chat_python.py [-r ROUNDS] [-t SECONDS] [-o DIR] REQUEST TEMPLATE...")
    with open(args[0], encoding="utf-8") as f:
        request = f.read()
    for path in args[1:]:
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            template = f.read()
        best, median = measure(template, request, rounds, seconds)
        if out_dir:
            with open(os.path.join(out_dir, name + ".hf.txt"), "w", encoding="utf-8", newline="") as f:
                f.write(reference.render(template, request))
        print(f"{name}\t{best:.2f}\t{median:.2f}", flush=True)


if __name__ == "__main__":
    main()
