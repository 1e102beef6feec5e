#!/usr/bin/env bash
# extend-venv-activate with real `python3 -m venv` and real Lmod, for every stack that
# offers it (cirrus, aurora, local): activate loads the module, puts the venv's python and
# site-packages first; deactivate restores the environment byte for byte in bash and zsh;
# idempotent, updatable, removable; refuses what it cannot hook and leaves it untouched.
set -euo pipefail
sitegen=$(realpath "${1:?usage: venv_extension.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool shellcheck zsh cmp stat
[[ -x /usr/bin/python3 ]] || { fail "/usr/bin/python3 is not installed"; finish; }
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed ($LMOD_INIT)"; finish; }
# Debian's python3 makes the venvs; their site-packages is lib/pythonX.Y of that Python.
pyxy=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# The stacks (from sites/*/site.toml) and the Python each module is built for.
declare -A module_of=([cirrus]=pytorch/2.3.1-gpu [aurora]=frameworks/2024.2.1_u1 [local]=pytorch/1.13.1-cpu)
declare -A python_of=([cirrus]=3.12 [aurora]=3.10 [local]=3.11)

# Stub of Cirrus's python/3.12.1-gpu (pytorch depends on it): like the real Miniconda module
# it puts a `python` on PATH and a directory on PYTHONPATH; neither may win in the venv.
stubs=$SCRATCH/stubs
mkdir -p "$stubs/modules/python" "$stubs/bin" "$stubs/site"
cat >"$stubs/modules/python/3.12.1-gpu.lua" <<LUA
-- stub of the site module python/3.12.1-gpu
prepend_path("PATH", "$stubs/bin")
prepend_path("PYTHONPATH", "$stubs/site")
LUA
printf '#!/bin/sh\necho module python\n' >"$stubs/bin/python"
chmod +x "$stubs/bin/python"
echo 'WHO = "python module"' >"$stubs/site/probe.py"
outside="$SCRATCH/outside pp"
mkdir -p "$outside"
echo 'WHO = "outside"' >"$outside/probe.py"

# A session in a clean shell (bash or zsh, Lmod initialised, PYTHONPATH unset, empty or
# set): dumps the environment (lmod-lib's filter: only Lmod's bookkeeping is left out)
# before activation, while active and after deactivation, plus probes while active.
session_script() {  # session_script VENV DIR PYTHONPATH_MODE ACTIVATIONS
  local v=${1@Q} d=${2@Q} re=${LMOD_ENV_IGNORE_RE@Q} o=${outside@Q}
  cat <<SH
dump() { command -p env -0 | LC_ALL=C command -p grep -zEv $re | LC_ALL=C command -p sort -z; }
# As in an interactive shell: the venv's deactivate cannot restore an empty prompt.
export PS1='\$ '
case $3 in
  unset) unset PYTHONPATH ;;
  empty) export PYTHONPATH= ;;
  set) export PYTHONPATH=$o ;;
esac
dump >$d/before
i=0
while [ \$i -lt $4 ]; do source $v/bin/activate; i=\$((i + 1)); done
printf '%s\n' "\${LOADEDMODULES:-}" >$d/loaded
printf '%s\n' "\${PYTHONPATH-(unset)}" >$d/pythonpath
command -v python >$d/python
python -c 'import sys, probe; print(sys.path[1]); print(probe.WHO)' >$d/probe 2>&1
deactivate
dump >$d/after
printf '%s\n' "\${LOADEDMODULES:-}" >$d/loaded-after
set | grep -c '^_SITEGEN_VENV' >$d/helpers || true
SH
}

run_session() {  # run_session SHELL MODULEPATH SCRIPTFILE: stdout+stderr of the session
  local init=/usr/share/lmod/lmod/init/$1
  if [[ $1 == zsh ]]; then
    env -i HOME="$LMOD_TEST_HOME" PATH=/usr/bin:/bin MODULEPATH="$2" zsh -f -c "source $init; source ${3@Q}" 2>&1
  else
    env -i HOME="$LMOD_TEST_HOME" PATH=/usr/bin:/bin MODULEPATH="$2" bash --noprofile --norc -c "source $init; source ${3@Q}" 2>&1
  fi
}

# new_venv DIR: a --system-site-packages venv with a probe module in its site-packages.
new_venv() {
  mkdir -p "$(dirname "$1")"
  /usr/bin/python3 -m venv --system-site-packages "$1"
  echo 'WHO = "venv"' >"$1/lib/python$pyxy/site-packages/probe.py"
}

n=0
# check_session LABEL SHELL MODULEPATH VENV MODULE PYTHONPATH_MODE ACTIVATIONS [colon]
check_session() {
  local label=$1 sh=$2 mp=$3 venv=$4 mod=$5 ppmode=$6 times=$7 colon=${8:-}
  n=$((n + 1))
  local d=$SCRATCH/session-$n out site_dir=$4/lib/python$pyxy/site-packages
  mkdir -p "$d"
  session_script "$venv" "$d" "$ppmode" "$times" >"$d/script"
  if ! out=$(run_session "$sh" "$mp" "$d/script"); then fail "$label: session failed: $out"; return; fi
  if [[ -n $colon ]]; then
    check_contains "$label: says why a path with ':' stays off PYTHONPATH" "holds a colon" "$out"
  else
    check_eq "$label: activate and deactivate print nothing" "" "$out"
  fi
  if [[ ":$(cat "$d/loaded"):" == *":$mod:"* ]]; then pass; else fail "$label: $mod not loaded on activate ($(cat "$d/loaded"))"; fi
  local pp
  # A ':' splits the venv's own bin/ on PATH too (why Python refuses such paths).
  [[ -n $colon ]] || check_eq "$label: the venv's python comes first on PATH" "$venv/bin/python" "$(cat "$d/python")"
  pp=$(cat "$d/pythonpath")
  if [[ -n $colon ]]; then
    check_eq "$label: PYTHONPATH untouched by the hook" "(unset)" "$pp"
  else
    check_eq "$label: PYTHONPATH starts with the venv's site-packages" "$site_dir" "${pp%%:*}"
    if [[ $ppmode == set ]]; then check_eq "$label: the user's PYTHONPATH entry stays last" "$outside" "${pp##*:}"; fi
    check_eq "$label: python imports from the venv's site-packages first" "$site_dir"$'\n'"venv" "$(cat "$d/probe")"
  fi
  if cmp -s "$d/before" "$d/after"; then pass; else
    fail "$label: deactivate did not restore the environment byte for byte (< before, > after)"
    diff <(tr '\n\0' '\001\n' <"$d/before") <(tr '\n\0' '\001\n' <"$d/after") | head -n 20 || true
  fi
  if [[ ":$(cat "$d/loaded-after"):" != *":$mod:"* ]]; then pass; else fail "$label: $mod still loaded after deactivate"; fi
  check_eq "$label: no _SITEGEN_VENV helper variable left after deactivate" "0" "$(cat "$d/helpers")"
}

for site in cirrus aurora local; do
  out=$SCRATCH/$site
  "$sitegen" --sites-dir "$root/sites" --out-dir "$out" build "$site" --prefix "$out/modules-out/$site" >/dev/null
  mod=${module_of[$site]}
  stack_root=$out/modules-out/$site/software/$mod
  ext=$stack_root/bin/extend-venv-activate
  [[ -x $ext ]] || { fail "$site: no executable $ext"; continue; }
  if shellcheck "$ext"; then pass; else fail "$site: shellcheck extend-venv-activate"; fi
  help=$("$ext" --help)
  check_contains "$site: --help names the module" "load the module $mod" "$help"
  # The module's own bin/ is on PATH too; a python there must not shadow the venv's.
  printf '#!/bin/sh\necho stack python\n' >"$stack_root/bin/python"
  chmod +x "$stack_root/bin/python"
  mp="$out/modules-out/$site/modulefiles:$stubs/modules"

  # Spaces, quotes, '&', '$' and glob characters in the path (Python itself refuses ':').
  venv="$SCRATCH/venvs $site/it's & \$HOME [x] \"q\"/env"
  new_venv "$venv"
  chmod 640 "$venv/bin/activate"
  cp "$venv/bin/activate" "$SCRATCH/pristine"
  if "$ext" --check "$venv" >/dev/null; then fail "$site: --check says a fresh venv is extended"; else pass; fi
  msg=$("$ext" "$venv" 2>&1)
  check_contains "$site: says activate.fish is not extended" "bin/activate.fish is not extended" "$msg"
  check_contains "$site: says activate.csh is not extended" "bin/activate.csh is not extended" "$msg"
  if [[ $pyxy != "${python_of[$site]}" ]]; then
    check_contains "$site: warns that the venv's Python differs from the module's" "uses Python $pyxy but $mod is built for Python ${python_of[$site]}" "$msg"
  elif [[ $msg == *warning* ]]; then fail "$site: warned with matching Pythons: $msg"; else pass; fi
  check_eq "$site: the file mode is kept" "640" "$(stat -c %a "$venv/bin/activate")"
  check_eq "$site: no temporary file left in bin/" "" "$(find "$venv/bin" -name '.activate.*')"
  grep -c '^# >>> sitegen venv extension for '"$mod"' (format [0-9]*) >>>$' "$venv/bin/activate" >"$SCRATCH/count" || true
  check_eq "$site: one activate block with the module and format in its marker" "1" "$(cat "$SCRATCH/count")"
  cp "$venv/bin/activate" "$SCRATCH/extended"
  "$ext" "$venv" >/dev/null 2>&1
  if cmp -s "$SCRATCH/extended" "$venv/bin/activate"; then pass; else fail "$site: a second run changed bin/activate"; fi
  if "$ext" --check "$venv" >/dev/null; then pass; else fail "$site: --check says not extended"; fi

  # The hook text itself is clean bash (what bin/activate runs).
  {
    echo '#!/bin/bash'
    echo 'VIRTUAL_ENV=/v'
    echo 'deactivate () {'
    sed -n '/^    # >>> sitegen/,/^    # <<< sitegen/p' "$venv/bin/activate"
    echo '}'
    sed -n '/^# >>> sitegen/,/^# <<< sitegen/p' "$venv/bin/activate"
  } >"$SCRATCH/hooks.sh"
  if shellcheck -s bash "$SCRATCH/hooks.sh"; then pass; else fail "$site: shellcheck of the inserted hooks"; fi

  check_session "$site/bash/unset" bash "$mp" "$venv" "$mod" unset 1
  check_session "$site/bash/empty" bash "$mp" "$venv" "$mod" empty 1
  check_session "$site/bash/set/twice" bash "$mp" "$venv" "$mod" set 2
  check_session "$site/zsh/unset" zsh "$mp" "$venv" "$mod" unset 1
  check_session "$site/zsh/set/twice" zsh "$mp" "$venv" "$mod" set 2

  # Updatable: a block of an older format is replaced by exactly the current one.
  sed -e 's/^FORMAT=.*/FORMAT=0/' -e "s/(format [0-9]*) >>>'\$/(format 0) >>>'/" \
    -e 's/^_SITEGEN_VENV_ADDED=$/_SITEGEN_VENV_ADDED= # older hook/' "$ext" >"$SCRATCH/ext-old"
  cp "$SCRATCH/pristine" "$venv/bin/activate"
  bash "$SCRATCH/ext-old" "$venv" >/dev/null 2>&1
  if "$ext" --check "$venv" >/dev/null; then fail "$site: --check accepts an older format"; else pass; fi
  "$ext" "$venv" >/dev/null 2>&1
  if cmp -s "$SCRATCH/extended" "$venv/bin/activate"; then pass; else fail "$site: an older block was not replaced by the current one"; fi

  "$ext" --remove "$venv" >/dev/null
  if cmp -s "$SCRATCH/pristine" "$venv/bin/activate"; then pass; else fail "$site: --remove did not restore the original bytes"; fi
  if "$ext" --check "$venv" >/dev/null; then fail "$site: --check says extended after --remove"; else pass; fi
  "$ext" --remove "$venv" >/dev/null
  if cmp -s "$SCRATCH/pristine" "$venv/bin/activate"; then pass; else fail "$site: --remove of an unextended venv changed it"; fi
done

ext=$SCRATCH/local/modules-out/local/software/pytorch/1.13.1-cpu/bin/extend-venv-activate
mp="$SCRATCH/local/modules-out/local/modulefiles:$stubs/modules"

# A venv moved to a path with ':' (Python refuses to create one there): the extension still
# works, the module loads and unloads; the site-packages stays off PYTHONPATH (':' would
# split it, as it splits the venv's bin/ on PATH).
colon_venv="$SCRATCH/colon: dir & co/env"
new_venv "$SCRATCH/plain/env"
mkdir -p "$(dirname "$colon_venv")"
mv "$SCRATCH/plain/env" "$colon_venv"
/usr/bin/python3 - "$colon_venv/bin/activate" "$colon_venv" <<'PY'
import shlex, sys
path, venv = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
lines = ["VIRTUAL_ENV=" + shlex.quote(venv) if l.startswith("VIRTUAL_ENV=") else l for l in lines]
open(path, "w").write("\n".join(lines))
PY
cp "$colon_venv/bin/activate" "$SCRATCH/colon-pristine"
"$ext" "$colon_venv" >/dev/null 2>&1
cp "$colon_venv/bin/activate" "$SCRATCH/colon-extended"
"$ext" "$colon_venv" >/dev/null 2>&1
if cmp -s "$SCRATCH/colon-extended" "$colon_venv/bin/activate"; then pass; else fail "colon: a second run changed bin/activate"; fi
check_session "colon/bash" bash "$mp" "$colon_venv" pytorch/1.13.1-cpu unset 1 colon
"$ext" --remove "$colon_venv" >/dev/null
if cmp -s "$SCRATCH/colon-pristine" "$colon_venv/bin/activate"; then pass; else fail "colon: --remove did not restore the original bytes"; fi

# Another stack's block is replaced, not stacked (one venv builds on one module).
other=$SCRATCH/other/env
new_venv "$other"
cp "$other/bin/activate" "$SCRATCH/other-pristine"
"$ext" "$other" >/dev/null 2>&1
cp "$other/bin/activate" "$SCRATCH/other-local"
cp "$SCRATCH/other-pristine" "$other/bin/activate"
"$SCRATCH/cirrus/modules-out/cirrus/software/pytorch/2.3.1-gpu/bin/extend-venv-activate" "$other" >/dev/null 2>&1
"$ext" "$other" >/dev/null 2>&1
if cmp -s "$SCRATCH/other-local" "$other/bin/activate"; then pass; else fail "another stack's block was not replaced"; fi

# Refusals: each exits non-zero, says why, and leaves bin/activate untouched.
refuses() {  # refuses LABEL EXPECTED_MESSAGE VENV
  local msg
  [[ ! -f $3/bin/activate ]] || cp "$3/bin/activate" "$SCRATCH/refused-before"
  if msg=$("$ext" "$3" 2>&1); then fail "$1: accepted"; return; fi
  check_contains "$1: clear message" "$2" "$msg"
  if [[ -f $3/bin/activate ]]; then
    if cmp -s "$SCRATCH/refused-before" "$3/bin/activate"; then pass; else fail "$1: bin/activate was modified"; fi
  fi
}
mkdir -p "$SCRATCH/not-a-venv"
refuses "not a venv" "is not a Python venv: it has no pyvenv.cfg" "$SCRATCH/not-a-venv"
refuses "missing directory" "no such directory" "$SCRATCH/nowhere"
mkdir -p "$SCRATCH/half-venv"
touch "$SCRATCH/half-venv/pyvenv.cfg"
refuses "venv without bin/activate" "it has no bin/activate" "$SCRATCH/half-venv"
odd=$SCRATCH/odd/env
new_venv "$odd"
cp "$odd/bin/activate" "$SCRATCH/odd-pristine"
sed -i 's/^deactivate () {$/deactivate() {/' "$odd/bin/activate"
refuses "no deactivate anchor" "expected exactly one line 'deactivate () {', found 0" "$odd"
cp "$SCRATCH/odd-pristine" "$odd/bin/activate"
# shellcheck disable=SC2016  # sed text, not shell expansions
sed -i 's/^_OLD_VIRTUAL_PATH="\$PATH"$/_OLD_VIRTUAL_PATH=$PATH/' "$odd/bin/activate"
refuses "no PATH anchor" "expected exactly one line '_OLD_VIRTUAL_PATH=\"\$PATH\"', found 0" "$odd"
cp "$SCRATCH/odd-pristine" "$odd/bin/activate"
# shellcheck disable=SC2016  # sed text, not shell expansions
sed -i 's/^_OLD_VIRTUAL_PATH="\$PATH"$/&\n&/' "$odd/bin/activate"
refuses "two PATH anchors" "found 2" "$odd"
cp "$SCRATCH/odd-pristine" "$odd/bin/activate"
"$ext" "$odd" >/dev/null 2>&1
sed -i '/^# <<< sitegen/d' "$odd/bin/activate"
refuses "block without its end marker" "without its end marker" "$odd"
cp "$SCRATCH/odd-pristine" "$odd/bin/activate"
printf 'no newline at the end' >>"$odd/bin/activate"
refuses "activate without a final newline" "does not end with a newline" "$odd"
if "$ext" >/dev/null 2>&1; then fail "ran without a venv argument"; else check_eq "usage error exit status" 2 "$?"; fi
if "$ext" --frobnicate "$other" >/dev/null 2>&1; then fail "accepted an unknown option"; else check_eq "unknown option exit status" 2 "$?"; fi
finish
