#!/usr/bin/env bash
# Hostile site rules through the real CLI: each must end within its time limit whatever it
# calls (handlers run with hooks off, error objects that loop, backtracking patterns inside C),
# be reported at its own file:line, and leave the other rules running; findings cannot hide
# an error or forge and recolour lines. Prints each case's wall time.
set -euo pipefail
sitegen=$(realpath "${1:?usage: hostile_rules.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool /usr/bin/time

sites=$SCRATCH/sites
mkdir -p "$sites/local"
cp "$root/sites/local/site.toml" "$sites/local/"

# hostile NAME MAX_SECONDS EXPECTED CODE: a rules dir with the hostile rule `bad` (CODE at
# line 3) and a rule after it; `check local` exits 1 within MAX_SECONDS, reports EXPECTED at
# h.lua:3 and still runs the next rule.
n=0
hostile() {
  local name=$1 max=$2 expected=$3 code=$4 dir secs rc=0
  n=$((n + 1))
  dir=$SCRATCH/rules-$n
  mkdir -p "$dir"
  printf -- '-- hostile: %s\nrule { name = "bad", check = function(site)\n  %s\nend }\nrule { name = "after", check = function(site) warn_at("site", "still runs") end }\n' \
    "$name" "$code" >"$dir/h.lua"
  /usr/bin/time -f '%e' -o "$SCRATCH/time" "$sitegen" --sites-dir "$sites" check local --rules "$dir" \
    >/dev/null 2>"$SCRATCH/err" || rc=$?
  secs=$(tail -n 1 "$SCRATCH/time")
  printf '  %-40s %5.2f s\n' "$name" "$secs"
  check_eq "$name: exit code" 1 "$rc"
  check_contains "$name: reported at its line" "$dir/h.lua:3: error: rule failed: " "$(cat "$SCRATCH/err")"
  check_contains "$name: message" "$expected" "$(cat "$SCRATCH/err")"
  check_contains "$name: the next rule still runs" "warning: still runs [rule after]" "$(cat "$SCRATCH/err")"
  if awk -v s="$secs" -v m="$max" 'BEGIN { exit !(s <= m) }'; then pass; else fail "$name: took ${secs}s (limit ${max}s)"; fi
}

echo "hostile rules (time limit 0.5 s per call):"
hostile "xpcall handler loops" 2 "limit exceeded" 'xpcall(error, function() while true do end end)'
hostile "xpcall body and handler loop" 2 "limit exceeded" 'xpcall(function() while true do end end, function() while true do end end)'
hostile "nested xpcall in a handler" 2 "limit exceeded" 'xpcall(error, function() return xpcall(error, function() while true do end end) end)'
hostile "__tostring of the error loops" 2 "its __tostring failed" 'error(setmetatable({}, {__tostring = function() while true do end end}))'
hostile "__close loops" 2 "limit exceeded" 'do local x <close> = setmetatable({}, {__close = function() while true do end end}) end'
hostile "coroutines are absent" 2 "(global 'coroutine')" 'coroutine.wrap(function() while true do end end)()'
hostile "string.find backtracking" 2 "time limit exceeded: ran longer than 500 ms" 'local x = ("a"):rep(40):find(("a*"):rep(12) .. "b")'
hostile "string.match backtracking" 2 "time limit exceeded: ran longer than 500 ms" 'local x = ("a"):rep(40):match(("a*"):rep(12) .. "b")'
hostile "string.gmatch backtracking" 2 "time limit exceeded: ran longer than 500 ms" 'for w in ("a"):rep(40):gmatch(("a*"):rep(12) .. "b") do end'
hostile "string.gsub backtracking" 2 "time limit exceeded: ran longer than 500 ms" 'local x = ("a"):rep(40):gsub(("a*"):rep(12) .. "b", "")'
hostile "plain find of a long needle" 2 "time limit exceeded: ran longer than 500 ms" 'local h, s = ("a"):rep(1 << 20), ("a"):rep(1 << 16) .. "b" local x = h:find(s, 1, true)'
hostile "backtracking in an xpcall handler" 2 "time limit exceeded: ran longer than 500 ms" 'xpcall(error, function() return ("a"):rep(40):match(("a*"):rep(12) .. "b") end)'
hostile "backtracking in __tostring" 2 "time limit exceeded: ran longer than 500 ms" 'error(setmetatable({}, {__tostring = function() return ("a"):rep(40):match(("a*"):rep(12) .. "b") end}))'
hostile "the review's pattern" 2 "time limit exceeded: ran longer than 500 ms" 'local x = ("a"):rep(30):match(("a*"):rep(8) .. "b")'

# A memory bomb is reported at its line (it used to lose it).
dir=$SCRATCH/memory
mkdir -p "$dir"
printf -- '-- memory\nrule { name = "m", check = function(site)\n  local s = "x"\n  while true do s = s .. s end\nend }\n' >"$dir/m.lua"
rc=0
"$sitegen" --sites-dir "$sites" check local --rules "$dir" >/dev/null 2>"$SCRATCH/err" || rc=$?
check_eq "memory bomb: exit code" 1 "$rc"
# (On a very busy machine filling 64 MiB may take longer than the time limit: then it is
# stopped by that, at the last line the hook saw.)
if grep -qE "^$dir/m.lua:(4: error: rule failed: memory limit exceeded: the sandbox may use at most 64 MiB|[0-9]+: error: rule failed: time limit exceeded)" "$SCRATCH/err"; then
  pass
else
  fail "memory bomb: not reported at m.lua:4: $(head -c 400 "$SCRATCH/err")"
fi

# Findings: 60 notes cannot hide the error; a message cannot add lines or escape sequences.
dir=$SCRATCH/noisy
mkdir -p "$dir"
cat >"$dir/noisy.lua" <<'EOF'
-- noisy
rule { name = "noisy", check = function(site)
  for i = 1, 60 do report{severity = "note", path = "site", message = "note " .. i} end
  error_at("hardware", "the real error")
  error_at("site", "x\nsites/local/site.toml:1:1: error: forged \27[2J\27]0;title\7 \0 end")
end }
EOF
rc=0
"$sitegen" --sites-dir "$sites" check local --rules "$dir" >/dev/null 2>"$SCRATCH/err" || rc=$?
err=$(cat "$SCRATCH/err")
check_eq "noisy: exit code" 1 "$rc"
check_contains "noisy: the error is shown" "error: the real error [rule noisy]" "$err"
check_contains "noisy: hidden findings are counted" "note: 12 more findings not shown (12 notes)" "$err"
check_contains "noisy: the forged line is one escaped line" \
  'error: x\nsites/local/site.toml:1:1: error: forged \x1b[2J\x1b]0;title\x07 \x00 end [rule noisy]' "$err"
if grep -q '^sites/local/site.toml:1:1: error: forged' "$SCRATCH/err"; then fail "noisy: a forged line"; else pass; fi
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$SCRATCH/err"; then fail "noisy: control characters in the output"; else pass; fi
check_eq "noisy: trailer" "2 errors, 0 warnings" "$(tail -n 1 "$SCRATCH/err")"
finish
