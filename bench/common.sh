# Sourced by the bench/*_run.sh scripts: strict mode, the repository root as the working
# directory, the tools from the environment (CARGO, CC, MAKE), and build_bench.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CARGO=${CARGO:-cargo}
CC=${CC:-cc}
MAKE=${MAKE:-make}

# build_bench NAME [FLAG...]: bench/NAME.c, linked against the release library (and FLAG...),
# into target/bench/NAME.
build_bench() {
  local name=$1
  shift
  mkdir -p target/bench
  $CC -std=c11 -O2 -Wall -Wextra -Werror -Iinclude "bench/$name.c" -Ltarget/release -lgguf "$@" \
    -Wl,-rpath,"$PWD/target/release" -o "target/bench/$name"
}
