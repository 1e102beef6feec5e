#!/usr/bin/env bash
# Hostile values from a site file land in every kind of output and come out as exactly
# the same bytes, and nothing in them ever runs: Lmod sets the variable to the exact
# bytes, the rank wrapper exports the exact bytes, Python's ast reads the exact string
# from the easyconfig; a marker file that each payload would create never appears.
set -euo pipefail
sitegen=$(realpath "${1:?usage: injection.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool python3
marker=$SCRATCH/MARKER
# The corpus, as TOML basic strings (escapes are TOML's): name -> value.
declare -A corpus=(
  [DQUOTE]='say \"hi\"'
  [SQUOTE]="it's"
  [BACKSLASH]='a\\b\\\\c'
  [CMDSUBST]="\$(touch $marker)"
  [BACKTICK]="\`touch $marker\`"
  [PARAM]="\${HOME} \${x:-y} \$\$"
  [EBTEMPLATE]='%(installdir)s 100% %s %%'
  [LUABRACKETS]=']] ]=] [[ [=['
  [TAB]='a\tb'
  [LONG]=$(printf 'x%.0s' {1..5000})
  [DASH]='-rf --help'
  [SPACES]='  two  spaces  '
  [COLONAMP]='/p a:t&h;x|y<z>'
  [BRACE]="} \${ }"
  [UNICODE]='naïve — ünïcödé ✓'
)
site=$SCRATCH/sites/evil
mkdir -p "$site"
{
  sed -e 's/^name = "local"/name = "evil"/' "$root/sites/local/site.toml" | sed -e '/^\[collectives.env\]/,$d'
  echo '[collectives.env]'
  for k in "${!corpus[@]}"; do printf 'EVIL_%s = "%s"\n' "$k" "${corpus[$k]}"; done
  cat <<'TOML'

[python]
layout = "system"
version = "3.11"
interpreter = "/usr/bin/python3"

[[stacks]]
name = "pytorch"
version = "1.13.1"
versionsuffix = "-cpu"
default = true
venv_extension = true
homepage = "https://example.org/?a=1&b='2'"
description = "desc \"q\" $(touch MARKER) `x` ]] %(name)s 100% \\ end"
keywords = ["]]", "$(id)"]
TOML
} >"$site/site.toml"
# Expected bytes: what TOML means by each basic string.
python3 - "$site/site.toml" "$SCRATCH/expected" <<'PY'
import sys, tomllib, os
data = tomllib.load(open(sys.argv[1], "rb"))
os.makedirs(sys.argv[2], exist_ok=True)
for k, v in data["collectives"]["env"].items():
    open(os.path.join(sys.argv[2], k), "wb").write(v.encode())
open(os.path.join(sys.argv[2], "DESCRIPTION"), "wb").write(data["stacks"][0]["description"].encode())
PY
out=$SCRATCH/out
if ! "$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$out" build evil --prefix "$out/modules-out/evil" >"$SCRATCH/build.log" 2>&1; then
  fail "build of the hostile site failed"; cat "$SCRATCH/build.log"; finish
fi
# 1. Lmod: every variable the module sets has exactly the expected bytes.
mp=$out/modules-out/evil/modulefiles
lmod_clean_shell "$mp" "module load pytorch || exit 1; env -0 >\"$SCRATCH/lmod.env\"" || fail "module load failed"
python3 - "$SCRATCH/lmod.env" "$SCRATCH/expected" "lmod" <<'PY' || true
import sys, os
env = dict(e.split("=", 1) for e in open(sys.argv[1], "rb").read().decode().split("\0") if "=" in e)
bad = [k for k in os.listdir(sys.argv[2]) if k != "DESCRIPTION" and env.get(k) != open(os.path.join(sys.argv[2], k), "rb").read().decode()]
print("\n".join(bad), file=open(sys.argv[2] + "." + sys.argv[3], "w"))
PY
check_eq "Lmod sets every hostile value byte for byte" "" "$(<"$SCRATCH/expected.lmod")"
# 2. bash: the rank wrapper exports the same bytes (fake Slurm step, fake python).
mkdir -p "$SCRATCH/bin"
printf '#!/bin/sh\nexec env -0\n' >"$SCRATCH/bin/python3"
chmod +x "$SCRATCH/bin/python3"
w=$(find "$out/modules-out" -name python-distributed)
sed 's|^exec /usr/bin/python3 |exec python3 |' "$w" >"$SCRATCH/wrapper"
env -i PATH="$SCRATCH/bin:/usr/bin:/bin" SLURM_JOB_ID=7 SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_LOCALID=0 \
  SLURM_STEP_TASKS_PER_NODE=1 SLURM_STEP_NODELIST=n1 bash "$SCRATCH/wrapper" >"$SCRATCH/bash.env" || fail "wrapper failed"
python3 - "$SCRATCH/bash.env" "$SCRATCH/expected" "bash" <<'PY' || true
import sys, os
env = dict(e.split("=", 1) for e in open(sys.argv[1], "rb").read().decode().split("\0") if "=" in e)
bad = [k for k in os.listdir(sys.argv[2]) if k != "DESCRIPTION" and env.get(k) != open(os.path.join(sys.argv[2], k), "rb").read().decode()]
print("\n".join(bad), file=open(sys.argv[2] + "." + sys.argv[3], "w"))
PY
check_eq "the rank wrapper exports every hostile value byte for byte" "" "$(<"$SCRATCH/expected.bash")"
# 3. Lua/bash/python syntax of every output still holds, and help shows the description.
help=$(lmod_clean_shell "$mp" "module help pytorch 2>&1")
if [[ $help == *"desc \"q\" \$(touch MARKER)"* ]]; then pass; else fail "module help lost the description"; fi
while IFS= read -r -d '' eb; do
  if python3 - "$eb" "$SCRATCH/expected/DESCRIPTION" <<'PY'
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
want = open(sys.argv[2]).read()
for node in tree.body:
    if isinstance(node, ast.Assign) and node.targets[0].id == "description":
        got = ast.literal_eval(node.value)
        # EasyBuild %-templating: a literal '%(name)s' must have been escaped as '%%(name)s'.
        sys.exit(0 if got.replace("%%(", "%(") == want else 1)
sys.exit(1)
PY
  then pass; else fail "easyconfig $eb does not hold the exact description"; fi
done < <(find "$out/easyconfigs-out" -name '*.eb' -print0)
# 4. Nothing ran.
if [[ -e $marker || -e MARKER || -e $out/MARKER ]]; then fail "a payload executed (marker file exists)"; else pass; fi
finish
