#!/usr/bin/env bash
# Every committed easyconfig (easyconfigs-out/<site>/), run through the real EasyBuild 5.2.1
# (../shared/tools/easybuild/eb from the repository root) with a scratch --installpath,
# --buildpath, --sourcepath and --tmpdir, and its module compared with sitegen's own
# modulefile (modules-out/<site>/) under the real Lmod. One line per check: PASS, or FAIL
# with the tool's own message. The checks, per easyconfig:
#
#   dry-run            eb --dry-run
#   extended-dry-run   eb -x: exit 0 and no "ignoring error" warning (except EasyBuild's own
#                      dry-run limitations, which no easyconfig causes: see dry_run_errors)
#   check-contrib      eb --check-contrib: style (pycodestyle as EasyBuild configures it) and
#                      SHA256 checksums for every source
#   module-only/SYNTAX eb --module-only --force on a fresh install path (nothing installed, no
#                      image: how a site publishes or regenerates a module), Lua and Tcl; for
#                      a container stack a user's load of that module must then fail on the
#                      missing image
#   install/SYNTAX     a full install with stand-ins for what this machine lacks, Lua and Tcl;
#                      after it:
#     scripts          every file sitegen ships for the stack is installed byte for byte, with
#                      the same executable bit
#     location         the module is where job.slurm looks: <prefix>/modulefiles/<name>/<version>,
#                      and nothing else is in that tree
#     environment      loading EasyBuild's module and sitegen's (both in real Lmod, from a clean
#                      shell) sets the same variables to the same values, EasyBuild's own
#                      bookkeeping (EBROOT*, EBVERSION*, EBDEVEL*) aside
#     help, whatis     `module help` and `module whatis` print the same text
#     default          `module load <name>` picks the same version in both trees
#     unload           loading and unloading EasyBuild's module restores the environment
#   refuses-*          a full install with a broken payload must fail (in postinstallcmds or
#                      EasyBuild's sanity check; the same install with the good payload passed):
#                      a dummy 23-byte image, an image without torch, a pip that installed
#                      nothing, the dependency module lacking the Python the stack is built for
#                      (then EasyBuild's own interpreter is the first `python`)
#   image-checksum     a full install with an image that is not the site's must fail the
#                      checksum verification
#
# EasyBuild is configured as a site would run it for sitegen's layout (eb_site_opts below):
# modules in <prefix>/modulefiles (--installpath-modules=<prefix>
# --suffix-modules-path=modulefiles), software in <prefix>/software (EasyBuild's default), no
# CMAKE_PREFIX_PATH (--filter-env-vars=CMAKE_PREFIX_PATH: sitegen's modules do not set it),
# --set-default-module where sitegen marks the stack default.
#
# Stand-ins (tests/tools/eb-standins/, each documented in its header), placed where the site
# has the real thing: `singularity`/`apptainer` on PATH (ch-run runs the command in the stand-in
# image), the image itself as the source file (make-image: conda env with stand-in packages at
# the site's component versions, and the network plugin library), the site's external modules
# as stub modules (python/X.Y.Z-... puts a stand-in CPython X.Y on PATH, miniforge3/... the
# stand-in conda), a stand-in CPython 3.11 as `python` after the modules on PATH (EasyBuild's
# own interpreter, as when EasyBuild is installed in a venv), the stand-in pip behind every
# stand-in interpreter. The local site's Python is the host's real /usr/bin/python3 with
# Debian's torch; Aurora's conda environment (/opt/aurora/...) is a stand-in in a private mount
# namespace (a tmpfs over /opt for the eb process only).
#
# Environment: SITEGEN_EB_EASYCONFIGS / SITEGEN_EB_MODULES replace easyconfigs-out /
# modules-out (to check hand-edited copies), SITEGEN_EB_SITES limits the sites (space
# separated), SITEGEN_EB_KEEP=DIR keeps the scratch tree there.
set -euo pipefail
# SITEGEN (as every suite gets it) is unused: the committed outputs are what is checked, and
# the committed_outputs suite checks that they are sitegen's.
# shellcheck disable=SC2034
sitegen=$(realpath "${1:?usage: easybuild_real.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool python3 ch-run unsquashfs mksquashfs cc unshare
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed"; finish; }
/usr/bin/python3 -c 'import pycodestyle' 2>/dev/null || { fail "python3-pycodestyle is not installed (tests/tools/install-deps.sh)"; finish; }
eb=$(git -C "$root" rev-parse --show-toplevel)/../shared/tools/easybuild/eb
[[ -x $eb ]] || { fail "real EasyBuild not found at $eb"; finish; }
standins=$root/tests/tools/eb-standins
ecroot=${SITEGEN_EB_EASYCONFIGS:-$root/easyconfigs-out}
modroot=${SITEGEN_EB_MODULES:-$root/modules-out}
work=${SITEGEN_EB_KEEP:-$SCRATCH/work}
mkdir -p "$work"
work=$(cd "$work" && pwd)
# The eb wrapper unpacks EasyBuild once per cache; keep the caller's.
eb_cache=${SITEGEN_EB_CACHE:-${HOME:-/tmp}/.cache/easybuild-5.2.1}
# Assumed in the stand-in image: where the network plugin library lives (the site file does
# not say yet; see the report that came with this suite).
plugin_lib_in_image=/opt/aws-ofi-rccl/librccl-net.so

# Set per easyconfig by ec_facts and eb_site_facts.py (eval).
name='' version='' versionsuffix='' layout='' python_version='' python_xy='' conda_root='' conda_env=''
uses_pip=0 sources=() ext_deps=() components=()

say_pass() { pass; echo "PASS $*"; }
# say_fail NAME [FILE]: counts a failure and prints the tool's message (the lines of FILE
# that say what went wrong, else its tail).
say_fail() {
  fail "$1"
  [[ -n ${2:-} && -r $2 ]] || return 0
  local msg
  msg=$(grep -E '^[A-Za-z]*Error: |^ERROR|^== FAILED|ignoring error|: [EW][0-9]{3} |\[FAIL\]|Checksums? |Sanity check failed|failed with exit code|LmodError|Lmod has detected|^FATAL|^CondaError|not found' "$2" |
    grep -v "'eb' not found in \$PATH" | head -n 25 || true)
  [[ -n $msg ]] || msg=$(tail -n 15 "$2")
  printf '    %s\n' "${msg//$'\n'/$'\n'    }"
}

# ec_facts EC: shell assignments name, version, versionsuffix, ext_deps (array), sources
# (array of file names), uses_pip (1 if a postinstallcmd runs pip), read the way EasyBuild
# reads the file.
ec_facts() {
  /usr/bin/python3 - "$1" <<'EOF'
import shlex, sys
env = {"SYSTEM": {"name": "system", "version": "system"}, "EXTERNAL_MODULE": "EXTERNAL_MODULE"}
exec(open(sys.argv[1]).read(), env)
q = shlex.quote
print(f"name={q(env['name'])} version={q(env['version'])} versionsuffix={q(env.get('versionsuffix', ''))}")
deps = [d[0] for d in env.get("dependencies", []) if len(d) > 1 and d[1] == "EXTERNAL_MODULE"]
print("ext_deps=(" + " ".join(q(d) for d in deps) + ")")
srcs = [s["filename"] if isinstance(s, dict) else s for s in env.get("sources", [])]
print("sources=(" + " ".join(q(s) for s in srcs) + ")")
print("uses_pip=%d" % any("-m pip install" in c for c in env.get("postinstallcmds", [])))
EOF
}

# dry_run_errors LOG: the errors eb -x ignored and reported, less EasyBuild's own dry-run
# limitations, which no easyconfig can avoid: the RPATH wrappers it "writes" but cannot chmod,
# and the install step of an easyblock that copies extracted sources (MakeCp: nothing is
# extracted in a dry run, so its start_dir is None or its files_to_copy are missing; the full
# install checks that step for real).
dry_run_errors() {
  awk '/^\[[a-z_]+ method\]$/ { step = $1 }
       /ignoring error/ && !/rpath_wrappers/ && !(step == "[install_step" && /chdir: path should be|No files matching/) { print }' "$1"
}

# run_eb LOG ARGS...: the real eb in a clean environment (PATH: stand-in tools, the host's;
# MODULEPATH: the site's stub modules), status of eb.
run_eb() {
  local log=$1
  shift
  local -a cmd=(env -i "HOME=$work/home" "USER=${USER:-root}" "SITEGEN_EB_CACHE=$eb_cache"
    "PATH=$env_dir/tools:$env_dir/eb-python/bin:/usr/bin:/bin" "MODULEPATH=$env_dir/stubs"
    "SITEGEN_STANDIN_LOG=$env_dir/standin.log" "${eb_env[@]}" "$eb" --allow-use-as-root-and-accept-consequences
    --robot-paths= "$@")
  if [[ -n $ns_setup ]]; then
    unshare -m --propagation private bash -c "$ns_setup"' && exec "$@"' ns "${cmd[@]}" >"$log" 2>&1
  else
    "${cmd[@]}" >"$log" 2>&1
  fi
}

# scratch_opts DIR: --installpath/--buildpath/--sourcepath/--tmpdir under DIR (fresh).
scratch_opts() {
  rm -rf "$1"
  mkdir -p "$1/src" "$1/tmp"
  printf '%s\n' "--installpath=$1/prefix" "--buildpath=$1/build" "--sourcepath=$1/src" "--tmpdir=$1/tmp"
}

# make_stubs DIR DEPS...: a stub module for each of the site's own modules the stack depends
# on. python/X.Y[.Z]... puts a stand-in CPython X.Y on PATH, miniforge3/... and conda/... the
# stand-in conda; the others set nothing. STUB_NO_PYTHON=1: the python module puts nothing on
# PATH (a module without the interpreter).
make_stubs() {
  local dir=$1 dep
  shift
  mkdir -p "$dir"
  for dep in "$@"; do
    mkdir -p "$dir/$(dirname "$dep")"
    {
      echo "-- stub of the site's own $dep (tests/wip/easybuild_real.sh)"
      if [[ $dep =~ ^python/([0-9]+\.[0-9]+(\.[0-9]+)?) && ${STUB_NO_PYTHON:-0} != 1 ]]; then
        "$standins/mkpython" "$env_dir/ext/$dep" "${BASH_REMATCH[1]}"
        echo "prepend_path(\"PATH\", \"$env_dir/ext/$dep/bin\")"
      elif [[ $dep == miniforge3/* || $dep == conda/* || $dep == anaconda3/* ]]; then
        mkdir -p "$env_dir/ext/$dep/bin"
        ln -sfn "$standins/conda" "$env_dir/ext/$dep/bin/conda"
        echo "prepend_path(\"PATH\", \"$env_dir/ext/$dep/bin\")"
      fi
    } >"$dir/$dep.lua"
  done
}

# vars_of MODULEPATH MODULE: what loading MODULE sets, without Lmod's records and EasyBuild's
# bookkeeping.
vars_of() {
  local out
  out=$(lmod_vars_set_by "$1" "$2") || return 1
  grep -Ev '^(__LMOD|_ModuleTable|LMOD_|EBROOT|EBVERSION|EBDEVEL)' <<<"$out" || true
}

# help_of MODULEPATH MODULE: `module help`, without the blank lines around the text (EasyBuild's
# Lua help([==[ ... ]==]) loses its first newline to Lua's long-bracket rule, its Tcl help does
# not: the two modules EasyBuild writes differ there, and only there).
help_of() {
  lmod_clean_shell "$1" "module help '$2' 2>&1" | sed 's/ *$//' |
    awk '/Module Specific Help for/ { print; skip = 1; next } skip && /^$/ { next } { skip = 0; print }' |
    sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
}
whatis_of() { lmod_clean_shell "$1" "module whatis '$2' 2>&1" | sed 's/^ *//; s/ *$//'; }
default_of() { lmod_clean_shell "$1" "module load '$2' && module -t list 2>&1 | grep -v '^Currently'"; }

# compare_installed_scripts INSTALLDIR SITEGEN_STACKDIR: every file sitegen ships, same bytes
# and executable bit.
compare_installed_scripts() {
  local inst=$1 ours=$2 rel bad=()
  while IFS= read -r rel; do
    if [[ ! -f $inst/$rel ]]; then
      bad+=("$rel: not installed")
    elif ! cmp -s "$inst/$rel" "$ours/$rel"; then
      bad+=("$rel: differs")
    elif [[ -x $inst/$rel && ! -x $ours/$rel || ! -x $inst/$rel && -x $ours/$rel ]]; then
      bad+=("$rel: executable bit differs")
    fi
  done < <(cd "$ours" && find . -type f ! -name '*.sif' ! -name .sitegen-manifest | sed 's|^\./||' | sort)
  printf '%s\n' "${bad[@]}"
  [[ ${#bad[@]} -eq 0 ]]
}

check_install_outputs() {  # after a successful full install
  local tag=$1 syntax=$2 prefix=$3
  local modfile=$prefix/modulefiles/$modname
  [[ $syntax == Lua ]] && modfile+=.lua
  local out
  if out=$(compare_installed_scripts "$prefix/software/$name/$version$versionsuffix" "$ours_stackdir"); then
    say_pass "$tag: installed scripts are sitegen's, byte for byte"
  else
    fail "$tag: installed scripts differ from sitegen's:"
    printf '    %s\n' "${out//$'\n'/$'\n'    }"
  fi
  if [[ -f $modfile ]]; then
    say_pass "$tag: module at <prefix>/modulefiles/$modname"
    # Nothing else in that tree for `module avail` to show (e.g. EasyBuild's moduleclass links);
    # default markers (.modulerc.lua, .version, a default link) aside.
    local extra
    extra=$(find "$prefix/modulefiles" \( -type f -o -type l \) ! -name .modulerc.lua ! -name .version ! -name default -printf '%P\n' |
      sed 's|\.lua$||' | grep -vxF "$modname" || true)
    if [[ -z $extra ]]; then say_pass "$tag: <prefix>/modulefiles holds only $modname"; else
      fail "$tag: <prefix>/modulefiles also holds: $(tr '\n' ' ' <<<"$extra")"
    fi
  else
    fail "$tag: no module at <prefix>/modulefiles/$modname (job.slurm does module use <prefix>/modulefiles); EasyBuild wrote: $(cd "$prefix" && find . -path ./software -prune -o \( -type f -o -type l \) -print | tr '\n' ' ')"
    return 0
  fi
  # sitegen's modulefile, relocated to this prefix (as sitegen build --prefix does: only root
  # names the prefix; "module use" lines in help name the site's own module paths).
  local ours_mp=$work/$site/ours-$syntax
  rm -rf "$ours_mp"
  mkdir -p "$ours_mp"
  cp -a "$ours_modules/." "$ours_mp/"
  find "$ours_mp" -type f -exec sed -i "s|^local root = \"$ours_prefix/|local root = \"$prefix/|" {} +
  local eb_mp=$prefix/modulefiles:$env_dir/stubs ours_full=$ours_mp:$env_dir/stubs theirs ours
  if ! ours=$(vars_of "$ours_full" "$modname" 2>&1); then
    fail "$tag: sitegen's $modname does not load: $ours"
  elif ! theirs=$(vars_of "$eb_mp" "$modname" 2>&1); then
    fail "$tag: EasyBuild's $modname does not load:"
    printf '    %s\n' "${theirs//$'\n'/$'\n'    }"
  elif [[ $ours == "$theirs" ]]; then
    say_pass "$tag: EasyBuild's module sets what sitegen's sets"
  else
    fail "$tag: EasyBuild's module sets other variables than sitegen's (- sitegen, + EasyBuild):"
    diff -U0 <(printf '%s\n' "$ours") <(printf '%s\n' "$theirs") | tail -n +3 | grep -v '^@@' | sed 's/^/    /' | head -n 40 || true
  fi
  local a b
  a=$(help_of "$ours_full" "$modname") b=$(help_of "$eb_mp" "$modname")
  if [[ $a == "$b" ]]; then say_pass "$tag: module help is sitegen's"; else
    fail "$tag: module help differs (- sitegen, + EasyBuild):"
    diff -U0 <(printf '%s\n' "$a") <(printf '%s\n' "$b") | tail -n +3 | grep -v '^@@' | sed 's/^/    /' | head -n 40 || true
  fi
  a=$(whatis_of "$ours_full" "$modname") b=$(whatis_of "$eb_mp" "$modname")
  if [[ $a == "$b" ]]; then say_pass "$tag: module whatis is sitegen's"; else
    fail "$tag: module whatis differs (- sitegen, + EasyBuild):"
    diff -U0 <(printf '%s\n' "$a") <(printf '%s\n' "$b") | tail -n +3 | grep -v '^@@' | sed 's/^/    /' || true
  fi
  a=$(default_of "$ours_full" "$name" 2>&1 || true) b=$(default_of "$eb_mp" "$name" 2>&1 || true)
  if [[ $a == "$b" ]]; then say_pass "$tag: module load $name picks the same version"; else
    fail "$tag: module load $name: sitegen's tree loads [$a], EasyBuild's [$b]"
  fi
  if out=$(lmod_load_unload_roundtrip "$eb_mp" "$modname" 2>&1); then
    say_pass "$tag: load + unload of EasyBuild's module restores the environment"
  else
    fail "$tag: load + unload of EasyBuild's module:"
    printf '    %s\n' "${out//$'\n'/$'\n'    }"
  fi
}

# prepare_sources DIR [VARIANT]: the stand-in image as the source file, for container stacks.
# VARIANT: good (default), no-torch, dummy.
prepare_sources() {
  local dir=$1 variant=${2:-good} s pkgs=()
  for s in "${sources[@]}"; do
    [[ $s == *.sif ]] || continue
    case $variant in
      dummy) head -c 23 /dev/zero | tr '\0' x >"$dir/$s" ;;
      *)
        local c
        for c in "${components[@]}"; do
          [[ $variant == no-torch && $c == torch==* ]] && continue
          pkgs+=(--package "$c")
        done
        "$standins/make-image" "$dir/$s" --conda-root "${conda_root:-/opt/conda}" --env "${conda_env:-base}" \
          --python "$python_xy" "${pkgs[@]}" --library "$plugin_lib_in_image"
        ;;
    esac
  done
}

check_easyconfig() {
  local ec=$1 facts
  facts=$(ec_facts "$ec") || { fail "$site: cannot read $ec"; return 0; }
  eval "$facts"
  modname=$name/$version$versionsuffix
  local tag0="$site $modname"
  ours_modules=$modroot/$site/modulefiles
  ours_stackdir=$modroot/$site/software/$name/$version$versionsuffix
  ours_prefix=$(sed -n 's|^local root = "\(.*\)/software/.*"$|\1|p' "$ours_modules/$modname.lua")
  eval "$(/usr/bin/python3 "$root/tests/tools/eb_site_facts.py" "$root/sites/$site/site.toml" "$name" "$version" "$versionsuffix")"
  env_dir=$work/$site/env
  rm -rf "$env_dir"
  mkdir -p "$env_dir/tools" "$work/home"
  ln -s "$standins/singularity" "$env_dir/tools/singularity"
  ln -s "$standins/singularity" "$env_dir/tools/apptainer"
  "$standins/mkpython" "$env_dir/eb-python" 3.11
  make_stubs "$env_dir/stubs" "${ext_deps[@]}"
  eb_env=()
  ns_setup=
  if [[ $layout == frameworks-module && -n $conda_env && ! -e $conda_env ]]; then
    # The site's conda environment, as a stand-in, visible to eb only (tmpfs over its top dir).
    local top
    top=/$(cut -d/ -f2 <<<"$conda_env")
    local pkgs=() c
    for c in "${components[@]}"; do pkgs+=("$c"); done
    ns_setup="mount -t tmpfs tmpfs $(printf %q "$top") && $(printf %q "$standins/mkpython") $(printf %q "$conda_env") $(printf %q "$python_version") && /usr/bin/python3 -S $(printf %q "$standins/standin_pip.py") --interpreter $(printf %q "$conda_env/bin/python$python_xy") --prefix $(printf %q "$conda_env") --python $python_xy install $(printf '%q ' "${pkgs[@]}") >/dev/null"
  fi
  local default_opt=()
  [[ -f $ours_modules/$name/.modulerc.lua ]] && grep -q '"default"' "$ours_modules/$name/.modulerc.lua" && default_opt=(--set-default-module)
  local d log opts
  d=$work/$site/run
  local -a eb_site_opts
  site_opts() { eb_site_opts=(--installpath-modules="$1/prefix" --suffix-modules-path=modulefiles --filter-env-vars=CMAKE_PREFIX_PATH "${default_opt[@]}"); }

  # --dry-run, -x, --check-contrib
  mapfile -t opts < <(scratch_opts "$d")
  site_opts "$d"
  log=$work/$site/dry-run.log
  if run_eb "$log" "${opts[@]}" "${eb_site_opts[@]}" --dry-run "$ec"; then say_pass "$tag0: eb --dry-run"; else say_fail "$tag0: eb --dry-run" "$log"; fi
  log=$work/$site/x.log
  if run_eb "$log" "${opts[@]}" "${eb_site_opts[@]}" -x "$ec"; then
    local errs
    errs=$(dry_run_errors "$log")
    if [[ -n $errs ]]; then
      say_fail "$tag0: eb -x: errors in the extended dry run" <(printf '%s\n' "$errs")
    else
      say_pass "$tag0: eb -x"
    fi
  else
    say_fail "$tag0: eb -x" "$log"
  fi
  log=$work/$site/check-contrib.log
  if run_eb "$log" "${opts[@]}" --check-contrib "$ec"; then say_pass "$tag0: eb --check-contrib"; else
    local n
    n=$(grep -cE ': [EW][0-9]{3} ' "$log" || true)
    say_fail "$tag0: eb --check-contrib ($n style problems; $(grep -oE '[EW][0-9]{3} [a-z ]*' "$log" | sort | uniq -c | sort -rn | awk '{c=$1; $1=""; printf "%s%s x%s", sep, $0, c; sep=";"}'))" \
      <(grep -vE ': [EW][0-9]{3} ' "$log"; grep -E ': [EW][0-9]{3} ' "$log" | head -n 5)
  fi

  local syntax
  for syntax in Lua Tcl; do
    # --module-only on a fresh install path: nothing installed, no image.
    mapfile -t opts < <(scratch_opts "$d")
    site_opts "$d"
    log=$work/$site/module-only-$syntax.log
    if run_eb "$log" "${opts[@]}" "${eb_site_opts[@]}" --module-syntax="$syntax" --module-only --force "$ec"; then
      say_pass "$tag0: eb --module-only --force, fresh install path, $syntax"
      if [[ " ${sources[*]} " == *.sif* ]]; then
        # No image yet: a user's load (not EasyBuild's test load) must say so and fail.
        local out
        if out=$(lmod_vars_set_by "$d/prefix/modulefiles:$env_dir/stubs" "$modname" 2>&1); then
          fail "$tag0: $syntax module loads for a user although the image is missing"
        elif [[ $out == *"container image"* ]]; then
          say_pass "$tag0: $syntax module refuses a user's load without the image"
        else
          fail "$tag0: $syntax module fails to load without the image, but not on the image: $out"
        fi
      fi
    else
      say_fail "$tag0: eb --module-only --force, fresh install path, $syntax" "$log"
    fi

    # Full install with the stand-ins.
    mapfile -t opts < <(scratch_opts "$d")
    site_opts "$d"
    prepare_sources "$d/src"
    log=$work/$site/install-$syntax.log
    : >"$env_dir/standin.log"
    if run_eb "$log" "${opts[@]}" "${eb_site_opts[@]}" --module-syntax="$syntax" --ignore-checksums "$ec"; then
      say_pass "$tag0: eb full install with stand-ins, $syntax"
      check_install_outputs "$tag0 [$syntax]" "$syntax" "$d/prefix"
    else
      say_fail "$tag0: eb full install with stand-ins, $syntax" "$log"
    fi
  done

  # A broken payload must not install.
  local -a broken=()
  for s in "${sources[@]}"; do [[ $s == *.sif ]] && broken+=(dummy-image no-torch-image); done
  [[ $uses_pip == 1 ]] && broken+=(pip-installed-nothing)
  for s in "${ext_deps[@]}"; do [[ $s == python/* ]] && broken+=(module-without-python); done
  local b
  for b in "${broken[@]}"; do
    mapfile -t opts < <(scratch_opts "$d")
    site_opts "$d"
    case $b in
      dummy-image) prepare_sources "$d/src" dummy ;;
      no-torch-image) prepare_sources "$d/src" no-torch ;;
      *) prepare_sources "$d/src" ;;
    esac
    local saved_env=("${eb_env[@]}")
    [[ $b == pip-installed-nothing ]] && eb_env+=(SITEGEN_STANDIN_PIP_BROKEN=1)
    if [[ $b == module-without-python ]]; then
      rm -rf "$env_dir/stubs"
      STUB_NO_PYTHON=1 make_stubs "$env_dir/stubs" "${ext_deps[@]}"
    fi
    log=$work/$site/broken-$b.log
    if run_eb "$log" "${opts[@]}" "${eb_site_opts[@]}" --ignore-checksums "$ec"; then
      fail "$tag0: refuses-$b: EasyBuild installed it, its sanity check passed"
    else
      # The same install with the good payload passed above: this failure is the payload's.
      say_pass "$tag0: refuses-$b ($(grep -m1 -oE '^== FAILED: Installation ended unsuccessfully: .{0,160}' "$log" | cut -d: -f3- || true))"
    fi
    eb_env=("${saved_env[@]}")
    if [[ $b == module-without-python ]]; then
      rm -rf "$env_dir/stubs"
      make_stubs "$env_dir/stubs" "${ext_deps[@]}"
    fi
  done

  # The image's checksum is verified: the stand-in is not the site's image.
  if [[ " ${sources[*]} " == *.sif* ]]; then
    mapfile -t opts < <(scratch_opts "$d")
    site_opts "$d"
    prepare_sources "$d/src"
    log=$work/$site/image-checksum.log
    if run_eb "$log" "${opts[@]}" "${eb_site_opts[@]}" "$ec"; then
      fail "$tag0: image-checksum: EasyBuild installed an image that is not the site's (no checksum to verify it)"
    elif grep -q 'Checksum verification .* failed' "$log"; then
      say_pass "$tag0: image-checksum: a wrong image is refused"
    else
      say_fail "$tag0: image-checksum: the install failed, but not on the checksum" "$log"
    fi
  fi
}

sites=${SITEGEN_EB_SITES:-$(cd "$ecroot" && ls)}
for site in $sites; do
  mapfile -t ecs < <(find "$ecroot/$site" -name '*.eb' | sort)
  [[ ${#ecs[@]} -gt 0 ]] || { fail "$site: no easyconfigs under $ecroot/$site"; continue; }
  for ec in "${ecs[@]}"; do check_easyconfig "$ec"; done
done
finish
