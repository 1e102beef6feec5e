#!/usr/bin/env bash
# The structure of src/ as a test: each layer folder includes only the layers below it, no
# renderer includes another renderer, no switch over a model enumeration has a `default:`,
# and the plan is the only way from the site to an output (renderers never see load/check).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
cd "$root/src"

# Folder -> the folders its non-test sources may include (itself always).
declare -A allowed=(
  [text]=""
  [node]="site text"
  [out]="site render text"  # render/emit.h: the OutputFile type publish writes; text: the lowest layer
  [site]="text node out plan"  # out: the FileSystem interface; plan: check asks what the module owns
  [plan]="site text node"
  [render]="plan site text out"
  [lua]="site render out plan"  # render/emit.h: the self-check reads OutputFiles; out: rule files are read as regular files; plan: hooks add plan data
)

# A renderer is a render/*.cpp that renders outputs; the other render files are shared
# writers (lua_statements, tcl_statements, module_tree), the output type (emit.h) and the table of renderers.
renderer_headers=()
for f in render/*.h; do
  case $f in
    render/emit.h | render/lua_statements.h | render/tcl_statements.h | render/renderers.h | render/module_tree.h) ;;
    *) renderer_headers+=("$f") ;;
  esac
done

while IFS= read -r file; do
  dir=${file%%/*}
  [[ $file == */* ]] || continue  # main.cpp, pipeline.*: the top may use every layer
  [[ $file != *_test.cpp ]] || continue
  bad=""
  while IFS= read -r inc; do
    target=${inc%%/*}
    [[ $target == "$dir" ]] && continue
    [[ " ${allowed[$dir]:-} " == *" $target "* ]] || bad+=" $inc"
  done < <(sed -n 's/^#include "\([a-z_]*\/[^"]*\)".*/\1/p' "$file")
  if [[ -z $bad ]]; then pass; else fail "$file includes a layer above it:$bad"; fi
  if [[ $dir == render && $file == *.cpp && $file != render/renderers.cpp ]]; then
    own=${file%.cpp}.h
    for header in "${renderer_headers[@]}"; do
      [[ $header == "$own" ]] && continue
      if grep -q "#include \"$header\"" "$file"; then
        fail "$file includes another renderer's header $header"
      else
        pass
      fi
    done
  fi
done < <(find . -name '*.cpp' -o -name '*.h' | sed 's|^\./||' | sort)

# Every switch over a model enumeration names its values: no `default:` in src/ outside the
# switches over bytes (text/quote.cpp, site/diagnostics.cpp), toml++'s node types
# (site/toml_reader.cpp), exit statuses (lua/supervisor.cpp) and message tags read from the
# supervised child (lua/selfcheck.cpp).
if grep -rn --include='*.cpp' --include='*.h' -E '^\s*default\s*:' . |
  grep -v -E '^\./(text/quote\.cpp|site/toml_reader\.cpp|site/diagnostics\.cpp|lua/supervisor\.cpp|lua/selfcheck\.cpp):' \
    >"$SCRATCH/defaults"; then
  fail "switch with a default: label (name every enumerator instead): $(cat "$SCRATCH/defaults")"
else
  pass "no default: labels"
fi
# -Werror=switch makes a missing enumerator a compile error.
check_contains "-Werror=switch in CMakeLists.txt" "-Werror=switch" "$(cat "$root/CMakeLists.txt")"
# ctest splits a Catch2 test name at ';' into names that match nothing (and then fail).
if grep -rn --include='*_test.cpp' -E 'TEST_CASE\("[^"]*;' . >"$SCRATCH/semicolons"; then
  fail "unit test names with ';' (ctest splits them): $(cat "$SCRATCH/semicolons")"
else
  pass "no ';' in unit test names"
fi

finish
