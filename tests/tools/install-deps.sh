#!/usr/bin/env bash
# Installs sitegen's build and test dependencies from Debian packages (idempotent; only
# touches apt when something is missing). Fails loudly when it cannot install.
set -euo pipefail
packages=(
  build-essential cmake g++ liblua5.4-dev lua5.4 libtomlplusplus-dev libcli11-dev catch2
  lmod lua-check shellcheck slurm-wlm munge python3 python3-torch hyperfine zsh
  clang libclang-rt-14-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root (apt-get install)" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
