#!/usr/bin/env bash
# Module load cost with the real Lmod: `module load X; module unload X` of the generated
# LUMI module against the hand-written bench/module_load_reference.lua, which sets the same
# variables (checked first) with no checks, help or whatis. hyperfine, many runs; the shell
# start and Lmod init are measured alone and subtracted.
#   bench/module_load.sh SITEGEN [RUNS]
set -euo pipefail
sitegen=$(realpath "${1:?usage: module_load.sh SITEGEN [RUNS]}")
runs=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
command -v hyperfine >/dev/null || { echo "hyperfine is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$sitegen" --sites-dir "$root/sites" --out-dir "$work" build lumi --prefix "$work/modules-out/lumi" >/dev/null 2>&1
mod=PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923
r=$work/modules-out/lumi/software/$mod
# As installed by EasyBuild: the image in the root and the user-software directory.
: >"$r/lumi-pytorch-rocm-6.0.3-python-3.12-pytorch-v2.3.1-dockerhash-2c1c14cafd28.sif"
mkdir -p "$r/user-software" "$work/stubs/LUMI" "$work/hand/Hand"
echo '-- stub' >"$work/stubs/LUMI/24.03.lua"
sed "s|@ROOT@|$r|" "$root/bench/module_load_reference.lua" >"$work/hand/Hand/1.lua"

# Only a comparison of equals means anything: both must set exactly the same variables.
LMOD_TEST_HOME=$work/home
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
generated_vars=$(lmod_vars_set_by "$work/modules-out/lumi/modulefiles:$work/stubs" "$mod")
hand_vars=$(lmod_vars_set_by "$work/hand:$work/stubs" Hand/1)
if [[ $generated_vars != "$hand_vars" ]]; then
  echo "module_load: the reference module does not set what the generated one sets:" >&2
  diff <(echo "$generated_vars") <(echo "$hand_vars") >&2 || true
  exit 1
fi

shell() { echo "env -i HOME=$work/home PATH=/usr/bin:/bin bash --noprofile --norc -c 'source /usr/share/lmod/lmod/init/bash; export MODULEPATH=$1; $2'"; }
hyperfine --style none --warmup 3 --runs "$runs" --export-json "$work/h.json" \
  -n baseline "$(shell "$work/stubs" true)" \
  -n generated "$(shell "$work/modules-out/lumi/modulefiles:$work/stubs" "module load $mod && module unload $mod")" \
  -n hand-written "$(shell "$work/hand:$work/stubs" "module load Hand/1 && module unload Hand/1")" >/dev/null
python3 - "$work/h.json" "$runs" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
base = r["baseline"]["median"]
gen = r["generated"]["median"] - base
hand = r["hand-written"]["median"] - base
print(f"| module load + unload (real Lmod 8.6, median of {sys.argv[2]}) | ms |")
print("|---|---:|")
print(f"| shell + Lmod init alone (subtracted) | {1000 * base:.1f} |")
print(f"| generated LUMI module | {1000 * gen:.1f} |")
print(f"| hand-written module, same variables | {1000 * hand:.1f} |")
print(f"| ratio generated / hand-written | {gen / hand:.2f} |")
PY
