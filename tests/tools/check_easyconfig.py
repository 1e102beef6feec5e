#!/usr/bin/env python3
"""Checks sitegen's easyconfigs the way EasyBuild reads and runs them (EasyBuild itself
cannot be installed here).

usage: check_easyconfig.py PARAMS_FILE EASYCONFIGS_DIR MODULES_OUT_SITE_DIR [--records DIR]

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
The module EasyBuild generates from the easyconfig (modextrapaths, modextravars, the Lua and
Tcl footers, help and whatis) is checked by the real EasyBuild in tests/suites/easybuild_real.sh
after real installs; this checker keeps what the real eb cannot show here: postinstallcmds under
/bin/sh as well as bash, the exact tool calls (recorded), and the sites the real suite does
not install (the combination suite's, the hostile golden site).

Prints one line per problem and "N passed, N failed"; exits 1 on any failure.
"""
import argparse
import ast
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
    # pip run as pythonX.Y; `pythonX.Y -m venv ... DIR` leaves a recording python in DIR/bin, as a real venv would.
    venv = ('if [ "$1" = -m ] && [ "$2" = venv ]; then for a in "$@"; do d=$a; done; '
            'mkdir -p "$d/bin" && cp "$(dirname "$0")/conda.python" "$d/bin/python"; fi\n')
    pythons = [(f"python3.{minor}", recorder + venv) for minor in range(6, 15)]
    for tool, body in [("singularity", recorder), ("apptainer", recorder), ("ch-run", recorder), ("podman-hpc", recorder),
                       ("enroot", recorder), ("uenv", recorder), ("python", recorder),
                       ("conda", conda), ("conda.python", recorder)] + pythons:
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
    # What the layout's install makes besides sitegen's files: the image's venv, a host venv,
    # the conda environment file it was created from.
    written = [w for w in written if not w.startswith(("user-software", "venv/", "conda-environment.yml"))]
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
        # run by tests/suites/easybuild_real.sh with stand-ins.
        if "import torch" in cmd:
            report(re.fullmatch(r'(?:(?:singularity|apptainer) exec "\$SIF" |ch-run "\$SIF" -- '
                                r'|podman-hpc run --rm --network host --ipc host "\$SIF" |enroot start "\$SIF" '
                                r'|uenv run --view=[\w.:,-]+ "\$SIF" -- )?'
                                r'(?:python\d+\.\d+|/\S+|"%\(installdir\)s/venv/bin/python") -c "import torch; v = torch\.__version__\.split\(\'\+\'\)\[0\]; '
                                r"assert v == '[^'+]+', v\"", cmd) is not None,
                   f"{path}: unexpected payload check {cmd!r}")
            continue
        # The venv check (the container's `python` is the venv's, as LUMI's demo checks with
        # `which python`) needs the image too: its form here, run by seed_workflow_lumi.sh.
        if "command -v python" in cmd:
            report(re.fullmatch(r'(?:singularity|apptainer) exec "\$SIF" bash -c '
                                r"'test \"\$\(command -v python\)\" = /\S+/bin/python'", cmd) is not None,
                   f"{path}: unexpected venv check {cmd!r}")
            continue
        # An install step's check (Cirrus' horovodrun --check-build) runs what pip installed:
        # checked for its form here, run by tests/suites/install_settings.sh and easybuild_real.sh.
        if cmd.startswith("out=$("):
            report(re.fullmatch(r"out=\$\(.+ 2>&1\) && printf '%s\\n' \"\$out\""
                                r"( && grep -qF -- ('[^']*'|[^' ]+) <<<\"\$out\")*", cmd) is not None,
                   f"{path}: unexpected install step check {cmd!r}")
            continue
        r = subprocess.run(["bash", "-c", resolve_template(cmd, tmpl)], capture_output=True, text=True)
        report(r.returncode == 0, f"{path}: sanity_check_command failed: {cmd!r}: {r.stderr.strip()}")


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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("params")
    p.add_argument("easyconfigs")
    p.add_argument("modules_site")
    p.add_argument("--records")
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
