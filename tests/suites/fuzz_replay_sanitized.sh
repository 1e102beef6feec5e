#!/usr/bin/env bash
# Replays the fuzz corpus (seed sites, diagnostics cases, crashes found so far) through
# load -> check -> every emitter in a separate ASan+UBSan build; any report fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build-sanitize"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSITEGEN_SANITIZE=ON -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" --target fuzz_replay -j"$(nproc)" >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if "$build/fuzz_replay" "$root/tests/fuzz/corpus"; then
  echo "fuzz_replay_sanitized: 1 passed, 0 failed"
else
  echo "fuzz_replay_sanitized: 0 passed, 1 failed"
  exit 1
fi
