#!/usr/bin/env bash
# Every generated script of every site (runscripts, bin/) passes `bash -n` and shellcheck
# with no finding at all; the Python ones (acceptance.py) compile and pass pycodestyle
# (--max-line-length=120). The GPU device's test site (tests/device/sites) is built too, and
# the device scripts in tests/device pass shellcheck.
set -euo pipefail
sitegen=$(realpath "${1:?usage: runscripts_shellcheck.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool shellcheck /usr/bin/python3
if ! /usr/bin/python3 -m pycodestyle --version >/dev/null 2>&1; then
  fail "pycodestyle is not installed (python3-pycodestyle)"
  finish
fi
"$sitegen" --sites-dir "$root/sites" --out-dir "$SCRATCH" build --all >/dev/null
"$sitegen" --sites-dir "$root/tests/device/sites" --out-dir "$SCRATCH" build --all >/dev/null
for f in "$root"/tests/device/*.sh; do
  if report=$(shellcheck "$f" 2>&1); then pass; else fail "shellcheck ${f#"$root"/}"; echo "$report" | head -n 20; fi
done
count=0
while IFS= read -r -d '' f; do
  count=$((count + 1))
  if [[ $f == *.py ]]; then
    if out=$(/usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$f" 2>&1); then
      pass
    else
      fail "python cannot parse ${f#"$SCRATCH"/}: $out"
    fi
    if report=$(/usr/bin/python3 -m pycodestyle --max-line-length=120 "$f" 2>&1); then pass; else fail "pycodestyle ${f#"$SCRATCH"/}"; echo "$report" | head -n 20; fi
    continue
  fi
  if bash -n "$f" 2>"$SCRATCH/err"; then pass; else fail "bash -n ${f#"$SCRATCH"/}: $(<"$SCRATCH/err")"; fi
  if report=$(shellcheck -s bash "$f" 2>&1); then pass; else fail "shellcheck ${f#"$SCRATCH"/}"; echo "$report" | head -n 20; fi
done < <(find "$SCRATCH/modules-out" -type f \( -path '*/runscripts/*' -o -path '*/bin/*' \) -print0 | sort -z)
# Every site has scripts: a build that emitted none would pass vacuously.
if [[ $count -ge 15 ]]; then pass; else fail "only $count scripts were generated"; fi
finish
