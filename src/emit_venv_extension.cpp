// emit: bin/extend-venv-activate for every stack with venv_extension = true: a script that
// makes a user's venv load the stack's module on activate and undo exactly that on
// deactivate; idempotent, updatable, removable byte for byte, safe with any venv path.
#include "emit_venv_extension.h"

#include <cctype>

#include "layout.h"
#include "quote.h"

namespace sitegen {

namespace {

constexpr int kBlockFormat = 1;

std::string ident(const std::string& module) {
    std::string out;
    for (char c : module)
        out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : '_';
    return out;
}

// The script body is fixed text; only MODULE, VARS and FORMAT come from the site, quoted.
const char* kBody = R"BASH(
usage() {
  cat <<USAGE
usage: extend-venv-activate [--check | --remove] VENV

Makes 'source VENV/bin/activate' load $MODULE (quietly) and put the venv's own
site-packages first on PYTHONPATH, and makes 'deactivate' undo exactly that.
  (no option)  add the hook, or replace an older one; running it twice changes nothing
  --check      exit 0 if VENV is extended by this version, 1 if not
  --remove     take the hook out again, restoring bin/activate byte for byte
bash and zsh use bin/activate; activate.fish and activate.csh are not extended.
USAGE
}
die() { printf 'extend-venv-activate: %s\n' "$*" >&2; exit 1; }

mode=extend
case ${1:-} in
  -h | --help) usage; exit 0 ;;
  --check) mode=check; shift ;;
  --remove) mode=remove; shift ;;
  -*) usage >&2; exit 2 ;;
esac
[[ $# -eq 1 ]] || { usage >&2; exit 2; }
venv=${1%/}
[[ -d $venv ]] || die "$venv: no such directory"
[[ -f $venv/pyvenv.cfg ]] || die "$venv is not a Python venv (no pyvenv.cfg)"
activate=$venv/bin/activate
[[ -f $activate ]] || die "$venv is not a Python venv (no bin/activate)"

begin_prefix="# >>> sitegen venv extension for $MODULE (format "
begin="$begin_prefix$FORMAT) >>>"
end="# <<< sitegen venv extension for $MODULE <<<"
anchor='deactivate () {'

IFS= read -r -d '' original <"$activate" || true
[[ $original == *$'\n' ]] || die "$activate does not end with a newline; not a venv activate script"
mapfile -t lines <<<"${original%$'\n'}"

# The file without any block of ours (any format version).
stripped=()
skipping=0
for line in "${lines[@]}"; do
  if [[ $line == "$begin_prefix"* || $line == "    $begin_prefix"* ]]; then skipping=1; continue; fi
  if [[ $skipping == 1 ]]; then
    if [[ $line == "$end" || $line == "    $end" ]]; then skipping=0; fi
    continue
  fi
  stripped+=("$line")
done
[[ $skipping == 0 ]] || die "$activate has an unterminated sitegen block; restore it from a fresh venv"

render() { if [[ $# -gt 0 ]]; then printf '%s\n' "$@"; fi; }

if [[ $mode == remove ]]; then
  new=$(render "${stripped[@]}"; printf x)
  new=${new%x}
else
  # The venv's own site-packages, relative to the venv (found, not guessed from a version).
  site_rel=
  for d in "$venv"/lib/python3*/site-packages; do
    [[ -d $d ]] && site_rel=${d#"$venv"/}
  done
  [[ -n $site_rel ]] || die "$venv has no lib/python3*/site-packages"
  [[ $site_rel =~ ^lib/python3\.[0-9]+/site-packages$ ]] || die "unexpected site-packages path $site_rel"
  anchors=0
  for line in "${stripped[@]}"; do [[ $line == "$anchor" ]] && anchors=$((anchors + 1)); done
  [[ $anchors == 1 ]] || die "$activate: expected one line '$anchor' to hook deactivate, found $anchors; not extended"
  on_deactivate=(
    "    $begin"
    "    if [ -n \"\${${VARS}_SITE:-}\" ] ; then"
    "        if [ -n \"\${${VARS}_ADDED:-}\" ] ; then"
    "            ${VARS}_PP=\":\${PYTHONPATH:-}:\""
    "            ${VARS}_PP=\"\${${VARS}_PP/\":\$${VARS}_SITE:\"/:}\""
    "            ${VARS}_PP=\"\${${VARS}_PP#:}\""
    "            PYTHONPATH=\"\${${VARS}_PP%:}\""
    "            export PYTHONPATH"
    "        fi"
    "        if [ -n \"\${${VARS}_LOADED:-}\" ] && command -v module >/dev/null 2>&1 ; then"
    "            module -q unload $MODULE"
    "        fi"
    "        if [ -n \"\${${VARS}_UNSET:-}\" ] && [ -z \"\${PYTHONPATH:-}\" ] ; then"
    "            unset PYTHONPATH"
    "        fi"
    "        unset ${VARS}_SITE ${VARS}_ADDED ${VARS}_LOADED ${VARS}_UNSET ${VARS}_PP"
    "    fi"
    "    $end"
  )
  on_activate=(
    "$begin"
    "# Loads $MODULE and puts this venv's packages first; deactivate undoes both."
    "if [ -z \"\${PYTHONPATH+x}\" ] ; then ${VARS}_UNSET=1 ; else ${VARS}_UNSET= ; fi"
    "case \":\${LOADEDMODULES:-}:\" in"
    "    *\":$MODULE:\"*) ${VARS}_LOADED= ;;"
    "    *) ${VARS}_LOADED=1"
    "       if command -v module >/dev/null 2>&1 ; then"
    "           module -q load $MODULE"
    "       else"
    "           echo \"warning: no 'module' command; $MODULE was not loaded\" >&2"
    "       fi ;;"
    "esac"
    "${VARS}_SITE=\"\$VIRTUAL_ENV/$site_rel\""
    "case \":\${PYTHONPATH:-}:\" in"
    "    *\":\$${VARS}_SITE:\"*) ${VARS}_ADDED= ;;"
    "    *) ${VARS}_ADDED=1"
    "       PYTHONPATH=\"\$${VARS}_SITE\${PYTHONPATH:+:\$PYTHONPATH}\""
    "       export PYTHONPATH ;;"
    "esac"
    "$end"
  )
  out=()
  for line in "${stripped[@]}"; do
    out+=("$line")
    [[ $line == "$anchor" ]] && out+=("${on_deactivate[@]}")
  done
  out+=("${on_activate[@]}")
  new=$(render "${out[@]}"; printf x)
  new=${new%x}
fi

if [[ $mode == check ]]; then
  if [[ $new == "$original" ]]; then echo "$venv is extended for $MODULE"; exit 0; fi
  echo "$venv is not extended for $MODULE (or by an older format)"; exit 1
fi
for other in activate.fish activate.csh; do
  if [[ -f $venv/bin/$other && $mode == extend ]]; then
    echo "note: $venv/bin/$other is not extended; use bash or zsh to load $MODULE automatically" >&2
  fi
done
if [[ $new == "$original" ]]; then
  echo "$activate: unchanged"
  exit 0
fi
# Atomic replacement: a temporary file in the same directory, same mode, then rename.
tmp=$(mktemp "$venv/bin/.activate.XXXXXX")
trap 'rm -f "$tmp"' EXIT
printf '%s' "$new" >"$tmp"
chmod --reference="$activate" "$tmp"
mv -f "$tmp" "$activate"
trap - EXIT
if [[ $mode == remove ]]; then echo "$activate: $MODULE hook removed"; else echo "$activate: loads $MODULE on activate"; fi
)BASH";

std::string script(const Stack& stack) {
    const std::string module = stack.module_full_name();
    return "#!/usr/bin/env bash\n"
           "# extend-venv-activate (" + module + "): make a user's venv load this module on\n"
           "# activate and unload it on deactivate. Generated by sitegen; do not edit.\n"
           "set -euo pipefail\n"
           "MODULE=" + bash_word(module) + "\n"
           "VARS=" + bash_word("_SITEGEN_" + ident(module)) + "\n"
           "FORMAT=" + std::to_string(kBlockFormat) + "\n" + kBody;
}

}  // namespace

OutputList emit_stack_venv_extension(const Site& site, const Stack& stack, const EmitOptions&) {
    if (!stack.venv_extension) return {};
    return {{stack_output_path(site, stack, "bin/extend-venv-activate"), script(stack), true}};
}

OutputList emit_venv_extensions(const Site& site, const EmitOptions& options) {
    OutputList out;
    for (const auto& stack : site.stacks)
        for (auto& f : emit_stack_venv_extension(site, stack, options)) out.push_back(std::move(f));
    return out;
}

}  // namespace sitegen
