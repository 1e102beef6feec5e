#!/usr/bin/env bash
# extend-venv-activate with real `python3 -m venv` and real Lmod, for every stack that
# offers it: activate loads the module and puts the venv first, deactivate restores the
# environment byte for byte; idempotent, removable, refuses what it cannot hook.
set -euo pipefail
sitegen=$(realpath "${1:?usage: venv_extension.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool shellcheck
need_tool zsh
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed"; finish; }

stubs=$SCRATCH/stubs
mkdir -p "$stubs/python"
echo '-- stub of the site module python/3.12.1-gpu' >"$stubs/python/3.12.1-gpu.lua"

# One shell session (bash or zsh, Lmod initialised): dumps the exported environment before
# activation, while active (plus a python sys.path probe) and after deactivation.
session_script() {  # session_script VENV DIR
  local v=${1@Q} d=${2@Q}
  cat <<SH
dump() { env -0 | LC_ALL=C sort -z | tr '\n\0' '\001\n' | grep -Ev '^(_ModuleTable[^=]*|__LMOD_REF_COUNT_[^=]*|LOADEDMODULES|_LMFILES_|LMOD_[A-Z_]*|BASH_FUNC_[^=]*|_)=' ; }
# As in an interactive shell: Python's own deactivate cannot restore an empty prompt.
export PS1='\$ '
dump >$d/before
source $v/bin/activate
printf '%s\n' "\${LOADEDMODULES:-}" >$d/loaded
printf '%s\n' "\${PYTHONPATH:-}" >$d/pythonpath
python -c 'import sys; print(sys.path[1])' >$d/syspath 2>&1
deactivate
dump >$d/after
printf '%s\n' "\${LOADEDMODULES:-}" >$d/loaded-after
SH
}

run_in() {  # run_in SHELL MODULEPATH SCRIPTFILE
  local init=/usr/share/lmod/lmod/init/$1
  if [[ $1 == zsh ]]; then
    env -i HOME="$SCRATCH" PATH=/usr/bin:/bin LANG=C.UTF-8 MODULEPATH="$2" zsh -f -c "source $init; source ${3@Q}"
  else
    env -i HOME="$SCRATCH" PATH=/usr/bin:/bin LANG=C.UTF-8 MODULEPATH="$2" bash --noprofile --norc -c "source $init; source ${3@Q}"
  fi
}

declare -A module_of=([cirrus]=pytorch/2.3.1-gpu [aurora]=frameworks/2024.2.1_u1 [local]=pytorch/1.13.1-cpu)
n=0
for site in cirrus aurora local; do
  out=$SCRATCH/$site
  "$sitegen" --sites-dir "$root/sites" --out-dir "$out" build "$site" --prefix "$out/modules-out/$site" >/dev/null
  mod=${module_of[$site]}
  ext=$(find "$out/modules-out" -name extend-venv-activate)
  if shellcheck "$ext"; then pass; else fail "$site: shellcheck extend-venv-activate"; fi
  mp="$out/modules-out/$site/modulefiles:$stubs"
  for sh in bash zsh; do
    n=$((n + 1))
    # Python refuses ':' in venv paths itself; everything else awkward is in here.
    venv="$SCRATCH/venvs $n/it's & \$HOME [x]/env"
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    cp "$venv/bin/activate" "$SCRATCH/pristine"
    bash "$ext" "$venv" >/dev/null 2>&1
    cp "$venv/bin/activate" "$SCRATCH/extended"
    bash "$ext" "$venv" >/dev/null 2>&1
    if cmp -s "$SCRATCH/extended" "$venv/bin/activate"; then pass; else fail "$site: second run changed bin/activate"; fi
    if bash "$ext" --check "$venv" >/dev/null; then pass; else fail "$site: --check says not extended"; fi
    d=$SCRATCH/session-$n
    mkdir -p "$d"
    session_script "$venv" "$d" >"$d/script"
    run_in "$sh" "$mp" "$d/script" 2>"$d/stderr" || { fail "$site/$sh: session failed: $(cat "$d/stderr")"; continue; }
    site_dir="$venv/lib/python3.11/site-packages"
    if [[ ":$(cat "$d/loaded"):" == *":$mod:"* ]]; then pass; else fail "$site/$sh: $mod not loaded on activate ($(cat "$d/loaded"))"; fi
    check_eq "$site/$sh: PYTHONPATH starts with the venv's site-packages" "$site_dir" "$(cut -d: -f1 <"$d/pythonpath")"
    check_eq "$site/$sh: python sees the venv's site-packages first" "$site_dir" "$(cat "$d/syspath")"
    if cmp -s "$d/before" "$d/after"; then pass; else fail "$site/$sh: deactivate did not restore the environment"; diff "$d/before" "$d/after" | head; fi
    if [[ ":$(cat "$d/loaded-after"):" != *":$mod:"* ]]; then pass; else fail "$site/$sh: $mod still loaded after deactivate"; fi
    bash "$ext" --remove "$venv" >/dev/null
    if cmp -s "$SCRATCH/pristine" "$venv/bin/activate"; then pass; else fail "$site: --remove did not restore the original bytes"; fi
  done
done

# Refusals: not a venv; an activate without the deactivate anchor (file left untouched).
ext=$(find "$SCRATCH/local/modules-out" -name extend-venv-activate)
mkdir -p "$SCRATCH/not-a-venv"
if bash "$ext" "$SCRATCH/not-a-venv" 2>/dev/null; then fail "accepted a directory that is not a venv"; else pass; fi
odd=$SCRATCH/odd-venv
/usr/bin/python3 -m venv "$odd"
sed -i 's/^deactivate () {$/deactivate() {/' "$odd/bin/activate"
cp "$odd/bin/activate" "$SCRATCH/odd-before"
if msg=$(bash "$ext" "$odd" 2>&1); then fail "extended an activate without the anchor"; else
  if [[ $msg == *"expected one line 'deactivate () {'"* ]]; then pass; else fail "unclear message: $msg"; fi
fi
if cmp -s "$SCRATCH/odd-before" "$odd/bin/activate"; then pass; else fail "a refused run modified bin/activate"; fi
finish
