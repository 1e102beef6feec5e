#!/usr/bin/env python3
"""Checks sitegen's easyconfigs the way EasyBuild reads them (EasyBuild itself cannot be
installed here): Python syntax, only known parameters or local_ names, required ones
present, file name = name-version[versionsuffix].eb, only known %(templates)s, and the
scripts that postinstallcmds write equal sitegen's own outputs byte for byte.

usage: check_easyconfig.py PARAMS_FILE EASYCONFIGS_DIR MODULES_OUT_SITE_DIR
Prints one line per problem and "N passed, N failed"; exits 1 on any failure.
"""
import ast
import os
import re
import stat
import subprocess
import sys
import tempfile

REQUIRED = {"name", "version", "homepage", "description", "toolchain", "easyblock"}
TEMPLATES = {"installdir", "name", "version", "versionsuffix", "versionprefix", "nameletter",
             "builddir", "start_dir", "toolchain_name", "toolchain_version", "module_name"}


def resolve_template(value, tmpl):
    """EasyBuild's templating of one string (easybuild-framework resolve_template): every %
    not starting a %(name)s template is doubled, then the string is %-formatted."""
    value = re.sub(r"(%)(?!%*\(\w+\)s)", r"\1\1", value)
    return value % tmpl


def check_file(path, params, modules_site, report):
    text = open(path, encoding="utf-8").read()
    tree = ast.parse(text, path)
    names = [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets]
    for n in names:
        report(n in params or n.startswith("local_"), f"{path}: unknown easyconfig parameter '{n}'")
    report(REQUIRED <= set(names), f"{path}: missing required parameters {sorted(REQUIRED - set(names))}")
    env = {"SYSTEM": {"name": "system", "version": "system"}}
    exec(compile(tree, path, "exec"), env)
    expected_file = f"{env['name']}-{env['version']}{env.get('versionsuffix', '')}.eb"
    report(os.path.basename(path) == expected_file, f"{path}: file name should be {expected_file}")
    report(os.path.basename(os.path.dirname(path)) == env["name"]
           and os.path.basename(os.path.dirname(os.path.dirname(path))) == env["name"][0].lower(),
           f"{path}: not in <letter>/<name>/")
    for t in re.findall(r"(?<!%)%\((\w+)\)s", text):
        report(t in TEMPLATES, f"{path}: unknown template %({t})s")

    # Run postinstallcmds as EasyBuild would (bash, templates resolved) in a scratch
    # install dir, with recorders for the tools that need the real site (container,
    # modules, pip, conda); then compare what they wrote with sitegen's own files.
    with tempfile.TemporaryDirectory() as tmp:
        inst = os.path.join(tmp, "install dir")
        fake = os.path.join(tmp, "fakebin")
        os.makedirs(inst)
        os.makedirs(fake)
        recorder = '#!/bin/sh\nprintf "%s\\n" "$0 $*" >> "$SITEGEN_RECORD"\n'
        # `conda create --prefix P` leaves a recording python in P/bin, as a real env would.
        fake_conda = recorder + ('while [ $# -gt 0 ]; do if [ "$1" = --prefix ]; then '
                                 'mkdir -p "$2/bin" && cp "$0.python" "$2/bin/python"; fi; shift; done\n')
        for tool, body in (("singularity", recorder), ("apptainer", recorder), ("module", recorder),
                           ("conda", fake_conda), ("conda.python", recorder), ("python", recorder)):
            p = os.path.join(fake, tool)
            with open(p, "w") as f:
                f.write(body)
            os.chmod(p, 0o755)
        tmpl = {"installdir": inst, "name": env["name"], "version": env["version"],
                "versionsuffix": env.get("versionsuffix", ""), "nameletter": env["name"][0]}
        record = os.path.join(tmp, "record")
        for cmd in env.get("postinstallcmds", []):
            r = subprocess.run(["bash", "-c", resolve_template(cmd, tmpl)], cwd=tmp,
                               env={"PATH": fake + ":/usr/bin:/bin", "SITEGEN_RECORD": record},
                               capture_output=True, text=True)
            report(r.returncode == 0, f"{path}: postinstallcmd failed: {cmd[:80]!r}: {r.stderr.strip()}")
        stack_dir = os.path.join(modules_site, "software", env["name"], env["version"] + env.get("versionsuffix", ""))
        written = sorted(os.path.relpath(os.path.join(d, f), inst) for d, _, fs in os.walk(inst) for f in fs
                         if not os.path.relpath(d, inst).startswith("conda-env"))
        expected = sorted(os.path.relpath(os.path.join(d, f), stack_dir) for d, _, fs in os.walk(stack_dir) for f in fs)
        report(written == expected, f"{path}: postinstallcmds wrote {written}, sitegen emits {expected}")
        for rel in expected:
            a, b = os.path.join(inst, rel), os.path.join(stack_dir, rel)
            if not os.path.exists(a):
                continue
            same = open(a, "rb").read() == open(b, "rb").read()
            report(same, f"{path}: {rel} differs from sitegen's own file")
            exec_a = bool(os.stat(a).st_mode & stat.S_IXUSR)
            exec_b = bool(os.stat(b).st_mode & stat.S_IXUSR)
            report(exec_a == exec_b, f"{path}: {rel} executable bit differs")
        # modluafooter resolves to Lua that the module body expects (root = installdir).
        footer = resolve_template(env.get("modluafooter", ""), tmpl)
        report(footer.startswith(f'local root = "{inst}"\n'), f"{path}: modluafooter does not define root first")


def main():
    params = {l.strip() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")}
    counts = {"passed": 0, "failed": 0}

    def report(ok, message):
        counts["passed" if ok else "failed"] += 1
        if not ok:
            print("FAIL", message)

    files = [os.path.join(d, f) for d, _, fs in os.walk(sys.argv[2]) for f in fs if f.endswith(".eb")]
    report(bool(files), f"no easyconfigs under {sys.argv[2]}")
    for path in sorted(files):
        check_file(path, params, sys.argv[3], report)
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


main()
