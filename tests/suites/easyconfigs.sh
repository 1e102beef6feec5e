#!/usr/bin/env bash
# Every generated easyconfig of every seed site (plus the hostile golden site) checked as
# EasyBuild reads it, and its postinstallcmds run to prove they write sitegen's scripts
# byte for byte (tests/tools/check_easyconfig.py).
set -euo pipefail
sitegen=$(realpath "${1:?usage: easyconfigs.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool python3
check() {  # check SITES_DIR SITE
  local out=$SCRATCH/$2
  "$sitegen" --sites-dir "$1" --out-dir "$out" build "$2" >/dev/null
  if report=$(python3 "$root/tests/tools/check_easyconfig.py" "$root/tests/data/easybuild_parameters.txt" \
      "$out/easyconfigs-out/$2" "$out/modules-out/$2"); then
    pass
  else
    fail "easyconfigs of $2:"
    echo "$report" | grep -v ' passed, ' | head -n 20
  fi
}
for site in lumi frontier cirrus aurora local; do check "$root/sites" "$site"; done
check "$root/tests/golden/apptainer-container/sites" box
finish
