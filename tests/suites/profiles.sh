#!/usr/bin/env bash
# Collective network profiles (docs/profiles.md), end to end: `sitegen explain` exactly; for
# every site in sites/ and every stack, real Lmod's `module show` sets exactly explain's
# any-node-count settings and the acceptance job lists the one-node ones; Frontier with a
# declared plugin version: NCCL_NET only from the rank wrapper and only on multi-node runs
# (under a fake Slurm step environment), never in the module or the --direct list; every
# bare-metal site's rank wrapper, started as its scheduler (Slurm, PBS, Flux) starts a rank on
# one node and on two, exports exactly explain's settings for that node count. Expected
# values are written by hand from sites/shared/slingshot.toml.
set -euo pipefail
sitegen=$(realpath "${1:?usage: profiles.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool python3 shellcheck

sites=$SCRATCH/sites
cp -r "$root/sites" "$sites"
cd "$SCRATCH"  # explain prints paths as given: relative to here

# 1. explain, exactly.
check_eq "explain lumi" "NCCL_NET_GDR_LEVEL=3  sites/shared/slingshot.toml:10  profile slingshot
NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3  sites/shared/slingshot.toml:15  profile slingshot" \
  "$("$sitegen" explain lumi PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923 2>&1 || true)"

mkdir -p "$sites/frontier-ofi"
cat >"$sites/frontier-ofi/site.toml" <<'TOML'
extends = ["../frontier/site.toml"]
[site]
name = "frontier-ofi"
[collectives]
network_plugin_version = "1.9.0"
profiles = ["slingshot-rccl"]
TOML
check_eq "explain frontier-ofi" "NCCL_NET_GDR_LEVEL=3  sites/shared/slingshot.toml:10  profile slingshot
NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3  sites/shared/slingshot.toml:15  profile slingshot
NCCL_NET=OFI  sites/shared/slingshot.toml:31  profile slingshot  (plugin >1.6 (1.9.0), multi-node)
FI_MR_CACHE_MONITOR=userfaultfd  sites/shared/slingshot.toml:44  profile slingshot-rccl  (library rccl)" \
  "$("$sitegen" explain frontier-ofi pytorch 2>&1 || true)"
check_eq "explain one variable" "NCCL_NET=OFI  sites/shared/slingshot.toml:31  profile slingshot  (plugin >1.6 (1.9.0), multi-node)" \
  "$("$sitegen" explain frontier-ofi pytorch NCCL_NET 2>&1 || true)"
set +e
out=$("$sitegen" explain frontier-ofi pytorch NCCL_NOPE 2>&1); code=$?
set -e
check_eq "explain: a variable nothing sets" "1:sitegen: 'NCCL_NOPE' is not set for pytorch/2.3.1-rocm-6.0.0 at frontier-ofi" "$code:$out"

unquote() {  # explain's lines -> NAME=value as the program sees it (explain writes the value as one bash word)
  python3 -c '
import shlex, sys
for line in sys.stdin:
    if line.strip():
        print(shlex.split(line)[0])'
}

# 2. Every site, every stack: module (Lmod) = explain's any-scope settings; acceptance = one-node.
for dir in "$sites"/*/; do
  site=$(basename "$dir")
  [[ -f $sites/$site/site.toml ]] || continue
  "$sitegen" build "$site" --out-dir "$SCRATCH/out" >/dev/null
  mp=$SCRATCH/out/modules-out/$site/modulefiles
  while IFS= read -r lua; do
    module=${lua#"$mp/"}
    module=${module%.lua}
    stack_dir=$SCRATCH/out/modules-out/$site/software/$module
    explained=$("$sitegen" explain "$site" "$module")
    # NAME=value of the settings for any node count (explain's lines without a node scope).
    expect_module=$(printf '%s\n' "$explained" | grep -v -e 'single-node)$' -e 'multi-node)$' | unquote | sort || true)
    shown=$(lmod_show "$mp" "$module")
    got_module=""
    while IFS= read -r line; do
      name=${line%%=*}
      value=$(printf '%s\n' "$shown" | sed -n "s/^setenv(\"$name\",\"\\(.*\\)\")$/\\1/p")
      got_module+="$name=$value"$'\n'
    done < <(printf '%s\n' "$expect_module" | grep .)
    check_eq "$site $module: the module sets what explain says" "$expect_module" "$(printf '%s' "$got_module" | sort)"
    # Multi-node settings never reach the module.
    while IFS= read -r line; do
      name=${line%%=*}
      if grep -q "^setenv(\"$name\"," <<<"$shown"; then fail "$site $module: the module sets run-time $name"; else pass; fi
    done < <(printf '%s\n' "$explained" | grep 'multi-node)$' | grep -v '^$' || true)
    # The acceptance job's --direct list (one node): explain's non-stack settings but multi-node.
    expect_direct=$(printf '%s\n' "$explained" | grep -v -e 'multi-node)$' -e '  stacks\.[0-9]*\.env' | unquote || true)
    got_direct=$(python3 - "$stack_dir/runscripts/acceptance.py" <<'PY'
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
for node in tree.body:
    if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', '') == 'COLLECTIVE_ENV':
        for name, value in ast.literal_eval(node.value):
            print(f"{name}={value}")
PY
)
    check_eq "$site $module: acceptance COLLECTIVE_ENV is the one-node list" "$expect_direct" "$got_direct"
  done < <(find "$mp" -name '*.lua' ! -name '.modulerc.lua' | sort)
done

# 3. The rank wrapper decides the node count: Frontier with plugin 1.9.0 under a fake Slurm step.
fakebin=$SCRATCH/fakebin
mkdir -p "$fakebin"
cat >"$fakebin/python" <<'SH'
#!/bin/bash
# Stand-in for python: the collective environment a rank starts with.
for v in NCCL_SOCKET_IFNAME NCCL_NET_GDR_LEVEL NCCL_NET FI_MR_CACHE_MONITOR; do printf '%s=%s\n' "$v" "${!v-<unset>}"; done
SH
chmod +x "$fakebin/python"
rs=$(dirname "$(find "$SCRATCH/out/modules-out/frontier-ofi" -name python-distributed -path '*runscripts*' | head -n 1)")
rank() {  # rank NTASKS TASKS_PER_NODE NODELIST
  env -i PATH="$fakebin:/usr/bin:/bin" SLURM_JOB_ID=77 SLURM_PROCID=1 SLURM_NTASKS="$1" SLURM_LOCALID=1 \
    SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE="$2" SLURM_STEP_NODELIST="$3" bash "$rs/python-distributed" x.py 2>&1 |
    grep -e '^NCCL_' -e '^FI_'
}
check_eq "frontier-ofi: one node, no NCCL_NET" "NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3
NCCL_NET_GDR_LEVEL=3
NCCL_NET=<unset>
FI_MR_CACHE_MONITOR=userfaultfd" "$(rank 8 8 frontier001)"
check_eq "frontier-ofi: two nodes, NCCL_NET=OFI" "NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3
NCCL_NET_GDR_LEVEL=3
NCCL_NET=OFI
FI_MR_CACHE_MONITOR=userfaultfd" "$(rank 16 '8(x2)' 'frontier[001-002]')"
if shellcheck -s bash "$rs/python-distributed"; then pass; else fail "frontier-ofi: the wrapper with a node-count block is not shellcheck-clean"; fi
check_contains "frontier-ofi: the module help says who sets NCCL_NET" \
  "NCCL_NET=OFI on multi-node runs  (profile slingshot)" "$(lmod_show "$SCRATCH/out/modules-out/frontier-ofi/modulefiles" pytorch/2.3.1-rocm-6.0.0)"

# 4. Every bare-metal site, every stack: its rank wrapper, started as its scheduler starts a
# rank (one rank per node; one node, then two), exports exactly explain's settings for that
# node count (the stack's own env is the module's, not the wrapper's). Container sites' wrappers
# run inside the image; their names reach it as checked by the module test above.
for name in python python3 python3.10 python3.11 python3.12; do
  cat >"$fakebin/$name" <<'SH'
#!/bin/bash
# Stand-in for python: the environment a rank starts with.
env
SH
  chmod +x "$fakebin/$name"
done
ln -sf "$root/tests/tools/flux" "$fakebin/flux"
printf 'n1\nn2\n' >"$SCRATCH/nodefile"
# The program, for wrappers that run a python by its path (the local site's /usr/bin/python3).
printf 'import os\nfor k, v in os.environ.items():\n    print(k + "=" + v)\n' >"$SCRATCH/x.py"
# expected SCOPE EXPLAINED: NAME=value (or NAME=<unset>) per wrapper-set name, for one node
# (single) or several (multi), from explain's lines.
expected_for() {
  python3 - "$1" "$2" <<'PY'
import shlex, sys
scope, text = sys.argv[1], sys.argv[2]
seen, got = [], {}
for line in text.splitlines():
    if not line.strip() or '  stacks.' in line:
        continue
    name, value = shlex.split(line)[0].split('=', 1)
    if name not in seen:
        seen.append(name)
    if line.endswith('single-node)') and scope != 'single':
        continue
    if line.endswith('multi-node)') and scope != 'multi':
        continue
    got[name] = value
for name in sorted(seen):
    print(f"{name}={got.get(name, '<unset>')}")
PY
}
# rank_env SCHEDULER RUNSCRIPTS NODES: the environment one rank of a NODES-node run starts with.
rank_env() {
  local base=(PATH="$fakebin:/usr/bin:/bin" HOME="$SCRATCH" USER=root)
  case $1 in
    slurm) local per="1" list=n1
      [[ $3 == 2 ]] && per="1(x2)" list="n[1-2]"
      env -i "${base[@]}" SLURM_JOB_ID=77 SLURM_PROCID=0 SLURM_NTASKS="$3" SLURM_LOCALID=0 SLURM_NODEID=0 \
        SLURM_STEP_TASKS_PER_NODE="$per" SLURM_STEP_NODELIST="$list" SLURM_JOB_NODELIST="$list" bash "$2/python-distributed" x.py ;;
    pbs)
      env -i "${base[@]}" PBS_JOBID=4242.pbs PBS_NODEFILE="$SCRATCH/nodefile" PALS_RANKID=0 PALS_LOCAL_RANKID=0 \
        PMI_SIZE="$3" PMI_LOCAL_SIZE=1 bash "$2/python-distributed" x.py ;;
    flux)
      env -i "${base[@]}" FLUX_JOB_ID=123 FLUX_JOB_SIZE="$3" FLUX_JOB_NNODES="$3" FLUX_TASK_RANK=0 FLUX_TASK_LOCAL_ID=0 \
        MASTER_ADDR=n1 bash "$2/python-distributed" x.py ;;
  esac
}
for site in aurora cirrus frontier frontier-ofi local perlmutter polaris tuolumne; do
  scheduler=$(python3 -c 'import sys, tomllib; d = tomllib.load(open(sys.argv[1], "rb")); print(d.get("site", {}).get("scheduler", ""))' \
    "$sites/$site/site.toml")
  [[ -n $scheduler ]] || scheduler=slurm  # frontier-ofi extends frontier
  mp=$SCRATCH/out/modules-out/$site/modulefiles
  while IFS= read -r lua; do
    module=${lua#"$mp/"}
    module=${module%.lua}
    rs=$SCRATCH/out/modules-out/$site/software/$module/runscripts
    explained=$("$sitegen" explain "$site" "$module")
    for nodes in 1 2; do
      scope=single
      [[ $nodes == 2 ]] && scope=multi
      want=$(expected_for "$scope" "$explained")
      if ! envs=$(rank_env "$scheduler" "$rs" "$nodes" 2>&1); then
        fail "$site $module: the wrapper did not run on $nodes node(s): $envs"
        continue
      fi
      got=""
      while IFS= read -r line; do
        name=${line%%=*}
        value=$(printf '%s\n' "$envs" | sed -n "s/^$name=//p" | head -n 1)
        # (a here-string, not a pipe: grep -q may close a pipe before the writer is done, and
        # under pipefail its SIGPIPE reads as "no match")
        grep -q "^$name=" <<<"$envs" || value="<unset>"
        got+="$name=$value"$'\n'
      done < <(printf '%s\n' "$want" | grep .)
      check_eq "$site $module: the wrapper on $nodes node(s) exports explain's $scope-node settings" "$want" "${got%$'\n'}"
    done
  done < <(find "$mp" -name '*.lua' ! -name '.modulerc.lua' | sort)
done

finish
