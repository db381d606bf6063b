"""Times the reference reader (PyPI `gguf`, `gguf.GGUFReader`) opening a GGUF file.

    .venv/bin/python bench/reference_open.py FILE [ROUNDS]      (ROUNDS defaults to 3)

`make venv` installs the package into .venv. Opening parses every key, value and array element
into numpy views, which takes seconds on a 262144-token vocabulary, hence the few rounds. Prints
a readable line and one machine-readable line in open_bench's format:

    RESULT file=NAME what=open_reference_py median_ms=M min_ms=M n=ROUNDS
"""

import importlib.metadata
import os
import statistics
import sys
import time

import gguf


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) == 3 else 3
    if rounds < 1:
        print("reference_open.py: ROUNDS must be at least 1", file=sys.stderr)
        return 2
    name = os.path.basename(path)
    times = []
    tensors = keys = 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        reader = gguf.GGUFReader(path, "r")
        t1 = time.perf_counter()
        times.append((t1 - t0) * 1e3)
        tensors, keys = len(reader.tensors), len(reader.fields)
        del reader
    median, least = statistics.median(times), min(times)
    print(
        f"{name}: gguf.GGUFReader (gguf {importlib.metadata.version('gguf')}) open: median {median:.1f} ms, "
        f"min {least:.1f} ms over {rounds} rounds ({keys} fields, {tensors} tensors)"
    )
    print(
        f"RESULT file={name} what=open_reference_py median_ms={median:.6f} "
        f"min_ms={least:.6f} n={rounds}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
