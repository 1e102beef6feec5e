// plan: bin/extend-venv-activate for every stack with venv_extension = true: a script that
// makes a user's venv load the stack's module on activate and undo exactly that on
// deactivate; idempotent, updatable, removable byte for byte, safe with any venv path.
#include "plan/venv_extension.h"

#include <stdexcept>

#include "plan/paths.h"
#include "text/quote.h"

namespace sitegen {

namespace {

// Bump when the hook text changes: a newer script replaces blocks of any older format.
constexpr int kHookFormat = 2;

void replace_all(std::string& text, const std::string& from, const std::string& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
}

// Inserted just before the venv's `_OLD_VIRTUAL_PATH="$PATH"`: the module is loaded before
// the venv puts its bin/ first on PATH, so the venv's python and pip win over the module's.
// The script adds the `_SITEGEN_VENV_SITE=...` line above it (the venv's Python X.Y).
// State lives in _SITEGEN_VENV_* shell variables, the same for every stack, so any
// extended venv's deactivate undoes whichever extended venv is active.
const char* kActivateHook = R"SH(if [ -z "${PYTHONPATH+x}" ] ; then _SITEGEN_VENV_PYTHONPATH_WAS="unset"
elif [ -z "$PYTHONPATH" ] ; then _SITEGEN_VENV_PYTHONPATH_WAS="empty"
else _SITEGEN_VENV_PYTHONPATH_WAS="set"
fi
_SITEGEN_VENV_MODULE=
case ":${LOADEDMODULES:-}:" in
    *:@MODULE@:*) ;;
    *)  if command -v module >/dev/null 2>&1 ; then
            if module -q load @MODULE@ ; then _SITEGEN_VENV_MODULE=@MODULE@ ; fi
        else
            echo "venv: no module command, so this venv did not load" @MODULE@ >&2
        fi ;;
esac
_SITEGEN_VENV_ADDED=
case "$_SITEGEN_VENV_SITE" in
    *:*) echo "venv: its path holds a colon, so its site-packages cannot go first on PYTHONPATH" >&2 ;;
    *)  case ":${PYTHONPATH:-}:" in
            *":$_SITEGEN_VENV_SITE:"*) ;;
            *)  _SITEGEN_VENV_ADDED=1
                PYTHONPATH="$_SITEGEN_VENV_SITE${PYTHONPATH:+:$PYTHONPATH}"
                export PYTHONPATH ;;
        esac ;;
esac
)SH";

// Inserted just after `deactivate () {`, so it runs before the venv restores PATH.
const char* kDeactivateHook = R"SH(    if [ -n "${_SITEGEN_VENV_SITE+x}" ] ; then
        if [ -n "${_SITEGEN_VENV_ADDED:-}" ] ; then
            _SITEGEN_VENV_PP=":${PYTHONPATH:-}:"
            _SITEGEN_VENV_PP="${_SITEGEN_VENV_PP/":$_SITEGEN_VENV_SITE:"/:}"
            _SITEGEN_VENV_PP="${_SITEGEN_VENV_PP#:}"
            PYTHONPATH="${_SITEGEN_VENV_PP%:}"
            export PYTHONPATH
        fi
        if [ -n "${_SITEGEN_VENV_MODULE:-}" ] && command -v module >/dev/null 2>&1 ; then
            # Unload from the PATH the module was loaded into (the one the venv saved), so
            # the venv restoring that PATH below does not bring the module entries back.
            if [ -n "${_OLD_VIRTUAL_PATH:-}" ] ; then
                PATH="$_OLD_VIRTUAL_PATH"
                module -q unload "$_SITEGEN_VENV_MODULE"
                _OLD_VIRTUAL_PATH="$PATH"
            else
                module -q unload "$_SITEGEN_VENV_MODULE"
            fi
        fi
        if [ -z "${PYTHONPATH:-}" ] ; then
            case "${_SITEGEN_VENV_PYTHONPATH_WAS:-}" in
                unset) unset PYTHONPATH ;;
                empty) PYTHONPATH= ; export PYTHONPATH ;;
            esac
        fi
        unset _SITEGEN_VENV_SITE _SITEGEN_VENV_ADDED _SITEGEN_VENV_MODULE
        unset _SITEGEN_VENV_PYTHONPATH_WAS _SITEGEN_VENV_PP
    fi
)SH";

// The script: fixed text; everything from the site arrives in the quoted variables above it.
const char* kBody = R"BASH(
usage() {
  cat <<USAGE
usage: extend-venv-activate [--check | --remove] [--] VENV

Makes 'source VENV/bin/activate' (bash or zsh) load the module $MODULE
quietly and put the venv's own site-packages first on PYTHONPATH, so packages you
install in the venv win over the module's; 'deactivate' undoes exactly that.
  (no option)  add the hook, or replace an older one; running it again changes nothing
  --check      exit 0 if VENV has this hook, 1 if it has none or an older one
  --remove     take the hook out again, restoring bin/activate byte for byte
  -h, --help   show this text
Make the venv with the module's Python, e.g.
  module load $MODULE
  python3 -m venv --system-site-packages VENV
activate.fish and activate.csh are not extended.
USAGE
}
die() { printf 'extend-venv-activate: %s\n' "$*" >&2; exit 1; }

mode=extend
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --check) mode=check ;;
    --remove) mode=remove ;;
    --) shift; break ;;
    -*) printf 'extend-venv-activate: unknown option %s\n' "$1" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
[[ $# -eq 1 ]] || { usage >&2; exit 2; }
venv=$1
[[ $venv == / ]] || venv=${venv%/}
[[ -d $venv ]] || die "$venv: no such directory"
[[ -f $venv/pyvenv.cfg ]] || die "$venv is not a Python venv: it has no pyvenv.cfg"
activate=$venv/bin/activate
[[ -f $activate ]] || die "$venv is not a Python venv: it has no bin/activate"
[[ ! -L $activate ]] || die "$activate is a symbolic link; not replacing it"

# The whole file, byte for byte (LC_ALL=C: lengths and patterns count bytes).
IFS= read -r -d '' original <"$activate" || true
[[ ${#original} -eq $(($(wc -c <"$activate"))) ]] || die "$activate holds a NUL byte; not a venv activate script"
[[ $original == *$'\n' ]] || die "$activate does not end with a newline; not a venv activate script"
mapfile -t lines <<<"${original%$'\n'}"

# The file without any sitegen block (any stack, any format): what --remove restores.
stripped=()
inside=0
for line in "${lines[@]}"; do
  trimmed=${line#"${line%%[![:space:]]*}"}
  if [[ $inside == 0 && $trimmed == "$BEGIN_PREFIX"* ]]; then inside=1; continue; fi
  if [[ $inside == 1 ]]; then
    if [[ $trimmed == "$END_PREFIX"* ]]; then inside=0; fi
    continue
  fi
  stripped+=("$line")
done
[[ $inside == 0 ]] || die "$activate has a sitegen block without its end marker; recreate the venv's activate script"

render() { if [[ $# -gt 0 ]]; then printf '%s\n' "$@"; fi; printf x; }

# The venv's Python X.Y: pyvenv.cfg's version, else the module's.
venv_python=
while IFS= read -r line || [[ -n $line ]]; do
  if [[ $line =~ ^[[:space:]]*(version_info|version)[[:space:]]*=[[:space:]]*([0-9]+\.[0-9]+) ]]; then
    venv_python=${BASH_REMATCH[2]}
    break
  fi
done <"$venv/pyvenv.cfg"

if [[ $mode == remove ]]; then
  new=$(render "${stripped[@]}")
else
  python_xy=${venv_python:-$MODULE_PYTHON}
  [[ $python_xy =~ ^[0-9]+\.[0-9]+$ ]] || die "$venv/pyvenv.cfg names no Python version; cannot find its site-packages"
  site_rel=lib/python$python_xy/site-packages
  [[ -d $venv/$site_rel ]] || die "$venv has no $site_rel"
  deactivate_anchor='deactivate () {'
  activate_anchor='_OLD_VIRTUAL_PATH="$PATH"'
  for anchor in "$deactivate_anchor" "$activate_anchor"; do
    count=0
    for line in "${stripped[@]}"; do [[ $line != "$anchor" ]] || count=$((count + 1)); done
    [[ $count == 1 ]] || die "$activate: expected exactly one line '$anchor', found $count; not a venv activate script this version knows, left unchanged"
  done
  mapfile -t on_activate <<<"${ACTIVATE_HOOK%$'\n'}"
  mapfile -t on_deactivate <<<"${DEACTIVATE_HOOK%$'\n'}"
  out=()
  seen_deactivate=0
  for line in "${stripped[@]}"; do
    if [[ $line == "$activate_anchor" ]]; then
      [[ $seen_deactivate == 1 ]] || die "$activate: '$activate_anchor' comes before '$deactivate_anchor'; left unchanged"
      # site_rel is digits, dots and fixed words (checked above): safe inside the quotes.
      out+=("$BEGIN" "_SITEGEN_VENV_SITE=\"\$VIRTUAL_ENV/$site_rel\"" "${on_activate[@]}" "$END")
    fi
    out+=("$line")
    if [[ $line == "$deactivate_anchor" ]]; then
      seen_deactivate=1
      out+=("    $BEGIN" "${on_deactivate[@]}" "    $END")
    fi
  done
  new=$(render "${out[@]}")
fi
new=${new%x}

if [[ $mode == check ]]; then
  if [[ $new == "$original" ]]; then echo "$venv: activate loads $MODULE (hook format $FORMAT)"; exit 0; fi
  echo "$venv: not extended for $MODULE, or by an older extend-venv-activate"
  exit 1
fi
if [[ $mode == extend ]]; then
  if [[ -n $venv_python && -n $MODULE_PYTHON && $venv_python != "$MODULE_PYTHON" ]]; then
    echo "extend-venv-activate: warning: $venv uses Python $venv_python but $MODULE is built for Python $MODULE_PYTHON; make the venv with the module's python3" >&2
  fi
  for other in activate.fish activate.csh; do
    if [[ -f $venv/bin/$other ]]; then
      echo "extend-venv-activate: note: bin/$other is not extended; use bash or zsh to load $MODULE with the venv" >&2
    fi
  done
fi
if [[ $new == "$original" ]]; then
  echo "$activate: unchanged"
  exit 0
fi
# Atomic replacement: a temporary file in the same directory, same mode, then rename.
tmp=$(mktemp "$venv/bin/.activate.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
printf '%s' "$new" >"$tmp"
chmod --reference="$activate" -- "$tmp"
mv -f -- "$tmp" "$activate"
trap - EXIT
if [[ $mode == remove ]]; then echo "$activate: hook removed"; else echo "$activate: loads $MODULE on activate"; fi
)BASH";

std::string script(const Stack& stack) {
    const std::string module = stack.module_full_name();
    // Markers are comment lines: a line break in the name would end the comment.
    for (char c : module)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            throw std::invalid_argument("module name '" + module + "' holds a control character");
    const std::string module_word = bash_word(module);
    std::string activate_hook = kActivateHook;
    replace_all(activate_hook, "@MODULE@", module_word);
    const std::string begin_prefix = "# >>> sitegen venv extension for ";
    const std::string end_prefix = "# <<< sitegen venv extension for ";
    const std::string format = std::to_string(kHookFormat);
    return "#!/usr/bin/env bash\n"
           "# extend-venv-activate: make a user's venv load this stack's module on activate and\n"
           "# unload it on deactivate. Generated by sitegen; do not edit.\n"
           "# The hooks and anchors below are shell text for bin/activate, not expanded here.\n"
           "# shellcheck disable=SC2016\n"
           "set -euo pipefail\n"
           "export LC_ALL=C\n"
           "MODULE=" + module_word + "\n"
           "MODULE_PYTHON=" + bash_word(python_major_minor(stack.python.version)) + "\n"
           "FORMAT=" + format + "\n"
           "BEGIN_PREFIX=" + bash_word(begin_prefix) + "\n"
           "END_PREFIX=" + bash_word(end_prefix) + "\n"
           "BEGIN=" + bash_word(begin_prefix + module + " (format " + format + ") >>>") + "\n"
           "END=" + bash_word(end_prefix + module + " <<<") + "\n"
           "ACTIVATE_HOOK=" + bash_word(activate_hook) + "\n"
           "DEACTIVATE_HOOK=" + bash_word(kDeactivateHook) + "\n" + kBody;
}

}  // namespace

void plan_venv_extension(const Stack& stack, std::vector<PlannedFile>& files) {
    if (stack.venv_extension) files.push_back({"bin/extend-venv-activate", script(stack), true});
}

}  // namespace sitegen
