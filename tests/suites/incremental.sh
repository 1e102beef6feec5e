#!/usr/bin/env bash
# Incremental rebuilds: after each single edit (a stack field, a site-wide field, the shared
# fragment pulled in with `extends`, a rule file, a hook file, sitegen's identity via
# SITEGEN_BUILD_SALT) a rebuild of an existing tree equals a fresh build byte for byte
# (diff -r), and the build state names exactly the stacks that were rendered again. An
# up-to-date rebuild touches no file (inode and mtime unchanged); a stack that did not change
# keeps its files (same inodes) when another one is rebuilt; a hand edit is still refused
# without --force and undone with it.
set -euo pipefail
sitegen=$(realpath "${1:?usage: incremental.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"

sites=$SCRATCH/sites
mkdir -p "$sites/lumi/hooks" "$SCRATCH/rules"
cp -r "$root/sites/shared" "$sites/"
cp "$root/sites/lumi/site.toml" "$sites/lumi/"
# A second stack, so that one can change while the other stays.
cat >>"$sites/lumi/site.toml" <<'EOF'

[[stacks]]
name = "PyTorch"
version = "2.4.0"
versionsuffix = "-rocm-6.1.3-python-3.12-singularity-20241101"
image = "lumi-pytorch-rocm-6.1.3-python-3.12-pytorch-v2.4.0.sif"
homepage = "https://pytorch.org/"
description = "PyTorch 2.4.0, second test stack."
EOF
cat >"$sites/lumi/hooks/10-hello.lua" <<'EOF'
-- Test hook: a load message.
hook {
  name = "hello",
  stack = function(site, stack, out)
    out.module.message("hello from " .. stack.module_full_name)
  end,
}
EOF
cat >"$SCRATCH/rules/extra.lua" <<'EOF'
-- Test rule: never fires.
rule {
  name = "extra-never",
  description = "test rule that never fires",
  check = function(site, report) end,
}
EOF
one=PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923
two=PyTorch/2.4.0-rocm-6.1.3-python-3.12-singularity-20241101

inc=$SCRATCH/inc
# build OUT [ARGS...]: builds lumi into OUT; each out dir gets its own state directory.
build() {
  SITEGEN_STATE_DIR=$SCRATCH/state-$(basename "$1") "$sitegen" --sites-dir "$sites" --out-dir "$1" \
    build lumi --rules "$SCRATCH/rules" "${@:2}"
}
# The stacks the last build of the incremental tree rendered, space-separated, sorted. An
# up-to-date build (its inputs all read as before, its tree as the state recorded) loads and
# renders nothing and leaves the state as it was: then nothing was rendered.
state_stamp() { find "$SCRATCH/state-inc" -type f -name lumi -printf '%i %T@\n' 2>/dev/null; }
rebuilt() {
  local state
  if [[ ${stamp_before-} == "$(state_stamp)" ]]; then return; fi
  state=$(find "$SCRATCH/state-inc" -type f -name lumi)
  awk '$1 == "stack" && $3 == "rebuilt" { print $4 }' "$state" | LC_ALL=C sort | paste -sd' '
}
# inode, mtime and path of every entry of the incremental tree.
# (The roots: beside them, a build may stage into or remove the hidden spare.)
stamps() { (cd "$inc" && find modules-out/lumi easyconfigs-out/lumi -printf '%i %T@ %p\n' | LC_ALL=C sort -k3); }
n=0
# after NAME EXPECTED-REBUILT: rebuilds the incremental tree and a fresh one, compares them.
after() {
  n=$((n + 1))
  stamp_before=$(state_stamp)
  check "$1: the rebuild succeeds" build "$inc"
  check "$1: a fresh build succeeds" build "$SCRATCH/fresh-$n"
  check "$1: the rebuilt tree equals a fresh build" diff -r -x '.*.sitegen-spare' "$inc" "$SCRATCH/fresh-$n"
  check_eq "$1: stacks rebuilt" "$2" "$(rebuilt)"
}

check "first build" build "$inc"
check_eq "first build renders every stack" "$one $two" "$(rebuilt)"
check "a build state is written beside, not in, the tree" test -s "$(find "$SCRATCH/state-inc" -type f -name lumi)"
check_eq "the state is not in the output tree" "" "$(find "$inc" -name '*state*')"

before=$(stamps)
after "up to date" ""
check_eq "up to date: no file rewritten (inodes, mtimes)" "$before" "$(stamps)"

module_one=$inc/modules-out/lumi/modulefiles/$one.lua
ino_one=$(stat -c '%i %Y' "$module_one")
sed -i 's/^description = "PyTorch 2.4.0, second test stack."/description = "PyTorch 2.4.0, edited."/' "$sites/lumi/site.toml"
after "stack field" "$two"
check_eq "stack field: the other stack's files are the same inodes" "$ino_one" "$(stat -c '%i %Y' "$module_one")"
check_contains "stack field: the edit reached the module" "PyTorch 2.4.0, edited." \
  "$(cat "$inc/modules-out/lumi/modulefiles/$two.lua")"

sed -i 's/^time = "00:10:00"/time = "00:20:00"/' "$sites/lumi/site.toml"
after "site-wide field" "$one $two"
check_contains "site-wide field: the job script has the new time" "--time=00:20:00" \
  "$(cat "$inc/modules-out/lumi/software/$one/runscripts/job.slurm")"

sed -i '/^name = "NCCL_NET_GDR_LEVEL"$/{n;s/^value = "3"$/value = "2"/}' "$sites/shared/slingshot.toml"
after "extends fragment" "$one $two"
check_contains "extends fragment: the module has the new value" 'NCCL_NET_GDR_LEVEL", "2"' "$(cat "$module_one")"

echo '-- edited' >>"$SCRATCH/rules/extra.lua"
after "rule file" "$one $two"

sed -i 's/hello from/hi from/' "$sites/lumi/hooks/10-hello.lua"
after "hook file" "$one $two"
check_contains "hook file: the new message" "hi from" "$(cat "$module_one")"

export SITEGEN_BUILD_SALT=other-sitegen
after "sitegen's identity" "$one $two"
after "up to date again" ""

# A hand edit inside a stack that did not change: refused, then restored by --force.
echo '-- my fix' >>"$module_one"
edited=$(stamps)
rc=0
build "$inc" >/dev/null 2>"$SCRATCH/refused.err" || rc=$?
check_eq "hand edit: a plain build refuses" 3 "$rc"
check_contains "hand edit: says which file" "file was edited by hand" "$(cat "$SCRATCH/refused.err")"
check_eq "hand edit: the refused tree is untouched" "$edited" "$(stamps)"
stamp_before=$(state_stamp)
check "hand edit: --force" build "$inc" --force
check "hand edit: --force restores a fresh tree" diff -r -x '.*.sitegen-spare' "$inc" "$SCRATCH/fresh-$n"
check_eq "hand edit: only the edited stack was rendered" "$one" "$(rebuilt)"
# An up-to-date build still notices what changed in the tree without a content edit: a file
# made executable (the mtime stays) and a file added by hand (its directory's mtime changes).
chmod +x "$module_one"
rc=0
build "$inc" >/dev/null 2>"$SCRATCH/chmod.err" || rc=$?
check_eq "mode change: a plain build refuses" 3 "$rc"
check_contains "mode change: says which file" "file mode was changed by hand" "$(cat "$SCRATCH/chmod.err")"
chmod -x "$module_one"
echo mine >"$inc/modules-out/lumi/modulefiles/notes.txt"
rc=0
build "$inc" >/dev/null 2>"$SCRATCH/stray.err" || rc=$?
check_eq "added file: a plain build refuses" 3 "$rc"
check_contains "added file: says which file" "notes.txt" "$(cat "$SCRATCH/stray.err")"
rm "$inc/modules-out/lumi/modulefiles/notes.txt"
# A new rule file is an input (even one that reports nothing), and so is a site's warning:
# the up-to-date build repeats the warnings check printed, byte for byte.
echo '-- a new rule' >"$SCRATCH/rules/new.lua"
after "new rule file" "$one $two"
cat >"$SCRATCH/rules/warn.lua" <<'EOF'
-- Test rule: one warning at the site's name.
rule {
  name = "extra-warn",
  description = "test rule that warns",
  check = function(site) warn_at(pathof(site.site, "name"), "a test warning from a rule") end,
}
EOF
after "warning rule" "$one $two"
build "$inc" >"$SCRATCH/warn1.out" 2>"$SCRATCH/warn1.err" || true
build "$inc" >"$SCRATCH/warn2.out" 2>"$SCRATCH/warn2.err" || true
check_contains "a warning: check reports it" "a test warning from a rule" "$(cat "$SCRATCH/warn1.err")"
check_eq "a warning: the up-to-date build repeats it exactly" "$(cat "$SCRATCH/warn1.err")" "$(cat "$SCRATCH/warn2.err")"
check_contains "a warning: and still has nothing to do" "0 added, 0 changed, 0 removed" "$(cat "$SCRATCH/warn2.out")"
rm "$SCRATCH/rules/warn.lua"
after "warning rule removed" "$one $two"
# The same site name under another sites directory is another input.
cp -a "$sites" "$SCRATCH/sites-copy"
sed -i 's/^description = "PyTorch 2.4.0, edited."/description = "PyTorch 2.4.0, from the copy."/' "$SCRATCH/sites-copy/lumi/site.toml"
SITEGEN_STATE_DIR=$SCRATCH/state-inc "$sitegen" --sites-dir "$SCRATCH/sites-copy" --out-dir "$inc" build lumi --rules "$SCRATCH/rules" >/dev/null 2>&1
check_contains "another sites directory: its site is built" "from the copy" "$(cat "$inc/modules-out/lumi/modulefiles/$two.lua")"
after "back to the first sites directory" "$one $two"  # its hook files are other paths
# A deleted output comes back (its stack is rendered again; nothing to refuse).
rm "$inc/modules-out/lumi/software/$two/runscripts/get-master"
after "deleted output" "$two"
# A stale state (the tree replaced behind its back) is ignored, not trusted.
rm -rf "$inc" && cp -a "$SCRATCH/fresh-1" "$inc"
after "tree replaced" "$one $two"
# A state cut short (a full disk while writing it, by hand) is ignored too, not half used.
state=$(find "$SCRATCH/state-inc" -type f -name lumi)
head -c "$(($(stat -c %s "$state") / 2))" "$state" >"$state.cut" && mv "$state.cut" "$state"
after "state cut short" "$one $two"
# The spare's listing (out/manifest.h SpareListing): a build records what the spare it leaves
# holds, and the next one takes that instead of reading the spare while the spare and each of
# its directories have the recorded stat. Whatever is changed in the spare in between is found:
# the tree is still a fresh build's.
spare=$inc/modules-out/.lumi.sitegen-spare
edit_two() {
  if grep -q '"PyTorch 2.4.0, edited."' "$sites/lumi/site.toml"; then
    sed -i 's/"PyTorch 2.4.0, edited."/"PyTorch 2.4.0, edited again."/' "$sites/lumi/site.toml"
  else sed -i 's/"PyTorch 2.4.0, edited again."/"PyTorch 2.4.0, edited."/' "$sites/lumi/site.toml"; fi
}
sleep 0.1 && edit_two
after "one stack, the spare settled" "$two"
sleep 0.1 && edit_two
after "one stack again" "$two"
check "the state records the spare's listing" grep -q '^spare [0-9 ]*modules-out/lumi$' "$(find "$SCRATCH/state-inc" -type f -name lumi)"
echo stray >"$spare/modulefiles/PyTorch/stray.lua"
sleep 0.1 && edit_two
after "a stray file in the spare" "$two"
victim=$(find "$spare/software" -type f -name 'job.slurm' | head -n 1)
rm "$victim" && echo "#!/bin/sh" >"$victim"
sleep 0.1 && edit_two
after "a spare file replaced" "$two"
rm "$(find "$spare/software" -type f -name 'get-master' | head -n 1)"
sleep 0.1 && edit_two
after "a spare file removed" "$two"
chmod 0700 "$(find "$spare/software" -mindepth 1 -type d | head -n 1)"
sleep 0.1 && edit_two
after "a spare directory's mode changed" "$two"
ln -s /etc/passwd "$spare/software/a-link"
sleep 0.1 && edit_two
after "a symbolic link in the spare" "$two"
# The live tree's directories (FileSystem::scan_known): a build records when its look saw each
# root's directories, and the next one stats the entries of a directory that had settled by
# then and still has the recorded stat instead of reading it. A hand edit in such a directory
# changes its mtime (a file added) or the file's stat (an edit in place): still refused.
check "the state records when the look saw each root" grep -q '^looked [0-9]* modules-out/lumi$' "$(find "$SCRATCH/state-inc" -type f -name lumi)"
sleep 0.1 && edit_two
after "one stack, the live directories settled" "$two"
sleep 0.1 && edit_two
export SITEGEN_TRACE=$SCRATCH/known.json
check "vouched: the rebuild succeeds" build "$inc"
unset SITEGEN_TRACE
check_contains "vouched: the live tree's settled directories were taken as recorded" '"scan_known"' "$(cat "$SCRATCH/known.json")"
runscripts=$inc/modules-out/lumi/software/$one/runscripts
echo mine >"$runscripts/notes.txt"
sleep 0.1 && edit_two
rc=0
build "$inc" >/dev/null 2>"$SCRATCH/vouched-added.err" || rc=$?
check_eq "vouched: a file added by hand is refused" 3 "$rc"
check_contains "vouched: says which file" "runscripts/notes.txt" "$(cat "$SCRATCH/vouched-added.err")"
rm "$runscripts/notes.txt"
echo '# mine' >>"$runscripts/job.slurm"
rc=0
build "$inc" >/dev/null 2>"$SCRATCH/vouched-edited.err" || rc=$?
check_eq "vouched: a file edited in place is refused" 3 "$rc"
check_contains "vouched: says it was edited" "file was edited by hand" "$(cat "$SCRATCH/vouched-edited.err")"
mkdir "$runscripts/extra" && echo mine >"$runscripts/extra/file"
rc=0
build "$inc" >/dev/null 2>"$SCRATCH/vouched-dir.err" || rc=$?
check_eq "vouched: a directory made by hand is refused" 3 "$rc"
check_contains "vouched: says which directory" "runscripts/extra" "$(cat "$SCRATCH/vouched-dir.err")"
check "vouched: --force" build "$inc" --force
after "vouched: --force restores a fresh tree" ""
finish
