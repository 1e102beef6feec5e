#!/usr/bin/env bash
# Installs sitegen's build and test dependencies from Debian 12 packages.
#
#   tests/tools/install-deps.sh        exit 0 when every package is installed (then it is a
#                                      single dpkg-query, well under a second, no apt at all)
#
# Idempotent. Runs `apt-get update` + `apt-get install` (non-interactive, Recommends included,
# as the set was verified on this machine) only when something is missing, and fails loudly
# (non-zero, the missing package names on stderr) when it is not root or apt cannot install.
# `lmod` conflicts with `environment-modules`: only lmod is installed; Environment Modules'
# modulecmd.tcl (for the Tcl modules EasyBuild writes, tests/suites/easybuild_real.sh) is
# unpacked from Debian's package into $SITEGEN_ENV_MODULES_ROOT without installing it.
set -euo pipefail

packages=(
  build-essential cmake g++ liblua5.4-dev lua5.4 libtomlplusplus-dev libcli11-dev catch2
  lmod lua-check shellcheck slurm-wlm munge python3 python3-torch hyperfine zsh squashfs-tools
  clang libclang-rt-14-dev hwloc libhwloc-dev pkg-config python3-pycodestyle charliecloud
  tcl libmimalloc-dev
)

# missing_packages: prints the packages of $packages that are not fully installed.
missing_packages() {
  local -A ok=()
  local name status
  # One dpkg-query for all of them; unknown packages only produce stderr noise.
  while IFS=' ' read -r name status; do
    [[ $status == ii ]] && ok[$name]=1
  done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null || true)
  local p
  for p in "${packages[@]}"; do
    [[ -n ${ok[$p]:-} ]] || echo "$p"
  done
}

env_modules_root=${SITEGEN_ENV_MODULES_ROOT:-/opt/sitegen-deps/environment-modules}
# unpack_environment_modules: Debian's environment-modules .deb, unpacked (dpkg -x) only.
unpack_environment_modules() {
  [[ -f $env_modules_root/usr/lib/x86_64-linux-gnu/modulecmd.tcl ]] && return 0
  local tmp
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download environment-modules </dev/null >&2) ||
    ! mkdir -p "$env_modules_root" || ! dpkg -x "$tmp"/environment-modules_*.deb "$env_modules_root"; then
    rm -rf "$tmp"
    echo "install-deps: ERROR: could not unpack environment-modules into $env_modules_root" >&2
    return 1
  fi
  rm -rf "$tmp"
}

mapfile -t missing < <(missing_packages)
if [[ ${#missing[@]} -eq 0 ]]; then
  unpack_environment_modules
  exit
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: ERROR: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: apt-get install ${missing[*]})" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
if ! apt-get -q -o DPkg::Lock::Timeout=600 update </dev/null >&2; then
  echo "install-deps: ERROR: apt-get update failed" >&2
  exit 1
fi
if ! apt-get install "${apt_opts[@]}" "${missing[@]}" </dev/null >&2; then
  echo "install-deps: ERROR: apt-get install ${missing[*]} failed" >&2
  exit 1
fi

mapfile -t still < <(missing_packages)
if [[ ${#still[@]} -ne 0 ]]; then
  echo "install-deps: ERROR: still not installed after apt-get: ${still[*]}" >&2
  exit 1
fi
unpack_environment_modules
echo "install-deps: done" >&2
