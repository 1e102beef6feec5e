#!/usr/bin/env bash
# get-master: the scontrol path (on a real local Slurm) and the pure-bash fallback (PATH
# without scontrol) give the first host for the hostlists the seeds mis-parse.
set -euo pipefail
sitegen=$(realpath "${1:?usage: get_master.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool scontrol
"$sitegen" --sites-dir "$root/sites" --out-dir "$SCRATCH" build lumi >/dev/null
gm=$(find "$SCRATCH" -name get-master -path '*lumi*' | head -n1)
nosc=$SCRATCH/bin-without-scontrol
mkdir -p "$nosc"
for t in bash head printf; do ln -s "$(command -v "$t")" "$nosc/$t"; done

# hostlist -> first host, written by hand from Slurm's hostlist rules.
cases=(
  "nid005028=nid005028"
  "nid[005028]=nid005028"
  "nid[001-003,007]=nid001"
  "nid[007,001-003]=nid007"
  "node[1-2]-ib=node1-ib"
  "rack[1-2]n[01-04]=rack1n01"
  "login1,nid[002-003]=login1"
  "x[09-11]=x09"
)
for c in "${cases[@]}"; do
  list=${c%=*} want=${c##*=}
  check_eq "fallback: $list" "$want" "$(PATH=$nosc bash "$gm" "$list")"
  # scontrol expands without a controller, so this runs on any machine with Slurm's tools.
  check_eq "scontrol: $list" "$want" "$(bash "$gm" "$list")"
done
# Inside a job step the step's nodelist is the default.
check_eq "default from SLURM_STEP_NODELIST" "nid000100" \
  "$(SLURM_STEP_NODELIST='nid[000100-000103]' SLURM_JOB_NODELIST='other[1-2]' PATH=$nosc bash "$gm")"
if PATH=$nosc bash "$gm" 'nid[001' 2>/dev/null; then fail "malformed hostlist accepted"; else pass; fi
if (unset SLURM_STEP_NODELIST SLURM_JOB_NODELIST; bash "$gm") 2>/dev/null; then fail "no hostlist accepted"; else pass; fi
finish
