#!/usr/bin/env bash
# Self-test of the test infrastructure every real-tool suite relies on:
#   common.sh   counters (also from subshells/pipelines), check_eq diffs, need_tool, finish,
#               at_exit hooks and SCRATCH clean-up -- checked in child scripts;
#   lmod-lib.sh on hand-written modulefiles with the real Lmod: the exact variables a load
#               sets (incl. pushenv, family, unsetenv), a clean load/unload round trip, two
#               deliberately asymmetric modules that must be caught, checkSyntax,
#               check_module_tree_syntax, spider, show, the clean shell and the env dump;
#   slurm.sh    up (and up again: reused), srun -n2, two 2-rank jobs that provably run at the
#               same time, sbatch --wait with the job's exit code, down (nothing left).
# Usage: infra_selftest.sh [SITEGEN]   (the sitegen binary is not needed)
# Scripts in single quotes run in child shells / the clean Lmod shell / Slurm steps.
# shellcheck disable=SC2016
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool diff cmp srun sbatch slurmctld slurmd munge

# ---------------------------------------------------------------- common.sh, in child suites
child() { # child NAME BODY: runs BODY as a suite sourcing common.sh; prints output, then rc=N
  local f=$SCRATCH/child-$1.sh
  printf '%s\n' 'set -euo pipefail' "source '$root/tests/tools/common.sh'" "$2" >"$f"
  local rc=0
  bash "$f" >"$f.out" 2>&1 || rc=$?
  cat "$f.out"
  echo "rc=$rc"
}
out=$(child mismatch 'pass; check_eq "the check" "a" "b"; finish')
check_eq "check_eq mismatch: diff, counts and exit status" "FAIL child-mismatch: the check
--- expected
+++ actual
@@ -1 +1 @@
-a
+b
1 passed, 1 failed
rc=1" "$out"
out=$(child subshells 'pass; (pass); echo x | while read -r _; do pass; done; pass & wait; check_eq same x x; finish')
check_eq "counts from subshells, pipelines, background jobs" "5 passed, 0 failed
rc=0" "$out"
out=$(child needtool 'need_tool bash no-such-tool-xyz; pass; finish')
check_eq "need_tool fails the suite at once" "FAIL child-needtool: required tool 'no-such-tool-xyz' is not installed (run tests/tools/install-deps.sh); real-tool tests are never skipped
0 passed, 1 failed
rc=1" "$out"
out=$(child empty 'finish')
check_eq "a suite that checked nothing fails" "FAIL child-empty: no check ran
0 passed, 1 failed
rc=1" "$out"
out=$(child hooks 'echo "$SCRATCH" >'"'$SCRATCH/child-scratch'"'; at_exit "echo first-registered"; at_exit "echo second-registered"; check "true runs" true; finish')
check_eq "at_exit hooks run in reverse order" "second-registered
first-registered" "$(grep registered <<<"$out")"
if [[ -s $SCRATCH/child-scratch && ! -e $(cat "$SCRATCH/child-scratch") ]]; then pass; else fail "SCRATCH of a finished suite was not removed"; fi
out=$(child check 'check "false fails" sh -c "echo why; exit 3"; finish')
check_eq "check reports the command's status and output" "FAIL child-check: false fails (exit 3: sh -c echo why; exit 3)
why
0 passed, 1 failed
rc=1" "$out"

# ---------------------------------------------------------------- lmod-lib.sh, real Lmod
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed ($LMOD_INIT)"; finish; }
mp=$SCRATCH/modules
mkdir -p "$mp/good" "$mp/asym" "$mp/setpath" "$mp/unsetter" "$mp/broken"
cat >"$mp/good/1.0.lua" <<'LUA'
whatis("Description: a hand-written test module")
help([[test module]])
local root = "/opt/good/1.0"
setenv("GOOD_ROOT", root)
setenv("GOOD_SPACED", "a b  c")
prepend_path("PATH", pathJoin(root, "bin"))
append_path("MANPATH", pathJoin(root, "share/man"))
prepend_path("GOOD_LIST", "/x")
prepend_path("GOOD_LIST", "/y")
pushenv("GOOD_PUSHED", "pushed")
family("goodfamily")
LUA
# Forgets its variable on unload: setenv only in load mode.
cat >"$mp/asym/1.0.lua" <<'LUA'
if mode() == "load" then setenv("ASYM_LEAK", "1") end
setenv("ASYM_OK", "1")
LUA
# A classic bug: setenv of PATH instead of prepend_path; unload unsets PATH altogether.
cat >"$mp/setpath/1.0.lua" <<'LUA'
setenv("PATH", "/opt/setpath/bin:" .. os.getenv("PATH"))
LUA
# unsetenv cannot restore on unload, so it is only used for lmod_vars_set_by's `unset` lines.
printf 'unsetenv("PRESET")\nsetenv("UNSETTER", "1")\n' >"$mp/unsetter/1.0.lua"
printf 'setenv("BROKEN", "x"\n' >"$mp/broken/1.0.lua"

LMOD_EXTRA_ENV=(GOOD_PUSHED=before)
if actual=$(lmod_vars_set_by "$mp" good/1.0); then
  check_eq "lmod_vars_set_by: exactly what good/1.0 sets" "GOOD_LIST=/y:/x
GOOD_PUSHED=pushed
GOOD_ROOT=/opt/good/1.0
GOOD_SPACED=a b  c
LMOD_FAMILY_GOODFAMILY=good
LMOD_FAMILY_GOODFAMILY_VERSION=1.0
MANPATH=/opt/good/1.0/share/man
PATH=/opt/good/1.0/bin:/usr/bin:/bin" "$actual"
else
  fail "lmod_vars_set_by: module load good/1.0 failed"
fi
if report=$(lmod_load_unload_roundtrip "$mp" good/1.0 2>&1); then pass; else fail "round trip of good/1.0: $report"; fi
LMOD_EXTRA_ENV=(PRESET=was-set)
check_eq "lmod_vars_set_by: unset lines" "UNSETTER=1
unset PRESET" "$(lmod_vars_set_by "$mp" unsetter/1.0)"
LMOD_EXTRA_ENV=()

if report=$(lmod_load_unload_roundtrip "$mp" asym/1.0 2>&1); then
  fail "asymmetric module asym/1.0 passed the round trip"
else
  check_eq "round trip names the leaked variable" "> ASYM_LEAK=1" "$(grep '^[<>]' <<<"$report")"
fi
if report=$(lmod_load_unload_roundtrip "$mp" setpath/1.0 2>&1); then
  fail "setenv(PATH) module passed the round trip"
else
  check_eq "round trip shows PATH lost on unload" "< PATH=/usr/bin:/bin" "$(grep '^[<>]' <<<"$report")"
fi
check_eq "lmod_vars_set_by of asym/1.0" "ASYM_LEAK=1
ASYM_OK=1" "$(lmod_vars_set_by "$mp" asym/1.0)"
if out=$(lmod_vars_set_by "$mp" no-such/1.0 2>&1); then fail "loading a missing module succeeded"; else pass; fi
check_contains "missing module: Lmod's message is passed on" "no-such/1.0" "$out"

if out=$(lmod_check_syntax "$mp" good/1.0); then check_eq "checkSyntax of good/1.0 says nothing" "" "$out"; else fail "checkSyntax rejected good/1.0: $out"; fi
if out=$(lmod_check_syntax "$mp" broken/1.0); then
  fail "checkSyntax accepted broken/1.0"
else
  check_contains "checkSyntax of broken/1.0 shows the Lua error" "')' expected" "$out"
fi
tree_ok=$SCRATCH/tree-ok
mkdir -p "$tree_ok" && cp -r "$mp/good" "$mp/asym" "$tree_ok/"
if out=$(lmod_check_tree "$tree_ok"); then
  check_eq "check_module_tree_syntax on a clean tree" "No errors found" "$(sed '/^[[:space:]]*$/d' <<<"$out")"
else
  fail "check_module_tree_syntax rejected a clean tree: $out"
fi
if out=$(lmod_check_tree "$mp"); then
  fail "check_module_tree_syntax accepted a tree with broken/1.0"
else
  check_contains "check_module_tree_syntax names broken/1.0" "broken/1.0" "$out"
fi
if out=$(lmod_spider "$mp" good/1.0); then
  check_contains "spider shows the module" "good: good/1.0" "$out"
  check_contains "spider shows the whatis" "a hand-written test module" "$out"
else
  fail "module spider good/1.0 failed: $out"
fi
if out=$(lmod_show "$mp" good/1.0); then
  check_contains "module show" 'setenv("GOOD_ROOT","/opt/good/1.0")' "$out"
else
  fail "module show good/1.0 failed: $out"
fi

export SITEGEN_SELFTEST_OUTER=leak
out=$(lmod_clean_shell "$mp" 'echo "PATH=$PATH"' 'echo "HOME=$HOME"' 'echo "MODULEPATH=$MODULEPATH"' \
  'echo "OUTER=${SITEGEN_SELFTEST_OUTER:-unset}"' 'type -t module' 'echo "args=$#"')
check_eq "lmod_clean_shell: clean env, one CMD per line" "PATH=/usr/bin:/bin
HOME=$LMOD_TEST_HOME
MODULEPATH=$mp
OUTER=unset
function
args=0" "$out"
unset SITEGEN_SELFTEST_OUTER
if lmod_clean_shell "$mp" 'true' 'false'; then fail "lmod_clean_shell: status is not the last command's"; else pass; fi
# lmod_env_dump is byte-exact (a value's trailing newline survives); lmod_env_lines maps
# newlines inside values to \001.
out=$(lmod_clean_shell "$mp" "export X_NL=\$'a\\nb\\n'" 'lmod_env_dump | tr "\0\n" "\n#" | grep "^X_NL="' \
  'lmod_env_dump | lmod_env_lines | grep "^X_NL=" | od -An -c | tr -s " "')
check_eq "lmod_env_dump and lmod_env_lines with newlines in a value" "X_NL=a#b#
 X _ N L = a 001 b 001 \\n" "$out"
n=$(lmod_clean_shell "$mp" 'module load good/1.0 && lmod_env_dump | tr "\0" "\n" | grep -cE "^(_ModuleTable|LOADEDMODULES=|_LMFILES_=|__LMOD_REF_COUNT_|__LMOD_STACK_)" || true')
check_eq "lmod_env_dump leaves out Lmod's bookkeeping" "0" "$n"

# ---------------------------------------------------------------- slurm.sh, real Slurm
slurm=$root/tests/tools/slurm.sh
sdir=$SCRATCH/slurm
at_exit "bash '$slurm' down '$sdir'"
t0=$(date +%s%N)
if ! line=$(bash "$slurm" up "$sdir"); then fail "slurm.sh up failed"; finish; fi
check_eq "slurm.sh up prints only the export line" "export SLURM_CONF=$sdir/slurm.conf" "$line"
eval "$line"
echo "slurm.sh up took $((($(date +%s%N) - t0) / 1000000)) ms"
check "slurm.sh status after up" bash "$slurm" status "$sdir"
check_eq "slurm.sh up again reuses the cluster" "$line" "$(bash "$slurm" up "$sdir" 2>/dev/null)"
check_eq "srun -n2 hostname" "$(hostname)
$(hostname)" "$(timeout 60 srun -n2 hostname)"
check_eq "srun -n2 rank variables" "0 2
1 2" "$(timeout 60 srun -n2 bash -c 'echo $SLURM_PROCID $SLURM_NTASKS' | sort)"
# Two 2-rank jobs at once: each waits (<= 30 s) for a file the other one writes.
sync_dir=$SCRATCH/sync
mkdir -p "$sync_dir"
rendezvous='touch "$0/$1.$SLURM_PROCID"; for i in $(seq 300); do [ -e "$0/$2.$SLURM_PROCID" ] && exit 0; sleep 0.1; done; exit 1'
timeout 60 srun -n2 bash -c "$rendezvous" "$sync_dir" a b >"$SCRATCH/job-a.out" 2>&1 &
pa=$!
timeout 60 srun -n2 bash -c "$rendezvous" "$sync_dir" b a >"$SCRATCH/job-b.out" 2>&1 &
pb=$!
ra=0 rb=0
wait "$pa" || ra=$?
wait "$pb" || rb=$?
check_eq "two 2-rank srun jobs run at the same time" "0 0" "$ra $rb"
[[ "$ra $rb" == "0 0" ]] || cat "$SCRATCH/job-a.out" "$SCRATCH/job-b.out"
printf '#!/bin/bash\n#SBATCH -n2\nsrun -n2 hostname\nexit 3\n' >"$SCRATCH/job.sh"
rc=0
(cd "$SCRATCH" && timeout 120 sbatch --wait --quiet -o "$SCRATCH/job.out" "$SCRATCH/job.sh") || rc=$?
check_eq "sbatch --wait returns the job's exit code" "3" "$rc"
check_eq "sbatch job output" "$(hostname)
$(hostname)" "$(cat "$SCRATCH/job.out" 2>/dev/null)"
ctld=$(cat "$sdir/slurmctld.pid") slurmd_pid=$(cat "$sdir/slurmd.pid")
check "slurm.sh down" bash "$slurm" down "$sdir"
if kill -0 "$ctld" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$ctld/status"; then fail "slurmctld $ctld still runs after down"; else pass; fi
if kill -0 "$slurmd_pid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$slurmd_pid/status"; then fail "slurmd $slurmd_pid still runs after down"; else pass; fi
if bash "$slurm" status "$sdir"; then fail "slurm.sh status after down"; else pass; fi
finish
