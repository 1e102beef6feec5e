#!/usr/bin/env bash
# SITEGEN_TRACE=FILE: a build, a one-stack rebuild and a check each write a Chrome trace event
# file (read back by Python's json and checked as chrome://tracing and Perfetto read the
# format: complete "X" events with a name, thread, start and duration in microseconds) whose
# spans are the run's steps, each inside the run's own span; the outputs are the ones an
# untraced build writes; a trace that cannot be written is a warning and exit status 3; and
# without the variable no file is written.
set -euo pipefail
sitegen=$(realpath "${1:?usage: trace.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool python3
sites=$SCRATCH/sites
bash "$root/bench/gen-site" 300 "$sites"

# spans FILE RUN SPAN...: FILE is a valid trace whose spans include each SPAN, all within the
# span named RUN (the whole command, on thread 1); prints what is wrong, nothing when it is right.
spans() {
  python3 - "$@" <<'PY'
import json, sys
path, run, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    doc = json.load(open(path))
except Exception as e:
    sys.exit(f"not JSON: {e}")
events = doc.get("traceEvents") if isinstance(doc, dict) else None
if not isinstance(events, list) or not events:
    sys.exit("no traceEvents list")
for e in events:
    ok = (isinstance(e, dict) and isinstance(e.get("name"), str) and e.get("ph") == "X" and e.get("pid") == 1
          and isinstance(e.get("tid"), int) and e["tid"] >= 1 and isinstance(e.get("ts"), (int, float))
          and isinstance(e.get("dur"), (int, float)) and e["ts"] >= 0 and e["dur"] >= 0)
    if not ok:
        sys.exit(f"not a complete event: {e}")
names = {e["name"] for e in events}
missing = [w for w in wanted if w not in names]
if missing:
    sys.exit(f"no span {missing} among {sorted(names)}")
whole = [e for e in events if e["name"] == run]
if len(whole) != 1 or whole[0]["tid"] != 1:
    sys.exit(f"not one {run} span on thread 1: {whole}")
start, end = whole[0]["ts"], whole[0]["ts"] + whole[0]["dur"]
outside = [e["name"] for e in events if e["ts"] < start or e["ts"] + e["dur"] > end + 0.001]
if outside:
    sys.exit(f"spans outside {run}: {outside}")
PY
}

run() {  # run OUT_DIR ARGS...: sitegen with the sites and OUT_DIR
  local out=$1
  shift
  "$sitegen" --sites-dir "$sites" --out-dir "$out" "$@"
}

SITEGEN_TRACE=$SCRATCH/full.json run "$SCRATCH/out" build bench >/dev/null
check_eq "a traced full build: its trace" "" "$(spans "$SCRATCH/full.json" build load check_site rules stack_keys \
  kept_stacks render_site publish_begin publish_finish record_state 2>&1)"
run "$SCRATCH/plain" build bench >/dev/null
if diff -r "$SCRATCH/out" "$SCRATCH/plain" >"$SCRATCH/diff"; then pass "traced and untraced builds write the same tree"
else fail "the traced build's tree differs: $(head -n 20 "$SCRATCH/diff")"; fi

sed -i 's/^torch = "2\.5"$/torch = "2.5.0"/' "$sites/bench/site.toml"
SITEGEN_TRACE=$SCRATCH/one.json run "$SCRATCH/out" build bench >"$SCRATCH/one.out"
check_contains "the traced rebuild changed one stack" "(0 added, 2 changed, 0 removed," "$(<"$SCRATCH/one.out")"
check_eq "a traced one-stack rebuild: its trace" "" "$(spans "$SCRATCH/one.json" build up_to_date last_state look_live \
  scan_live look_spares match_spares kept_stacks render_site publish_finish record_state 2>&1)"
SITEGEN_TRACE=$SCRATCH/check.json run "$SCRATCH/out" check bench >/dev/null
check_eq "a traced check: its trace" "" "$(spans "$SCRATCH/check.json" check load check_site rules 2>&1)"

# A trace that cannot be written: the build is done, the command says so and exits 3.
set +e
SITEGEN_TRACE=$SCRATCH/no-such-dir/file/x.json run "$SCRATCH/out" check bench >/dev/null 2>"$SCRATCH/err"
status=$?
touch "$SCRATCH/file-not-dir"
SITEGEN_TRACE=$SCRATCH/file-not-dir/x.json run "$SCRATCH/out" check bench >/dev/null 2>"$SCRATCH/err2"
status2=$?
set -e
check_eq "a trace path under a file: exit status" 3 "$status2"
check_contains "a trace path under a file: the warning" "sitegen: warning: cannot write the trace SITEGEN_TRACE names" \
  "$(<"$SCRATCH/err2")"
check_eq "a trace in a missing directory is written (its parents made): exit status" 0 "$status"
check "the trace in the made directory is valid" spans "$SCRATCH/no-such-dir/file/x.json" check load

before=$(find "$SCRATCH" -name '*.json' | sort)
env -u SITEGEN_TRACE "$sitegen" --sites-dir "$sites" --out-dir "$SCRATCH/out" check bench >/dev/null
check_eq "without SITEGEN_TRACE no trace is written" "$before" "$(find "$SCRATCH" -name '*.json' | sort)"

finish
