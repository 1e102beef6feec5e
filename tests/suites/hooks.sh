#!/usr/bin/env bash
# Site Lua hooks (sites/<name>/hooks/*.lua) end to end with the real consumers. A site whose
# hooks add a family, a property, a load message and a job prologue, all with hostile values:
# the real Lmod loads its modules (the property shows as (T), the message is printed on load
# and not on unload, loading another module of the family replaces the first, unload restores
# the environment byte for byte), luac and shellcheck accept the outputs, and the job script
# runs under bash (real Lmod, a stand-in srun) with every value literal and nothing executed.
# Broken hooks through the CLI: each at its file:line, exit 1, nothing written.
set -euo pipefail
sitegen=$(realpath "${1:?usage: hooks.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool luac5.4 shellcheck
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed"; finish; }

# ---- the site: local's, with a second module (another name) and hooks -----------------------
sites=$SCRATCH/sites
mkdir -p "$sites/hk/hooks" "$SCRATCH/stubs/hookdep" "$SCRATCH/run"
sed 's/^name = "local"/name = "hk"/' "$root/sites/local/site.toml" >"$sites/hk/site.toml"
cat >>"$sites/hk/site.toml" <<'EOF'

[[stacks]]
name = "torch-extra"
version = "2.0"
homepage = "https://pytorch.org/"
description = "A second module in the hooks' family."
EOF
# Every value below that could run something creates a file named pwned-N when it does.
cat >"$sites/hk/hooks/10-module.lua" <<'EOF'
-- Test hooks: every stack joins the family torch, is marked testing and greets on load.
hook {
  name = "module-adds",
  stack = function(site, stack, out)
    out.module.family("torch")
    out.module.property("state", "testing")
    out.module.message([==[Quote " ' ]] ]=] $(touch pwned-1) `touch pwned-2` \ end]==] .. "\nfrom " .. stack.module_full_name)
  end,
}
EOF
cat >"$sites/hk/hooks/20-job.lua" <<'EOF'
-- Test hooks: a job prologue with hostile values.
hook {
  name = "job-adds",
  stack = function(site, stack, out)
    out.job.setenv("HOOK_VALUE", [==[it's "$(touch pwned-3)" `touch pwned-4` ]] ; touch pwned-5 \]==] .. "\nline 2")
    out.job.module_load("hookdep/1.0")
    out.job.run{"printf", "[%s]\n", "$(touch pwned-6)", "`touch pwned-7`", "a b", "'; touch pwned-8; '", "--"}
  end,
}
EOF
# A module of the site's own, which the prologue loads.
echo 'setenv("HOOKDEP_LOADED", "yes")' >"$SCRATCH/stubs/hookdep/1.0.lua"

out=$SCRATCH/out
prefix=$out/modules-out/hk
check "sitegen check runs the hooks" "$sitegen" --sites-dir "$sites" check hk
check "sitegen build" "$sitegen" --sites-dir "$sites" --out-dir "$out" build hk --prefix "$prefix"
mp=$prefix/modulefiles:$SCRATCH/stubs
first=pytorch/1.13.1-cpu
second=torch-extra/2.0

# ---- Lmod ---------------------------------------------------------------------------------
for f in "$prefix"/modulefiles/*/*.lua; do
  check "luac -p ${f#"$prefix"/}" luac5.4 -p "$f"
done
for m in $first $second; do
  if report=$(lmod_check_syntax "$mp" "$m"); then pass; else fail "Lmod --checkSyntax $m"; echo "$report"; fi
  if report=$(lmod_load_unload_roundtrip "$mp" "$m"); then pass; else fail "load/unload roundtrip of $m"; echo "$report"; fi
done
cd "$SCRATCH/run"
# The message, on load only (Lmod ends a message with a blank); the property as (T).
load_err=$(lmod_clean_shell "$mp" "module load $first 2>&1 >/dev/null" 2>&1)
check_eq "message on load, bytes as written" "Quote \" ' ]] ]=] \$(touch pwned-1) \`touch pwned-2\` \\ end
from $first" "$load_err"
unload_err=$(lmod_clean_shell "$mp" "module load $first 2>/dev/null" "module unload $first 2>&1 >/dev/null" 2>&1)
check_eq "no message on unload" "" "$unload_err"
listed=$(lmod_clean_shell "$mp" "module load $first 2>/dev/null" 'module list 2>&1')
check_contains "property state=testing in module list" "1) $first (T)" "$listed"
check_contains "Lmod's legend for it" "T:  Testing" "$listed"
avail=$(lmod_clean_shell "$mp" 'module avail 2>&1')
check_contains "property in module avail" "$second (T)" "$avail"
# The family: loading the second module replaces the first. ($ expands in the clean shell.)
# shellcheck disable=SC2016
swap=$(lmod_clean_shell "$mp" "module load $first 2>/dev/null" "module load $second 2>&1" 'module -t list 2>&1' \
  'echo "family=$LMOD_FAMILY_TORCH $LMOD_FAMILY_TORCH_VERSION"')
check_contains "Lmod swaps within the family" "Lmod is automatically replacing \"$first\" with \"$second\"" "$swap"
check_eq "only the second is loaded" "$second
family=torch-extra 2.0" "$(printf '%s\n' "$swap" | tail -n 2)"

# ---- the easyconfigs: the real EasyBuild's modules (footers) say and do the same --------------
# eb --module-only from a fresh install path writes the module from the easyconfig, in Lua
# (modluafooter) and in Tcl (modtclfooter); Lmod reads both.
eb=$root/../shared/tools/easybuild/eb
[[ -x $eb ]] || { fail "the real EasyBuild is missing at $eb (see ../shared/tools/easybuild/README.md)"; finish; }
for syntax in Lua Tcl; do
  ebdir=$SCRATCH/eb-$syntax
  mkdir -p "$ebdir/src" "$ebdir/tmp" "$ebdir/home"
  for ec in "$out"/easyconfigs-out/hk/*/*/*.eb; do
    if env -i HOME="$ebdir/home" USER="${USER:-root}" PATH=/usr/bin:/bin MODULEPATH="$SCRATCH/stubs" \
      "$eb" --allow-use-as-root-and-accept-consequences --robot-paths= --installpath="$ebdir/prefix" \
      --buildpath="$ebdir/build" --sourcepath="$ebdir/src" --tmpdir="$ebdir/tmp" \
      --installpath-modules="$ebdir/prefix" --suffix-modules-path=modulefiles --filter-env-vars=CMAKE_PREFIX_PATH \
      --module-syntax="$syntax" --module-only --force "$ec" >"$ebdir/eb.log" 2>&1; then
      pass
    else
      fail "eb --module-only --module-syntax=$syntax ${ec##*/}"
      tail -n 15 "$ebdir/eb.log"
    fi
  done
  eb_mp=$ebdir/prefix/modulefiles:$SCRATCH/stubs
  eb_load=$(lmod_clean_shell "$eb_mp" "module load $first 2>&1 >/dev/null" 2>&1)
  check_eq "EasyBuild's $syntax module: the message on load" "$load_err" "$eb_load"
  eb_unload=$(lmod_clean_shell "$eb_mp" "module load $first 2>/dev/null" "module unload $first 2>&1 >/dev/null" 2>&1)
  check_eq "EasyBuild's $syntax module: no message on unload" "" "$eb_unload"
  # shellcheck disable=SC2016
  eb_swap=$(lmod_clean_shell "$eb_mp" "module load $first 2>/dev/null" "module load $second 2>/dev/null" \
    'module -t list 2>&1' 'echo "family=$LMOD_FAMILY_TORCH"' 'module list 2>&1 | grep -c "(T)"')
  check_eq "EasyBuild's $syntax module: family and property" "$second
family=torch-extra
1" "$eb_swap"
done
if [[ -z $(find "$SCRATCH" -name 'pwned-*' -print -quit) ]]; then pass; else fail "a hostile value ran: $(find "$SCRATCH" -name 'pwned-*')"; fi

# ---- the job script -------------------------------------------------------------------------
job=$prefix/software/pytorch/1.13.1-cpu/runscripts/job.slurm
if report=$(shellcheck -s bash "$job" 2>&1); then pass; else fail "shellcheck job.slurm"; echo "$report" | head -n 20; fi
# STAND-IN for srun (no cluster needed here): records its argv, the hook's variable and what
# the hook's module load set.
mkdir -p "$SCRATCH/bin"
cat >"$SCRATCH/bin/srun" <<EOF
#!/bin/bash
# stand-in for srun: records, runs nothing
printf '%s\n' "\$@" >"$SCRATCH/srun.argv"
printf '%s' "\$HOOK_VALUE" >"$SCRATCH/srun.hook_value"
printf '%s' "\${HOOKDEP_LOADED:-}" >"$SCRATCH/srun.hookdep"
EOF
chmod +x "$SCRATCH/bin/srun"
job_out=$(lmod_clean_shell "$mp" "export PATH=$SCRATCH/bin:\$PATH" "bash $job train.py --x 2>/dev/null")
check_eq "job.run prints its words literally" "[\$(touch pwned-6)]
[\`touch pwned-7\`]
[a b]
['; touch pwned-8; ']
[--]" "$job_out"
check_eq "job.setenv value byte for byte" "it's \"\$(touch pwned-3)\" \`touch pwned-4\` ]] ; touch pwned-5 \\
line 2" "$(cat "$SCRATCH/srun.hook_value")"
check_eq "job.module_load loaded the site's module" "yes" "$(cat "$SCRATCH/srun.hookdep")"
check_eq "srun got the wrapper and the program" "$prefix/software/pytorch/1.13.1-cpu/runscripts/python-distributed
train.py
--x" "$(cat "$SCRATCH/srun.argv")"
pwned=$(find "$SCRATCH" -name 'pwned-*' | sort)
check_eq "no hostile value ran" "" "$pwned"
cd "$root"

# ---- broken hooks through the CLI: at their file:line, nothing written ---------------------
# broken NAME CODE EXPECTED [OR_EXPECTED]: a site whose only hook runs CODE at line 3 of
# hooks/h.lua; the error is EXPECTED (or starts with OR_EXPECTED).
n=0
broken() {
  local name=$1 code=$2 expected=$3 or_expected=${4:-} dir rc=0
  n=$((n + 1))
  dir=$SCRATCH/broken-$n
  mkdir -p "$dir/sites/b/hooks"
  sed 's/^name = "local"/name = "b"/' "$root/sites/local/site.toml" >"$dir/sites/b/site.toml"
  printf -- '-- broken: %s\nhook { name = "bad", stack = function(site, stack, out)\n  %s\nend }\n' "$name" "$code" \
    >"$dir/sites/b/hooks/h.lua"
  (cd "$dir" && "$sitegen" build b >"$dir/out" 2>"$dir/err") || rc=$?
  check_eq "$name: exit code" 1 "$rc"
  if [[ -n $or_expected ]] && grep -F "sites/b/hooks/h.lua:3: error: hook failed: $or_expected" "$dir/err" | grep -F "[hook bad]" >/dev/null; then
    pass
  else
    check_contains "$name: at its line" "sites/b/hooks/h.lua:3: error: hook failed: $expected [hook bad]" "$(cat "$dir/err")"
  fi
  check_contains "$name: nothing written" "sitegen: nothing written" "$(cat "$dir/err")"
  if [[ -e $dir/modules-out || -e $dir/easyconfigs-out ]]; then fail "$name: an output tree was written"; else pass; fi
}
# (20 million instructions take about 0.1 s of CPU; on a machine so busy that the hook gets
# less than a twentieth of a core, the 500 ms time limit (at most four times that of wall
# clock) stops the loop first, at the same line:
# in the sandbox, or by the supervisor's kill. The unit tests pin each limit down with the
# other one out of reach.)
broken "loops forever" 'while true do end' "instruction limit exceeded: more than 20000000 Lua instructions (runaway loop?)" \
  "time limit exceeded: ran longer than 500 ms ("
broken "stuck in C" 'local x = ("a"):rep(40):match(("a*"):rep(12) .. "b")' \
  "time limit exceeded: ran longer than 500 ms (stopped in a library call, e.g. a backtracking pattern?)"
broken "unknown builder function" 'out.module.properti("state", "testing")' \
  "out.module has no 'properti' (did you mean 'property'?) (it offers family, message, property)"
broken "a raw module statement" 'out.module.raw("execute{cmd=\"id\"}")' \
  "out.module has no 'raw' (it offers family, message, property)"
broken "an escape sequence in a message" 'out.module.message("\27]0;title\7")' \
  "out.module.message: the message holds a control character (only newlines may be used)"
broken "a shell assignment as program" 'out.job.run{"PATH=/tmp", "id"}' \
  "out.job.run: the program must be a name or a path, without '=' and not starting with '-'"
broken "no file access" 'io.open("/etc/passwd")' "io.open is not available in the sandbox (no file access)"

# ---- a build runs a site's rules beside its hooks (SITEGEN_THREADS=1: one after the other) ----
# Same findings either way: a rule's and a hook file's warnings both reported; a rule's error
# drops the hooks' findings (hooks run only on a site every rule passed) and writes nothing.
# ordered NAME RULE EXIT: a site with a hook file that warns and a rules dir holding RULE.
ordered() {
  local name=$1 rule=$2 want=$3 dir threads rc
  dir=$SCRATCH/ordered-${name// /-}
  mkdir -p "$dir/sites/b/hooks" "$dir/rules"
  sed 's/^name = "local"/name = "b"/' "$root/sites/local/site.toml" >"$dir/sites/b/site.toml"
  printf -- '-- defines none\n' >"$dir/sites/b/hooks/none.lua"
  printf -- '-- ordered\nrule { name = "r", check = function(site) %s end }\n' "$rule" >"$dir/rules/r.lua"
  for threads in 1 4; do
    rc=0
    (cd "$dir" && SITEGEN_THREADS=$threads "$sitegen" --out-dir "out-$threads" build b --rules rules \
      >"$dir/out-$threads.log" 2>"$dir/err-$threads") || rc=$?
    check_eq "$name: exit code with $threads threads" "$want" "$rc"
  done
  check_eq "$name: the same findings with and without the rules on a thread" "$(cat "$dir/err-1")" "$(cat "$dir/err-4")"
  check_contains "$name: the rule's finding" "[rule r]" "$(cat "$dir/err-4")"
}
ordered "rule warns" 'warn_at("site", "the rule warns")' 0
check_contains "rule warns: the hook file's finding" "hook file defines no hooks" "$(cat "$SCRATCH/ordered-rule-warns/err-4")"
ordered "rule refuses" 'error_at("site", "the rule refuses")' 1
if grep -q "hook file defines no hooks" "$SCRATCH/ordered-rule-refuses/err-4"; then fail "rule refuses: a hook finding was reported"; else pass; fi
check_contains "rule refuses: nothing written" "sitegen: nothing written" "$(cat "$SCRATCH/ordered-rule-refuses/err-4")"
if [[ -e $SCRATCH/ordered-rule-refuses/out-4 ]]; then fail "rule refuses: an output tree was written"; else pass; fi
# The example of docs/hooks.md, as written there, passes check on the local site.
mkdir -p "$SCRATCH/doc/sites/local/hooks"
cp "$root/sites/local/site.toml" "$SCRATCH/doc/sites/local/"
awk '/^```lua/ { f = 1; next } /^```/ { if (f) exit } f' "$root/docs/hooks.md" >"$SCRATCH/doc/sites/local/hooks/10-doc.lua"
check "docs/hooks.md's example" "$sitegen" --sites-dir "$SCRATCH/doc/sites" check local
finish
