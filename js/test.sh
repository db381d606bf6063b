#!/usr/bin/env bash
# The package's tests as `make test` runs them: its dependencies from the lock file, Debian's
# chromium for the browser test (installed where missing, as root), the wasm modules built, then
# node's test runner over test/; ends with one `js: N passed, M failed` line for make test's
# summary.
set -uo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error || exit 1
# The browser test's headless Chromium (Debian's), installed where missing (as root).
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== apt-get install chromium"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || exit 1
  else
    echo "js/test.sh: the browser test needs Debian's chromium: apt-get install chromium (as root)" >&2
    exit 1
  fi
fi
npm run --silent build || exit 1
out=$(mktemp)
# Two test files at a time, or one per core where there are more: Node's default (one fewer
# than the cores) runs them one by one on a 2-core machine, though many wait on a child
# process, a browser or a server much of their time (93 s one by one, 55 s two at a time).
jobs=$(nproc 2>/dev/null || echo 2)
[ "$jobs" -ge 2 ] 2>/dev/null || jobs=2
node --test --test-concurrency="$jobs" test/ 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$out")
fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$out")
rm -f "$out"
echo "js: ${pass:-0} passed, ${fail:-1} failed"
exit "$rc"
