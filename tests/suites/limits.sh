#!/usr/bin/env bash
# Pathological inputs get a clear error (or a result) in bounded time and memory: deep
# nesting, dotted keys and table headers 50,000 deep, a million-element array, a 10 MB site
# file, an extends chain 100 deep, extends of endless files outside the sites directory.
# Inputs are generated here rather than committed.
set -euo pipefail
sitegen=$(realpath "${1:?usage: limits.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool python3
sites=$SCRATCH/sites
mkdir -p "$sites/bad" "$sites/shared"

# expect_error NAME NEEDLE MAX_SECONDS MAX_MB: `check bad` exits 1 with NEEDLE in stderr.
expect_error() {
  local code=0 secs kb
  /usr/bin/time -f '%e %M' -o "$SCRATCH/time" "$sitegen" --sites-dir "$sites" check bad >/dev/null 2>"$SCRATCH/err" || code=$?
  read -r secs kb < <(tail -n 1 "$SCRATCH/time")  # time writes a status line first on failure
  check_eq "$1: exit code" 1 "$code"
  if grep -qF -- "$2" "$SCRATCH/err"; then pass; else fail "$1: expected '$2' in: $(head -c 400 "$SCRATCH/err")"; fi
  if awk -v s="$secs" -v k="$kb" -v ms="$3" -v mm="$4" 'BEGIN { exit !(s <= ms && k <= mm * 1024) }'; then
    pass
  else
    fail "$1: took ${secs}s and ${kb} KB (limits ${3}s, ${4} MB)"
  fi
}

python3 -c "print('x = ' + '[' * 100000 + ']' * 100000)" >"$sites/bad/site.toml"
expect_error "array nesting 100000 deep" "exceeded maximum nested value depth" 5 200
python3 -c "print('[site]\nx = ' + '{a = ' * 50000 + '1' + '}' * 50000)" >"$sites/bad/site.toml"
expect_error "inline tables 50000 deep" "exceeded maximum nested value depth" 5 200
python3 -c "print('[' + '.'.join(['a'] * 50000) + ']')" >"$sites/bad/site.toml"
expect_error "a table header 50000 keys deep" "dotted keys and table headers nest tables more than 128 deep" 5 100
python3 -c "print('[[' + '.'.join(['a'] * 50000) + ']]')" >"$sites/bad/site.toml"
expect_error "an array-of-tables header 50000 keys deep" "sites/bad/site.toml:1:259: error: dotted keys" 5 100
python3 -c "print('[site]\n' + '.'.join(['a'] * 50000) + ' = 1')" >"$sites/bad/site.toml"
expect_error "a dotted key 50000 parts long" "dotted keys and table headers nest tables more than 128 deep" 5 100
python3 -c "print('x = ' + ('{' + '.'.join(['a'] * 100) + ' = ') * 255 + '1' + '}' * 255)" >"$sites/bad/site.toml"
expect_error "dotted keys 100 long in 255 nested inline tables" "dotted keys and table headers nest tables more than 128 deep" 5 100
# Text in a multi-line string is not a header: toml++ gets the file and reports the last line.
python3 -c "print('x = \"\"\"\n[' + '.'.join(['a'] * 50000) + ']\n\"\"\"\ny =')" >"$sites/bad/site.toml"
expect_error "a deep header inside a multi-line string is text" "site.toml:4:4: error: Error while parsing" 5 100
python3 -c "print('[hardware]\nnics = [' + ','.join(['\"hsn0\"'] * 1000000) + ']')" >"$sites/bad/site.toml"
expect_error "a million-element array" "missing required table [site]" 20 1500
python3 -c "print('# padding\n' + '#' * (10 * 1024 * 1024))" >"$sites/bad/site.toml"
expect_error "a 10 MB site file" "site files are limited to 8388608 bytes" 5 100
for i in $(seq 0 99); do echo "extends = [\"f$((i + 1)).toml\"]" >"$sites/shared/f$i.toml"; done
: >"$sites/shared/f100.toml"
echo 'extends = ["../shared/f0.toml"]' >"$sites/bad/site.toml"
expect_error "an extends chain 100 deep" "'extends' chain deeper than 16 files" 5 100
echo 'extends = ["/dev/zero"]' >"$sites/bad/site.toml"
expect_error "extends of /dev/zero" "'/dev/zero' is outside the sites directory" 5 100
ln -s /dev/zero "$sites/shared/zero.toml"
echo 'extends = ["../shared/zero.toml"]' >"$sites/bad/site.toml"
expect_error "extends of a link to /dev/zero" "leads outside the sites directory '$sites' through a symbolic link" 5 100
finish
