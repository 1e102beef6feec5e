#!/usr/bin/env bash
# Real-Lmod helpers for suites: run commands in a clean shell with Lmod initialised and
# compare environments. Lmod's own bookkeeping (_ModuleTable*, __LMOD_REF_COUNT_*,
# LOADEDMODULES, _LMFILES_) is left out of comparisons: it records what is loaded, not what
# the module did to the user's environment.

LMOD_INIT=/usr/share/lmod/lmod/init/bash
LMOD_LIBEXEC=/usr/share/lmod/lmod/libexec

# lmod_clean_shell MODULEPATH SCRIPT: runs SCRIPT (bash text) in `env -i` with a
# duplicate-free PATH, Lmod initialised and MODULEPATH set. Extra env: LMOD_EXTRA_ENV array.
lmod_clean_shell() {
  local modulepath=$1 script=$2
  [[ -r $LMOD_INIT ]] || { echo "lmod is not installed ($LMOD_INIT missing)" >&2; return 127; }
  env -i HOME="${HOME:-/root}" PATH=/usr/bin:/bin LANG=C.UTF-8 "${LMOD_EXTRA_ENV[@]}" \
    bash --noprofile --norc -c "source $LMOD_INIT; export MODULEPATH=\"\$1\"; $script" lmod-shell "$modulepath"
}

# Prints the environment (NUL-separated entries turned into lines with \n escaped), sorted,
# without Lmod's bookkeeping. Meant to be used inside lmod_clean_shell scripts.
LMOD_ENV_DUMP='env -0 | LC_ALL=C sort -z | tr "\n\0" "\001\n" | grep -Ev "^(_ModuleTable[^=]*|__LMOD_REF_COUNT_[^=]*|LOADEDMODULES|_LMFILES_|LMOD_[A-Z_]*|BASH_FUNC_[^=]*|_)="'

# lmod_vars_set_by MODULEPATH MODULE: the NAME=VALUE lines that are new or changed after
# `module load MODULE` (fails if the load fails).
lmod_vars_set_by() {
  lmod_clean_shell "$1" "
    before=\$($LMOD_ENV_DUMP)
    module load \"$2\" || exit 1
    after=\$($LMOD_ENV_DUMP)
    LC_ALL=C comm -13 <(printf '%s\n' \"\$before\") <(printf '%s\n' \"\$after\")"
}

# lmod_load_unload_roundtrip MODULEPATH MODULE: succeeds iff the environment after
# load + unload is byte-identical to before; prints the difference otherwise.
lmod_load_unload_roundtrip() {
  lmod_clean_shell "$1" "
    before=\$($LMOD_ENV_DUMP)
    module load \"$2\" || exit 1
    module unload \"$2\" || exit 1
    after=\$($LMOD_ENV_DUMP)
    [[ \"\$before\" == \"\$after\" ]] || { diff <(printf '%s\n' \"\$before\") <(printf '%s\n' \"\$after\"); exit 1; }"
}

# lmod_check_syntax MODULEPATH MODULE: Lmod's own syntax check of one module.
lmod_check_syntax() {
  lmod_clean_shell "$1" "\$LMOD_CMD bash --checkSyntax load \"$2\" 2>&1 >/dev/null"
}

# lmod_check_tree DIR: check_module_tree_syntax over a whole module tree.
lmod_check_tree() {
  "$LMOD_LIBEXEC/check_module_tree_syntax" "$1" 2>&1
}

# lmod_spider MODULEPATH NAME: `module spider NAME` output.
lmod_spider() {
  lmod_clean_shell "$1" "module spider \"$2\" 2>&1"
}
