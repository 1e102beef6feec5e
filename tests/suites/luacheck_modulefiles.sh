#!/usr/bin/env bash
# luacheck, with Lmod's modulefile API declared (tests/tools/luacheckrc-lmod), reports no
# warning at all on any generated modulefile or .modulerc.lua of any site.
set -euo pipefail
sitegen=$(realpath "${1:?usage: luacheck_modulefiles.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool luacheck
"$sitegen" --sites-dir "$root/sites" --out-dir "$SCRATCH/seed" build --all >/dev/null
"$sitegen" --sites-dir "$root/tests/golden/apptainer-container/sites" --out-dir "$SCRATCH/box" build box >/dev/null
count=0
while IFS= read -r -d '' f; do
  count=$((count + 1))
  if report=$(luacheck --no-color --config "$root/tests/tools/luacheckrc-lmod" "$f" 2>&1); then
    pass
  else
    fail "luacheck ${f#"$SCRATCH"/}"
    echo "$report" | head -n 20
  fi
done < <(find "$SCRATCH" -path '*/modulefiles/*' -name '*.lua' -print0 | sort -z)
if [[ $count -ge 10 ]]; then pass; else fail "only $count modulefiles were generated"; fi
finish
