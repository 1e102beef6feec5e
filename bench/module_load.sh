#!/usr/bin/env bash
# Module load cost with the real Lmod: `module load X; module unload X` of the generated
# LUMI module against a hand-written minimal modulefile that sets the same variables
# (hyperfine, many runs; the shell start and Lmod init are measured once and subtracted).
#   bench/module_load.sh SITEGEN
set -euo pipefail
sitegen=$(realpath "${1:?usage: module_load.sh SITEGEN}")
root=$(cd "$(dirname "$0")/.." && pwd)
command -v hyperfine >/dev/null || { echo "hyperfine is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$sitegen" --sites-dir "$root/sites" --out-dir "$work" build lumi --prefix "$work/modules-out/lumi" >/dev/null
mod=PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923
r=$work/modules-out/lumi/software/$mod
: >"$r/lumi-pytorch-rocm-6.0.3-python-3.12-pytorch-v2.3.1-dockerhash-2c1c14cafd28.sif"
mkdir -p "$work/stubs/LUMI" "$work/hand/Hand"
echo '-- stub' >"$work/stubs/LUMI/24.03.lua"
# The same variables, written by hand with no checks, no help and no whatis.
{
  echo "depends_on(\"LUMI/24.03\")"
  echo "local root = \"$r\""
  echo 'local sif = pathJoin(root, "lumi-pytorch-rocm-6.0.3-python-3.12-pytorch-v2.3.1-dockerhash-2c1c14cafd28.sif")'
  echo 'setenv("SIF", sif) setenv("SIFPYTORCH", sif) setenv("CONTAINERROOT", root)'
  echo 'setenv("RUNSCRIPTS", pathJoin(root, "runscripts")) setenv("RUNSCRIPTSPYTORCH", pathJoin(root, "runscripts"))'
  grep -E '^setenv\("(SINGULARITY|NCCL)' "$work/modules-out/lumi/modulefiles/$mod.lua"
  echo 'prepend_path("PATH", pathJoin(root, "bin"))'
} >"$work/hand/Hand/1.lua"
init=/usr/share/lmod/lmod/init/bash
shell() { echo "env -i HOME=$work PATH=/usr/bin:/bin bash --noprofile --norc -c 'source $init; export MODULEPATH=$1; $2'"; }
hyperfine --style none --warmup 3 --runs 40 --export-json "$work/h.json" \
  -n baseline "$(shell "$work/stubs" true)" \
  -n generated "$(shell "$work/modules-out/lumi/modulefiles:$work/stubs" "module load $mod && module unload $mod")" \
  -n hand-written "$(shell "$work/hand:$work/stubs" "module load Hand/1 && module unload Hand/1")" >/dev/null
python3 - "$work/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
base = r["baseline"]["median"]
gen = r["generated"]["median"] - base
hand = r["hand-written"]["median"] - base
print("| module load + unload (real Lmod, median of 40) | ms |")
print("|---|---:|")
print(f"| shell + Lmod init alone (subtracted) | {1000 * base:.1f} |")
print(f"| generated LUMI module | {1000 * gen:.1f} |")
print(f"| hand-written module, same variables | {1000 * hand:.1f} |")
print(f"| ratio generated / hand-written | {gen / hand:.2f} |")
PY
