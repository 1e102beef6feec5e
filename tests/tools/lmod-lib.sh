#!/usr/bin/env bash
# Real-Lmod helpers for tests/suites/*.sh (source it; Debian's lmod 8.6 in /usr/share/lmod).
#
# Every function runs Lmod in a clean shell:
#   env -i HOME=$LMOD_TEST_HOME PATH=/usr/bin:/bin [LMOD_EXTRA_ENV...] bash --noprofile --norc
# with /usr/share/lmod/lmod/init/bash sourced (gives `module`, $LMOD_DIR, $LMOD_CMD) and then
# MODULEPATH exported. PATH has no duplicates on purpose: Lmod de-duplicates PATH-like
# variables on unload, so a duplicate would look like a module bug. HOME is a private
# directory (Lmod may write ~/.lmod.d), by default $SCRATCH/lmod-home when common.sh is
# sourced first. LMOD_EXTRA_ENV (bash array of NAME=VALUE) adds variables to the clean env.
#
#   lmod_clean_shell MODULEPATH CMD...        runs the CMDs (one bash line each, joined by
#       newlines, so one multi-line script works too) in the clean shell; its exit status is
#       the last command's (chain with && or `|| exit 1`). lmod_env_dump and lmod_env_lines
#       are defined in there.
#   lmod_env_dump                             (inside the clean shell) the environment as
#       `env -0`, sorted (LC_ALL=C), NUL-terminated, byte-exact, minus LMOD_ENV_IGNORE_RE.
#   lmod_env_lines                            filter: NUL-terminated entries -> one line each;
#       a newline inside a value becomes \001 (so `tr '\001' '\n'` restores it).
#   lmod_vars_set_by MODULEPATH MODULE        prints what `module load MODULE` changes: the
#       NAME=VALUE lines that are new or changed (sorted), then `unset NAME` for each variable
#       the load removed. Fails (status 1, Lmod's message on stderr) if the load fails.
#   lmod_load_unload_roundtrip MODULEPATH MODULE   succeeds iff lmod_env_dump after
#       `module load MODULE; module unload MODULE` is byte-identical to before; otherwise
#       prints a diff (< before, > after) and fails. Fails too if load or unload fails.
#   lmod_check_syntax MODULEPATH MODULE       `$LMOD_DIR/lmod bash --checkSyntax load MODULE`;
#       succeeds iff Lmod exits 0 and says nothing; prints Lmod's messages otherwise.
#   lmod_check_tree DIR                       check_module_tree_syntax DIR; prints its report
#       ("No errors found" when clean); status is the tool's (0 clean, 1 errors).
#   lmod_spider MODULEPATH NAME               prints `module spider NAME` (Lmod writes it to
#       stderr; merged here); status is Lmod's.
#   lmod_show MODULEPATH MODULE               prints `module show MODULE`, status Lmod's.
#
# Under `set -e`, capture a check as `if out=$(lmod_check_syntax ...); then pass; else ...`:
# a bare `out=$(...)` of a failing check would end the suite before it reports.
#
# What lmod_env_dump leaves out, and why (LMOD_ENV_IGNORE_RE). Only Lmod's record of *what
# is loaded*, never anything a modulefile sets for the user:
#   _ModuleTable001_..., _ModuleTable_Sz_   the encoded module table. The first module
#                                           command creates it and it stays after the last
#                                           unload (with an empty mT), so it always differs.
#   LOADEDMODULES, _LMFILES_                the loaded list; set by load, unset by unload.
#   __LMOD_REF_COUNT_<VAR>                  per-entry reference counts of path variables
#                                           (prepend_path/append_path); left behind after
#                                           unload (e.g. for PATH, MODULEPATH).
#   __LMOD_STACK_<VAR>                      pushenv's stack of earlier values.
#   __LMOD_Priority_<VAR>                   path priorities (prepend_path{priority=}).
#   _                                       bash's last-argument variable, not Lmod's at all.
# Everything else is compared, including LMOD_FAMILY_<NAME>[_VERSION] (what family()
# sets -- a user-visible effect that unload must undo), MODULEPATH (use/unuse), the
# LMOD_CMD/LMOD_DIR/... set by init (constant across load/unload) and BASH_FUNC_module%%.

# The scripts below are run by the clean shell: their $ expand there, not here.
# shellcheck disable=SC2016
LMOD_INIT=${LMOD_INIT:-/usr/share/lmod/lmod/init/bash}
LMOD_LIBEXEC=${LMOD_LIBEXEC:-/usr/share/lmod/lmod/libexec}
LMOD_ENV_IGNORE_RE='^(_ModuleTable[0-9]+_|_ModuleTable_Sz_|LOADEDMODULES|_LMFILES_|__LMOD_REF_COUNT_[A-Za-z0-9_]+|__LMOD_STACK_[A-Za-z0-9_]+|__LMOD_Priority_[A-Za-z0-9_]+|_)='
if [[ -z ${LMOD_TEST_HOME:-} ]]; then
  if [[ -n ${SCRATCH:-} && -d ${SCRATCH:-} ]]; then
    LMOD_TEST_HOME=$SCRATCH/lmod-home
  else
    LMOD_TEST_HOME=$(mktemp -d "${TMPDIR:-/tmp}/lmod-home.XXXXXX")
  fi
fi
mkdir -p "$LMOD_TEST_HOME"
declare -ga LMOD_EXTRA_ENV=("${LMOD_EXTRA_ENV[@]}")

# External tools run via `command -p` (the system's default PATH): a broken module may have
# emptied PATH by the time the environment is dumped again.
lmod_env_dump() {
  command -p env -0 | LC_ALL=C command -p grep -zEv "$LMOD_ENV_IGNORE_RE" | LC_ALL=C command -p sort -z
}

lmod_env_lines() {
  command -p tr '\n\0' '\001\n'
}

# _lmod_run MODULEPATH SCRIPT [ARG...]: SCRIPT runs in the clean shell with the ARGs as $1...
_lmod_run() {
  local modulepath=$1 script=$2
  shift 2
  if [[ ! -r $LMOD_INIT ]]; then
    echo "lmod-lib: Lmod is not installed ($LMOD_INIT missing; run tests/tools/install-deps.sh)" >&2
    return 127
  fi
  local prelude
  prelude="source '$LMOD_INIT' || exit 127
export MODULEPATH=\$1
shift
$(declare -p LMOD_ENV_IGNORE_RE)
$(declare -f lmod_env_dump lmod_env_lines)
"
  env -i HOME="$LMOD_TEST_HOME" PATH=/usr/bin:/bin "${LMOD_EXTRA_ENV[@]}" \
    bash --noprofile --norc -c "$prelude$script" lmod-clean-shell "$modulepath" "$@"
}

lmod_clean_shell() {
  local modulepath=${1:?usage: lmod_clean_shell MODULEPATH CMD...}
  shift
  _lmod_run "$modulepath" "$(printf '%s\n' "$@")"
}

lmod_vars_set_by() {
  _lmod_run "${1:?usage: lmod_vars_set_by MODULEPATH MODULE}" '
    t=$(command -p mktemp -d) || exit 1
    trap "command -p rm -rf \"$t\"" EXIT
    lmod_env_dump | lmod_env_lines >"$t/before"
    module load "$1" || exit 1
    lmod_env_dump | lmod_env_lines >"$t/after"
    LC_ALL=C command -p comm -13 "$t/before" "$t/after"
    command -p cut -d= -f1 "$t/before" >"$t/names-before"
    command -p cut -d= -f1 "$t/after" >"$t/names-after"
    LC_ALL=C command -p comm -23 "$t/names-before" "$t/names-after" | command -p sed "s/^/unset /"' "${2:?usage: lmod_vars_set_by MODULEPATH MODULE}"
}

lmod_load_unload_roundtrip() {
  _lmod_run "${1:?usage: lmod_load_unload_roundtrip MODULEPATH MODULE}" '
    t=$(command -p mktemp -d) || exit 1
    trap "command -p rm -rf \"$t\"" EXIT
    lmod_env_dump >"$t/before"
    module load "$1" || { echo "module load $1 failed"; exit 1; }
    module unload "$1" || { echo "module unload $1 failed"; exit 1; }
    lmod_env_dump >"$t/after"
    command -p cmp -s "$t/before" "$t/after" && exit 0
    echo "environment after load+unload of $1 differs (< before, > after):"
    command -p diff <(lmod_env_lines <"$t/before") <(lmod_env_lines <"$t/after")
    exit 1' "${2:?usage: lmod_load_unload_roundtrip MODULEPATH MODULE}"
}

lmod_check_syntax() {
  _lmod_run "${1:?usage: lmod_check_syntax MODULEPATH MODULE}" '
    msg=$("$LMOD_DIR/lmod" bash --checkSyntax load "$1" 2>&1 >/dev/null)
    rc=$?
    [[ -n $msg ]] && printf "%s\n" "$msg"
    [[ $rc -eq 0 && -z $msg ]]' "${2:?usage: lmod_check_syntax MODULEPATH MODULE}"
}

lmod_check_tree() {
  local dir=${1:?usage: lmod_check_tree DIR}
  _lmod_run "" '"$LMOD_DIR/check_module_tree_syntax" "$1" 2>&1' "$dir"
}

lmod_spider() {
  _lmod_run "${1:?usage: lmod_spider MODULEPATH NAME}" 'module spider "$1" 2>&1' \
    "${2:?usage: lmod_spider MODULEPATH NAME}"
}

lmod_show() {
  _lmod_run "${1:?usage: lmod_show MODULEPATH MODULE}" 'module show "$1" 2>&1' \
    "${2:?usage: lmod_show MODULEPATH MODULE}"
}
