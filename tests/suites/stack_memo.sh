#!/usr/bin/env bash
# The stack memo (site/stack_memo.h) end to end: a build leaves one beside its state, and a
# rebuild that reads stacks back from it writes the tree a build without one writes (diff -r),
# with the same messages at the same lines, after each edit a sysadmin makes: one stack, lines
# moved, stacks reordered, the [python] every stack starts from. `check` reads it and prints
# what it prints without it. A memo cut short, with a byte changed, replaced by a FIFO or by a
# directory is not trusted and does not stop a build. The rules' memo beside it likewise.
set -euo pipefail
sitegen=$(realpath "${1:?usage: stack_memo.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"

sites=$SCRATCH/sites
"$root/bench/gen-site" 40 "$sites"
toml=$sites/bench/site.toml
# A rule that warns at every stack's description: its line must be right after every edit.
mkdir -p "$SCRATCH/rules"
cat >"$SCRATCH/rules/describe.lua" <<'EOF'
-- Test rule: a warning at each stack's description.
rule {
  name = "memo-describe",
  description = "test rule that warns at every stack's description",
  check = function(site)
    for _, stack in ipairs(site.stacks) do
      warn_at(pathof(stack, "description"), "description of " .. stack.version)
    end
  end,
}
EOF

inc=$SCRATCH/inc
state=$SCRATCH/state-inc
# build OUT STATE [ARGS...]: builds the bench site into OUT with the state (and memo) dir STATE.
build() {
  SITEGEN_STATE_DIR=$2 "$sitegen" --sites-dir "$sites" --out-dir "$1" build bench --rules "$SCRATCH/rules" "${@:3}"
}
memo() { find "$state" -type f -name bench.stacks; }
n=0
# after NAME: rebuilds the memo'd tree and a fresh tree (no state, no memo); same tree, same output.
after() {
  n=$((n + 1))
  local fresh=$SCRATCH/fresh-$n
  local rc=0
  build "$inc" "$state" >"$SCRATCH/inc.out" 2>"$SCRATCH/inc.err" || rc=$?
  check_eq "$1: the rebuild succeeds" 0 "$rc"
  build "$fresh" "$SCRATCH/state-fresh-$n" >"$SCRATCH/fresh.out" 2>"$SCRATCH/fresh.err" || true
  check "$1: the rebuilt tree equals a fresh build" diff -r -x '.*.sitegen-spare' "$inc" "$fresh"
  check_eq "$1: the same messages, at the same lines" "$(cat "$SCRATCH/fresh.err")" "$(cat "$SCRATCH/inc.err")"
  check_eq "$1: check with the memo prints what a check without one prints" \
    "$(SITEGEN_STATE_DIR=$SCRATCH/state-none "$sitegen" --sites-dir "$sites" --out-dir "$fresh" check bench --rules "$SCRATCH/rules" 2>&1)" \
    "$(SITEGEN_STATE_DIR=$state "$sitegen" --sites-dir "$sites" --out-dir "$inc" check bench --rules "$SCRATCH/rules" 2>&1)"
}
# edit_stack: changes one stack's torch version, "2.5" <-> "2.5.0" (bench/incremental.sh).
edit_stack() {
  if grep -q '^torch = "2\.5"$' "$toml"; then sed -i 's/^torch = "2\.5"$/torch = "2.5.0"/' "$toml"
  else sed -i 's/^torch = "2\.5\.0"$/torch = "2.5"/' "$toml"; fi
}

check "first build" build "$inc" "$state"
check "a memo is written beside the state" test -s "$(memo)"
check_eq "it holds an entry per stack" 40 "$(grep -c '^[0-9a-f]\{64\} [0-9a-f]\{64\} [0-9]*$' "$(memo)")"
check_eq "the memo is not in the output tree" "" "$(find "$inc" -name '*.stacks')"

edit_stack
after "one stack"
# The memo is what the load reads: an entry changed by hand, with its digest made again, is
# what check then sees (a stack's version in the rule's message). (Like the state, a memo is
# trusted as its digests say: removing it is how to start afresh.)
python3 - "$(memo)" <<'EOF2'
import hashlib, sys
path = sys.argv[1]
data = open(path, "rb").read()
header, rest = data.split(b"\n", 1)
out = [header + b"\n"]
changed = False
while rest:
    line, rest = rest.split(b"\n", 1)
    key, digest, size = line.split(b" ")
    entry, rest = rest[: int(size)], rest[int(size) + 1 :]
    if not changed and b"7:version6:2.0.20" in entry:
        entry = entry.replace(b"7:version6:2.0.20", b"7:version6:9.9.99")
        digest = hashlib.sha256(entry).hexdigest().encode()
        changed = True
    out.append(key + b" " + digest + b" " + size + b"\n" + entry + b"\n")
assert changed
open(path, "wb").write(b"".join(out))
EOF2
check_contains "a changed memo entry is what check reads" "description of 9.9.99" \
  "$(SITEGEN_STATE_DIR=$state "$sitegen" --sites-dir "$sites" --out-dir "$inc" check bench --rules "$SCRATCH/rules" 2>&1)"
rm "$(memo)"
edit_stack
after "memo removed"
# Lines moved: every stack's regions (and the rule's warnings) are three lines further down.
sed -i '1i # a comment\n# and another\n' "$toml"
after "lines moved"
# The last stack moved to the front: every stack renumbered.
python3 - "$toml" <<'EOF'
import sys
path = sys.argv[1]
text = open(path).read()
cut = text.rindex("\n[[stacks]]")
head = text.index("\n[[stacks]]")
open(path, "w").write(text[:head] + text[cut:] + text[head:cut])
EOF
after "stacks reordered"
# The [python] every stack starts from: no entry is read back.
sed -i 's/^version = "3\.12"$/version = "3.11"/' "$toml"
after "[python] changed"
edit_stack
after "one stack again"

# not_trusted NAME FILE MARKER: the memo FILE cut short, with a byte changed (in the first
# MARKER of its second half, else of all of it) and replaced by a FIFO is not trusted: each
# rebuild writes a fresh build's tree and messages, and none waits on the FIFO.
not_trusted() {
  local name=$1 path=$2
  head -c "$(($(stat -c %s "$path") / 2))" "$path" >"$SCRATCH/cut" && mv "$SCRATCH/cut" "$path"
  edit_stack
  after "$name cut short"
  python3 - "$path" "$3" <<'EOF'
import sys
path, marker = sys.argv[1], sys.argv[2].encode()
data = bytearray(open(path, "rb").read())
at = data.find(marker, len(data) // 2)
at = at if at >= 0 else data.index(marker)
data[at] ^= 1
open(path, "wb").write(bytes(data))
EOF
  edit_stack
  after "$name with a byte changed"
  rm "$path" && mkfifo "$path"
  edit_stack
  check "$name replaced by a FIFO: the build does not wait on it" timeout 60 bash -c \
    "SITEGEN_STATE_DIR='$state' '$sitegen' --sites-dir '$sites' --out-dir '$inc' build bench --rules '$SCRATCH/rules' >/dev/null 2>&1"
  check "$name replaced by a FIFO: a regular memo is written again" test -f "$path"
}
memo_path=$(memo)
not_trusted memo "$memo_path" PyTorch
rm "$memo_path" && mkdir "$memo_path"
edit_stack
rc=0
build "$inc" "$state" >/dev/null 2>"$SCRATCH/dir.err" || rc=$?
check_eq "memo replaced by a directory: the build succeeds" 0 "$rc"
check_contains "memo replaced by a directory: a warning says so" "cannot record the stack memo" "$(cat "$SCRATCH/dir.err")"
rmdir "$memo_path"
after "memo back"

# The rules' memo (lua/rules_memo.h) beside it: the rules' findings are reused while nothing
# they read changed, and the messages are still those of a fresh build after each edit.
rules_memo() { find "$state" -type f -name bench.rules; }
check "a rules memo is written beside the state" test -s "$(rules_memo)"
check_contains "it lists what the rules read" "F.stacks[].description" "$(cat "$(rules_memo)")"
sed -i '0,/^description = "Synthetic stack 3:/s//description = "Edited stack 3:/' "$toml"
after "a description the rule reads"
sed -i 's/"description of "/"about "/' "$SCRATCH/rules/describe.lua"
after "the rule file changed"
check_contains "the changed rule's message is reported" "about 2.0.3" "$(cat "$SCRATCH/inc.err")"
not_trusted "rules memo" "$(rules_memo)" about
after "rules memo back"
finish
