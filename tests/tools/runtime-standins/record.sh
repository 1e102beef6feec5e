# shellcheck shell=bash
# Shared by the runtime stand-ins in this directory (STAND-INS, not the real tools: podman-hpc,
# enroot, uenv and Slurm's srun with the pyxis and uenv plugins are not Debian packages).
# Each stand-in appends to $STANDIN_LOG one block per call: "== TOOL", one "argv: WORD"
# line per argument, and "env: NAME=VALUE" for each variable named in $STANDIN_ENV_NAMES
# (blank-separated) as the tool itself sees it; then it emulates entering the container well
# enough for the program to run on this host (see each tool).

standin_record() {
  local tool=$1 arg name
  shift
  {
    printf '== %s\n' "$tool"
    for arg in "$@"; do printf 'argv: %s\n' "$arg"; done
    for name in ${STANDIN_ENV_NAMES:-}; do
      if [[ -n ${!name+x} ]]; then printf 'env: %s=%s\n' "$name" "${!name}"; fi
    done
  } >>"${STANDIN_LOG:?STANDIN_LOG is not set}"
}

# standin_map PATH SRC:DST[:OPTIONS]...: PATH as seen on the host, through the binds (a
# container path under DST is SRC plus the rest), so the program can run without namespaces.
standin_map() {
  local path=$1 bind src dst rest
  shift
  for bind in "$@"; do
    IFS=: read -r src dst rest <<<"$bind"
    dst=${dst:-$src}
    if [[ $path == "$dst" || $path == "$dst"/* ]]; then
      printf '%s\n' "$src${path#"$dst"}"
      return
    fi
  done
  printf '%s\n' "$path"
}
