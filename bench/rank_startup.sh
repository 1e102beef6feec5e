#!/usr/bin/env bash
# Rank start-up cost of the generated wrappers: from exec of the wrapper to exec of the
# program (the program is /bin/true via a fake `python`), with a fake scheduler
# environment, for the Slurm (local, LUMI) and PBS (Aurora) variants; and, when a local
# Slurm is up (SLURM_CONF set), `srun -n2` through the wrapper against `srun -n2 /bin/true`.
#   bench/rank_startup.sh SITEGEN
set -euo pipefail
sitegen=$(realpath "${1:?usage: rank_startup.sh SITEGEN}")
root=$(cd "$(dirname "$0")/.." && pwd)
command -v hyperfine >/dev/null || { echo "hyperfine is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for s in local lumi aurora; do
  "$sitegen" --sites-dir "$root/sites" --out-dir "$work" build "$s" --prefix "$work/modules-out/$s" >/dev/null
done
mkdir -p "$work/bin"
ln -s /bin/true "$work/bin/python"
printf 'x1000c0s0b0n0\nx1000c0s1b0n0\n' >"$work/nodefile"
slurm_env="SLURM_JOB_ID=123456 SLURM_STEP_ID=0 SLURM_PROCID=5 SLURM_NTASKS=16 SLURM_LOCALID=5 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=8(x2) SLURM_STEP_NODELIST=nid[005028-005029] MIOPEN_USER_DB_PATH=$work/miopen"
pbs_env="PBS_JOBID=4242.pbs PBS_NODEFILE=$work/nodefile PALS_RANKID=13 PALS_LOCAL_RANKID=1 PMI_SIZE=24 PMI_LOCAL_SIZE=12"
wrapper() { find "$work/modules-out/$1" -name "$2" | head -n1; }
local_w=$(wrapper local python-distributed)
lumi_w=$(wrapper lumi conda-python-distributed)
aurora_w=$(wrapper aurora python-distributed)
# The local wrapper execs /usr/bin/python3 itself; measure it with a copy that execs python.
sed 's|^exec /usr/bin/python3 |exec python |' "$local_w" >"$work/local-wrapper"
hyperfine --style none -N --warmup 5 --runs 200 --export-json "$work/h.json" \
  -n "exec /bin/true (floor)" "/bin/true" \
  -n "Slurm wrapper (local)" "env -i PATH=$work/bin:/usr/bin:/bin $slurm_env bash $work/local-wrapper train.py" \
  -n "Slurm wrapper (LUMI, AMD: MIOpen cache)" "env -i PATH=$work/bin:/usr/bin:/bin VIRTUAL_ENV=/v $slurm_env bash $lumi_w train.py" \
  -n "PBS/PALS wrapper (Aurora)" "env -i PATH=$work/bin:/usr/bin:/bin $pbs_env bash $aurora_w train.py" >/dev/null
python3 - "$work/h.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
print("| rank wrapper start-up (fake scheduler env, exec to program exec) | median ms |")
print("|---|---:|")
for r in res:
    print(f"| {r['command']} | {1000 * r['median']:.2f} |")
PY
if [[ -n ${SLURM_CONF:-} ]] && command -v srun >/dev/null && sinfo -h -o %t 2>/dev/null | grep -q idle; then
  # srun exports this environment to the tasks: the wrapper's `python` is /bin/true here too.
  hyperfine --style none -N --warmup 2 --runs 15 --export-json "$work/s.json" \
    -n "srun -n2 /bin/true (local Slurm)" "srun -n2 /bin/true" \
    -n "srun -n2 through the Slurm wrapper (local Slurm)" "env PATH=$work/bin:/usr/bin:/bin srun -n2 bash $work/local-wrapper x.py" >/dev/null
  python3 - "$work/s.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"| {r['command']} | {1000 * r['median']:.2f} |")
PY
fi
