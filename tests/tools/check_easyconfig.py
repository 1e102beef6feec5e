#!/usr/bin/env python3
"""Checks sitegen's easyconfigs the way EasyBuild reads and runs them (EasyBuild itself
cannot be installed here).

usage: check_easyconfig.py PARAMS_FILE EASYCONFIGS_DIR MODULES_OUT_SITE_DIR [--records DIR] [--eb-modules DIR]

Per .eb file: Python syntax; every top-level name a known easyconfig parameter or local_*;
the required ones present; only names EasyBuild defines (SYSTEM, EXTERNAL_MODULE) or the
file assigns are read; dependencies are (module, EXTERNAL_MODULE) or (name, version...);
the file name is name-version[versionsuffix].eb under <letter>/<name>/; only known
%(templates)s. Then postinstallcmds run as EasyBuild runs them (templates resolved as
easyconfig.resolve_template does, each command in a shell, under bash and again under
/bin/sh) in a scratch install dir with recording fakes for the tools that need the real
site (singularity, apptainer, ch-run, podman-hpc, enroot, uenv, python, conda): the files they write must equal sitegen's own
runscripts/bin files byte for byte with the same executable bits, sanity_check_paths must
exist and sanity_check_commands must pass.

--records DIR: writes DIR/<name>-<version><suffix>.record, each fake tool call as a Python
list [tool, args..., PYTHONUSERBASE=..., MPICC=...] with the install dir written @INSTALLDIR@.
--eb-modules DIR: writes DIR/<name>/<version><suffix>.lua, the module EasyBuild 5.2.1
generates from the easyconfig (its Lua generator's statements for dependencies, the search
paths of its module load environment -- its defaults, CMAKE_PREFIX_PATH = the install dir and
PATH = bin among them, extended by modextrapaths, each kept only if it holds a file, as
EasyBuild checks -- then modextravars and modluafooter; quote_str-style quoting), for
installdir = sitegen's stack dir under MODULES_OUT_SITE_DIR, so a suite can load it next to
sitegen's modulefile. --filter-env-vars A,B: as EasyBuild's option of that name (no statement
for those variables), e.g. CMAKE_PREFIX_PATH as a site configures EasyBuild for sitegen.

Prints one line per problem and "N passed, N failed"; exits 1 on any failure.
"""
import argparse
import ast
import glob
import os
import re
import shutil
import stat
import subprocess
import tempfile

REQUIRED = {"name", "version", "homepage", "description", "toolchain", "easyblock"}
# Names EasyBuild defines for easyconfigs (easybuild-framework easyconfig/constants.py).
CONSTANTS = {"SYSTEM": {"name": "system", "version": "system"}, "EXTERNAL_MODULE": "EXTERNAL_MODULE"}
# Templates EasyBuild resolves (easyconfig/templates.py); sitegen uses installdir.
TEMPLATES = {"installdir", "name", "version", "versionsuffix", "versionprefix", "nameletter", "namelower",
             "builddir", "start_dir", "toolchain_name", "toolchain_version", "module_name"}
INSTALLDIR_MARK = "@INSTALLDIR@"


def resolve_template(value, tmpl):
    """EasyBuild's templating of one string value: every % not starting a %(name)s template
    (after any run of %) is doubled, then the string is %-formatted."""
    value = re.sub(r"(%)(?!%*\(\w+\)s)", r"\1\1", value)
    return value % tmpl


def lua_quote_like_easybuild(value):
    """How EasyBuild's Lua generator quotes a setenv value (tools/utilities.quote_str,
    escape_backslash off). Written from its documented behaviour, not its code."""
    if "'" in value and '"' in value:
        return '"""%s"""' % value
    if '"' in value:
        return "'%s'" % value
    return '"%s"' % value


def lua_string(s):
    out = ['"']
    for ch in s.encode():
        c = chr(ch)
        if c in '\\"':
            out.append("\\" + c)
        elif 0x20 <= ch < 0x7F:
            out.append(c)
        else:
            out.append("\\%03d" % ch)
    out.append('"')
    return "".join(out)


def names_read(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def write_fakes(fake_dir):
    # Each call is appended as NUL-separated argv, PYTHONUSERBASE=... and MPICC=..., then a
    # newline; `conda create --prefix P` leaves a recording python in P/bin, as a real
    # env would.
    recorder = ('#!/bin/sh\n{ printf "%s\\0" "$0" "$@" "PYTHONUSERBASE=${PYTHONUSERBASE-}" "MPICC=${MPICC-}"; '
                'printf "\\n"; } >> "$SITEGEN_RECORD"\n')
    conda = recorder + ('while [ $# -gt 0 ]; do if [ "$1" = --prefix ]; then '
                        'mkdir -p "$2/bin" && cp "$0.python" "$2/bin/python"; fi; shift; done\n')
    for tool, body in (("singularity", recorder), ("apptainer", recorder), ("ch-run", recorder), ("podman-hpc", recorder),
                       ("enroot", recorder), ("uenv", recorder), ("python", recorder),
                       ("conda", conda), ("conda.python", recorder)):
        path = os.path.join(fake_dir, tool)
        with open(path, "w") as f:
            f.write(body)
        os.chmod(path, 0o755)


def read_record(path, inst, fake_dir):
    """The recorded calls, one repr(list) each: a fake on PATH by its name, the install
    dir as @INSTALLDIR@."""
    if not os.path.exists(path):
        return []
    calls = []
    for entry in open(path, "rb").read().split(b"\0\n"):
        if entry:
            args = [a.decode() for a in entry.split(b"\0")]
            if os.path.dirname(args[0]) == fake_dir:
                args[0] = os.path.basename(args[0])
            calls.append(repr([a.replace(inst, INSTALLDIR_MARK) for a in args]))
    return calls


def tree_files(top, skip_prefix=None):
    out = []
    for d, _, fs in os.walk(top):
        for f in fs:
            rel = os.path.relpath(os.path.join(d, f), top)
            if skip_prefix is None or not rel.startswith(skip_prefix):
                out.append(rel)
    return sorted(out)


def run_postinstall(cmds, shell, tmp, tmpl_for):
    """Runs postinstallcmds as EasyBuild does (each resolved, in a shell) in a fresh install
    dir; returns (install dir, record file, list of failures)."""
    inst = os.path.join(tmp, shell.replace("/", "_") + " install dir")
    fake = os.path.join(tmp, "fakebin")
    record = os.path.join(tmp, shell.replace("/", "_") + ".record")
    os.makedirs(inst)
    failures = []
    for cmd in cmds:
        r = subprocess.run([shell, "-c", resolve_template(cmd, tmpl_for(inst))], cwd=tmp,
                           env={"PATH": fake + ":/usr/bin:/bin", "SITEGEN_RECORD": record},
                           capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{shell}: postinstallcmd failed: {cmd[:80]!r}: {r.stderr.strip()}")
    return inst, record, failures


def compare_with_sitegen(path, inst, stack_dir, report):
    written = tree_files(inst, skip_prefix="conda-env")
    written = [w for w in written if not w.startswith("user-software")]
    expected = tree_files(stack_dir)
    expected = [e for e in expected if not e.endswith((".sif", ".sqsh"))]  # a test may place the image
    report(written == expected, f"{path}: postinstallcmds wrote {written}, sitegen emits {expected}")
    for rel in expected:
        a, b = os.path.join(inst, rel), os.path.join(stack_dir, rel)
        if not os.path.exists(a):
            continue
        report(open(a, "rb").read() == open(b, "rb").read(), f"{path}: {rel} differs from sitegen's own file")
        report(bool(os.stat(a).st_mode & stat.S_IXUSR) == bool(os.stat(b).st_mode & stat.S_IXUSR),
               f"{path}: {rel} executable bit differs")


def check_sanity(path, env, inst, tmpl, report):
    paths = env.get("sanity_check_paths", {})
    for rel in paths.get("files", []):
        report(os.path.isfile(os.path.join(inst, resolve_template(rel, tmpl))),
               f"{path}: sanity_check_paths file {rel} missing after install")
    for rel in paths.get("dirs", []):
        report(os.path.isdir(os.path.join(inst, resolve_template(rel, tmpl))),
               f"{path}: sanity_check_paths dir {rel} missing after install")
    for cmd in env.get("sanity_check_commands", []):
        # The payload check (torch at the listed version from the stack's python, in the image
        # for container stacks) needs the site's Python and image: checked for its form here,
        # run by tests/wip/easybuild_real.sh with stand-ins.
        if "import torch" in cmd:
            report(re.fullmatch(r'(?:(?:singularity|apptainer) exec "\$SIF" |ch-run "\$SIF" -- '
                                r'|podman-hpc run --rm --network host --ipc host "\$SIF" |enroot start "\$SIF" '
                                r'|uenv run --view=[\w.:,-]+ "\$SIF" -- )?'
                                r'(?:python\d+\.\d+|/\S+) -c "import torch; v = torch\.__version__\.split\(\'\+\'\)\[0\]; '
                                r"assert v == '[^'+]+', v\"", cmd) is not None,
                   f"{path}: unexpected payload check {cmd!r}")
            continue
        r = subprocess.run(["bash", "-c", resolve_template(cmd, tmpl)], capture_output=True, text=True)
        report(r.returncode == 0, f"{path}: sanity_check_command failed: {cmd!r}: {r.stderr.strip()}")


# EasyBuild 5.2.1's module load environment (tools/modules.py ModuleLoadEnvironment, with
# tools/config.py SEARCH_PATH_*_DIRS and the default --module-search-path-headers=cpath):
# variable -> (search paths relative to the install dir, type). Every one is prepended.
EB_LOAD_ENV = {
    "ACLOCAL_PATH": (["share/aclocal"], "PATH_WITH_FILES"),
    "CLASSPATH": (["*.jar"], "PATH_WITH_FILES"),
    "CMAKE_LIBRARY_PATH": (["lib64"], "STRICT_PATH_WITH_FILES"),
    "CMAKE_PREFIX_PATH": ([""], "PATH_WITH_FILES"),
    "CPATH": (["include"], "PATH_WITH_FILES"),
    "GI_TYPELIB_PATH": (["lib/girepository-*", "lib64/girepository-*"], "PATH_WITH_FILES"),
    "LD_LIBRARY_PATH": (["lib", "lib64"], "PATH_WITH_FILES"),
    "LIBRARY_PATH": (["lib", "lib64"], "PATH_WITH_FILES"),
    "MANPATH": (["man", "share/man"], "PATH_WITH_FILES"),
    "PATH": (["bin", "sbin"], "PATH_WITH_FILES"),
    "PKG_CONFIG_PATH": (["lib/pkgconfig", "lib64/pkgconfig", "share/pkgconfig"], "PATH_WITH_FILES"),
    "XDG_DATA_DIRS": (["share"], "PATH_WITH_FILES"),
}


def expand_search_paths(paths, kind, installdir):
    """ModuleEnvironmentVariable.expand_paths: globs under the install dir (absolute paths as
    they are) that exist; directories only if they hold a file (anywhere below, or at the top
    for PATH_WITH_TOP_FILES; none needed for PATH); relative results stay relative ('' = root)."""
    kept = []
    real_parent = os.path.realpath(installdir)
    for pattern in paths:
        abs_glob = pattern if os.path.isabs(pattern) else os.path.join(real_parent, pattern)
        for found in glob.glob(abs_glob, recursive=True):
            real = os.path.realpath(found)
            if kind == "STRICT_PATH_WITH_FILES" and found != real:
                continue
            if os.path.isdir(found) and kind != "PATH":
                if kind == "PATH_WITH_TOP_FILES":
                    has = any(os.path.isfile(os.path.join(found, x)) for x in os.listdir(found))
                else:
                    has = any(files for _, _, files in os.walk(found))
                if not has:
                    continue
            keep = found
            if not os.path.isabs(pattern):
                keep = os.path.relpath(real, start=real_parent)
                keep = "" if keep == "." else keep
            if keep not in kept:
                kept.append(keep)
    return kept


def easybuild_module(env, installdir, report, path, filtered=()):
    """The statements EasyBuild's Lua module generator writes for this easyconfig that
    change the environment (not help/whatis/EBROOT*/EBVERSION*/EBDEVEL*), in its order:
    dependencies, search paths (make_module_req), modextravars, modluafooter."""
    tmpl = {"installdir": installdir, "name": env["name"], "version": env["version"],
            "versionsuffix": env.get("versionsuffix", "")}
    lines = [f'local root = {lua_string(installdir)}', f'conflict({lua_string(env["name"])})']
    for dep in env.get("dependencies", []):
        if dep[1] == "EXTERNAL_MODULE":
            lines.append(f"depends_on({lua_string(dep[0])})")
    load_env = {k: {"paths": list(v[0]), "var_type": v[1], "prepend": True, "delimiter": ":"}
                for k, v in EB_LOAD_ENV.items()}
    for key, opts in env.get("modextrapaths", {}).items():
        opts = dict(opts) if isinstance(opts, dict) else {"paths": opts}
        extra = opts.get("paths", [])
        extra = [extra] if isinstance(extra, str) else list(extra)
        var = load_env.setdefault(key, {"paths": [], "var_type": "PATH_WITH_FILES", "prepend": True, "delimiter": ":"})
        var["paths"] += [resolve_template(p, tmpl) for p in extra]
        for opt in ("var_type", "prepend", "delimiter"):
            if opt in opts:
                var[opt] = getattr(opts[opt], "name", opts[opt])
    for key in sorted(load_env):
        var = load_env[key]
        if key in filtered:
            continue
        kept = expand_search_paths(var["paths"], var["var_type"], installdir)
        how = "prepend_path" if var["prepend"] else "append_path"
        for p in kept:
            value = lua_string(p) if os.path.isabs(p) else (f"pathJoin(root, {lua_string(p)})" if p else "root")
            delim = "" if var["delimiter"] == ":" else f', {lua_string(var["delimiter"])}'
            lines.append(f'{how}("{key}", {value}{delim})')
    for key, value in env.get("modextravars", {}).items():
        value = resolve_template(value, tmpl)
        report("$" not in value, f"{path}: modextravars {key} has a $ (EasyBuild would turn it into os.getenv)")
        if key not in filtered:
            lines.append(f'setenv("{key}", {lua_quote_like_easybuild(value)})')
    return "\n".join(lines) + "\n" + resolve_template(env.get("modluafooter", ""), tmpl)


def check_file(path, params, args, report):
    text = open(path, encoding="utf-8").read()
    tree = ast.parse(text, path)
    assigned = [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)]
    report(all(isinstance(node, (ast.Assign, ast.Expr)) for node in tree.body),
           f"{path}: only assignments expected at top level")
    easyblock = next((node.value.value for node in tree.body if isinstance(node, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == "easyblock" for t in node.targets)
                      and isinstance(node.value, ast.Constant)), None)
    for n in assigned:
        report(n.startswith("local_") or (n in params and (params[n] is None or easyblock in params[n])),
               f"{path}: '{n}' is not an easyconfig parameter of easyblock {easyblock}")
    report(REQUIRED <= set(assigned), f"{path}: missing required parameters {sorted(REQUIRED - set(assigned))}")
    unknown_reads = names_read(tree) - set(assigned) - set(CONSTANTS)
    report(not unknown_reads, f"{path}: reads names EasyBuild does not define: {sorted(unknown_reads)}")
    env = dict(CONSTANTS)
    exec(compile(tree, path, "exec"), env)
    for dep in env.get("dependencies", []):
        report(isinstance(dep, tuple) and len(dep) >= 2 and all(isinstance(x, str) for x in dep),
               f"{path}: malformed dependency {dep!r}")
    suffix = env.get("versionsuffix", "")
    expected_file = f"{env['name']}-{env['version']}{suffix}.eb"
    report(os.path.basename(path) == expected_file, f"{path}: file name should be {expected_file}")
    parent = os.path.dirname(path)
    report(os.path.basename(parent) == env["name"]
           and os.path.basename(os.path.dirname(parent)) == env["name"][0].lower(),
           f"{path}: not in <letter>/<name>/")
    for t in re.findall(r"(?<!%)(?:%%)*%\((\w+)\)s", text):
        report(t in TEMPLATES, f"{path}: unknown template %({t})s")

    def tmpl_for(inst):
        return {"installdir": inst, "name": env["name"], "version": env["version"], "versionsuffix": suffix,
                "nameletter": env["name"][0]}

    stack_dir = os.path.join(args.modules_site, "software", env["name"], env["version"] + suffix)
    cmds = env.get("postinstallcmds", [])
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "fakebin"))
        write_fakes(os.path.join(tmp, "fakebin"))
        runs = {}
        for shell in ("bash", "/bin/sh"):
            inst, record, failures = run_postinstall(cmds, shell, tmp, tmpl_for)
            for f in failures:
                report(False, f"{path}: {f}")
            report(not failures, f"{path}: postinstallcmds under {shell}")
            runs[shell] = (inst, read_record(record, inst, os.path.join(tmp, "fakebin")))
            compare_with_sitegen(path, inst, stack_dir, report)
        inst, calls = runs["bash"]
        report(calls == runs["/bin/sh"][1], f"{path}: bash and /bin/sh ran different tool calls")
        check_sanity(path, env, inst, tmpl_for(inst), report)
        if args.records:
            with open(os.path.join(args.records, expected_file[:-3] + ".record"), "w") as f:
                f.write("".join(c + "\n" for c in calls))
    if args.eb_modules:
        out = os.path.join(args.eb_modules, env["name"], env["version"] + suffix + ".lua")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(easybuild_module(env, stack_dir, report, path, args.filter_env_vars))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("params")
    p.add_argument("easyconfigs")
    p.add_argument("modules_site")
    p.add_argument("--records")
    p.add_argument("--eb-modules")
    p.add_argument("--filter-env-vars", type=lambda v: set(filter(None, v.split(","))), default=set())
    args = p.parse_args()
    # name [easyblock...]: a parameter of every easyconfig, or of those easyblocks only.
    params = {}
    for line in open(args.params):
        if line.strip() and not line.startswith("#"):
            words = line.split()
            params[words[0]] = set(words[1:]) or None
    counts = {"passed": 0, "failed": 0}

    def report(ok, message):
        counts["passed" if ok else "failed"] += 1
        if not ok:
            print("FAIL", message)

    for tool in ("bash", "/bin/sh", "truncate"):
        report(shutil.which(tool) is not None, f"{tool} is missing")
    files = [os.path.join(d, f) for d, _, fs in os.walk(args.easyconfigs) for f in fs if f.endswith(".eb")]
    report(bool(files), f"no easyconfigs under {args.easyconfigs}")
    for path in sorted(files):
        check_file(path, params, args, report)
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    raise SystemExit(1 if counts["failed"] else 0)


main()
