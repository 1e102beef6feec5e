#!/usr/bin/env python3
"""Stand-in for `pythonX.Y -m pip install` (no package index is reachable here), run by a
mkpython interpreter, for tests/suites/easybuild_real.sh.

  standin_pip.py --interpreter EXE --prefix P --python X.Y install [OPTIONS] NAME==VERSION...

Installs, for each pinned requirement, a stand-in distribution where pip would put it:
--user -> $PYTHONUSERBASE/lib/pythonX.Y/site-packages (scripts in $PYTHONUSERBASE/bin),
otherwise P/lib/pythonX.Y/site-packages (scripts in P/bin). A stand-in distribution is an
importable package NAME (lower case, - and . as _) whose __version__ is VERSION, and a
NAME-VERSION.dist-info with METADATA, INSTALLER and RECORD, so that both
`import torch; torch.__version__` and importlib.metadata.version("torch") answer VERSION;
torch, horovod and tensorboard get their console scripts (torchrun, horovodrun,
tensorboard). Accepted and recorded, without effect: --no-cache-dir, --index-url,
--extra-index-url, --upgrade, --no-deps. --no-binary=NAME: a source build, which (as for
mpi4py) needs a compiler: $MPICC's first word, else mpicc, must be on PATH.

A source URL (`git+https://HOST/OWNER/NAME.git@REF`, as Cirrus' Horovod fork) is a source
build of NAME at version 0+REF, which needs `cmake` on PATH (Horovod's build runs cmake). A
stand-in horovod records the build settings Horovod's setup reads from the environment
(HOROVOD_WITH_PYTORCH/TENSORFLOW/MXNET, HOROVOD_WITH_MPI, HOROVOD_GPU_OPERATIONS,
https://horovod.readthedocs.io/en/stable/install_include.html), and its stand-in
`horovodrun --check-build` prints them in Horovod's layout.

Refuses what it cannot stand in for: unpinned requirements, other subcommands, other options.
Each call is appended to $SITEGEN_STANDIN_LOG (if set): "pip", the arguments, then
PYTHONUSERBASE=... and MPICC=... ; and to $SITEGEN_STANDIN_PIP_RECORD (if set) as a block:
"== pip", one "argv: WORD" line per argument, "env: NAME=VALUE" for each variable named in
$STANDIN_ENV_NAMES (blank-separated) that is set, and "cmake: PATH" (or "cmake: none"). With
SITEGEN_STANDIN_PIP_BROKEN=1 it reports success and installs nothing (the broken pip of a
real incident), so sanity checks can be tested.
"""
import os
import re
import shlex
import shutil
import sys

SCRIPTS = {"torch": ["torchrun"], "horovod": ["horovodrun"], "tensorboard": ["tensorboard"]}


def horovod_build():
    """What Horovod's build enables, from the variables its setup reads."""
    env = os.environ.get
    gpu_ops = env("HOROVOD_GPU_OPERATIONS", "") or env("HOROVOD_GPU_ALLREDUCE", "")
    with_mpi = env("HOROVOD_WITH_MPI") == "1"
    return {
        "frameworks": {"TensorFlow": env("HOROVOD_WITH_TENSORFLOW") == "1",
                       "PyTorch": env("HOROVOD_WITH_PYTORCH") == "1", "MXNet": env("HOROVOD_WITH_MXNET") == "1"},
        "controllers": {"MPI": with_mpi, "Gloo": env("HOROVOD_WITHOUT_GLOO") != "1"},
        "operations": {"NCCL": gpu_ops == "NCCL", "DDL": gpu_ops == "DDL", "CCL": env("HOROVOD_CPU_OPERATIONS") == "CCL",
                       "MPI": with_mpi, "Gloo": env("HOROVOD_WITHOUT_GLOO") != "1"},
    }


# Stand-in horovodrun: --check-build in Horovod's layout, from the stand-in package's BUILD.
HOROVODRUN = """import sys
import horovod
if sys.argv[1:] != ['--check-build']:
    sys.exit('horovodrun (stand-in) supports only --check-build, got %r' % sys.argv[1:])
b = horovod.BUILD
print('Horovod v%s:' % horovod.__version__)
for title, key in (('Available Frameworks', 'frameworks'), ('Available Controllers', 'controllers'),
                   ('Available Tensor Operations', 'operations')):
    print()
    print(title + ':')
    for name, on in b[key].items():
        print('    [%s] %s' % ('X' if on else ' ', name))
"""


def fail(msg):
    print(f"ERROR: {msg}", file=sys.stderr)
    sys.exit(1)


def main(argv):
    interp = prefix = xy = None
    while argv and argv[0].startswith("--") and argv[0] in ("--interpreter", "--prefix", "--python"):
        key, value, argv = argv[0], argv[1], argv[2:]
        if key == "--interpreter":
            interp = value
        elif key == "--prefix":
            prefix = value
        else:
            xy = value
    log = os.environ.get("SITEGEN_STANDIN_LOG")
    if log:
        with open(log, "a") as f:
            words = ["pip"] + argv + ["PYTHONUSERBASE=" + os.environ.get("PYTHONUSERBASE", ""),
                                      "MPICC=" + os.environ.get("MPICC", "")]
            f.write(" ".join(shlex.quote(w) for w in words) + "\n")
    record = os.environ.get("SITEGEN_STANDIN_PIP_RECORD")
    if record:
        with open(record, "a") as f:
            f.write("== pip\n" + "".join(f"argv: {a}\n" for a in argv))
            for name in os.environ.get("STANDIN_ENV_NAMES", "").split():
                if name in os.environ:
                    f.write(f"env: {name}={os.environ[name]}\n")
            f.write(f"cmake: {shutil.which('cmake') or 'none'}\n")
    if not argv or argv[0] != "install":
        fail(f"stand-in pip supports only 'install' (got {argv[:1]})")
    user = False
    no_binary = set()
    reqs = []
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--user":
            user = True
        elif a in ("--no-cache-dir", "--upgrade", "-U", "--no-deps"):
            pass
        elif a in ("--index-url", "-i", "--extra-index-url"):
            args.pop(0)
        elif a.startswith(("--index-url=", "--extra-index-url=")):
            pass
        elif a == "--no-binary":
            no_binary.update(args.pop(0).split(","))
        elif a.startswith("--no-binary="):
            no_binary.update(a.split("=", 1)[1].split(","))
        elif a.startswith("-"):
            fail(f"stand-in pip: unsupported option {a}")
        else:
            src = re.fullmatch(r"git\+https://[^/\s]+/[^/\s]+/([A-Za-z0-9._-]+?)(\.git)?@([A-Za-z0-9._-]+)", a)
            if src:
                if not shutil.which("cmake"):
                    fail(f"building {a} from source: cmake not found on PATH")
                reqs.append((src.group(1), "0+" + re.sub(r"[^A-Za-z0-9.]", ".", src.group(3))))
                continue
            m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)", a)
            if not m:
                fail(f"stand-in pip installs only pinned requirements NAME==VERSION, not {a!r}")
            reqs.append((m.group(1), m.group(2)))
    if not reqs:
        fail("You must give at least one requirement to install")
    if user:
        base = os.environ.get("PYTHONUSERBASE") or os.path.expanduser("~/.local")
    else:
        base = prefix
    site = os.path.join(base, "lib", f"python{xy}", "site-packages")
    bindir = os.path.join(base, "bin")
    for name, version in reqs:
        if name in no_binary or ":all:" in no_binary:
            cc = shlex.split(os.environ.get("MPICC", "")) or ["mpicc"]
            if not shutil.which(cc[0]):
                fail(f"building {name} from source: compiler {cc[0]!r} not found (set MPICC or put mpicc on PATH)")
    if os.environ.get("SITEGEN_STANDIN_PIP_BROKEN") == "1":
        print("Successfully installed " + " ".join(f"{n}-{v}" for n, v in reqs))
        return
    os.makedirs(site, exist_ok=True)
    for name, version in reqs:
        module = re.sub(r"[-.]", "_", name.lower())
        pkg = os.path.join(site, module)
        os.makedirs(pkg, exist_ok=True)
        with open(os.path.join(pkg, "__init__.py"), "w") as f:
            f.write(f'"""Stand-in for {name} {version} (tests/tools/eb-standins)."""\n__version__ = "{version}"\n')
            if module == "horovod":
                f.write(f"BUILD = {horovod_build()!r}\n")
        dist = os.path.join(site, f"{module}-{version}.dist-info")
        os.makedirs(dist, exist_ok=True)
        with open(os.path.join(dist, "METADATA"), "w") as f:
            f.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        with open(os.path.join(dist, "INSTALLER"), "w") as f:
            f.write("sitegen-standin-pip\n")
        records = [f"{module}/__init__.py,,", f"{module}-{version}.dist-info/METADATA,,"]
        for script in SCRIPTS.get(module, []):
            os.makedirs(bindir, exist_ok=True)
            path = os.path.join(bindir, script)
            with open(path, "w") as f:
                if script == "horovodrun":
                    f.write(f"#!{interp}\n{HOROVODRUN}")
                else:
                    f.write(f"#!{interp}\nimport sys\nimport {module}\nprint('{script} (stand-in) of {name}',"
                            f" {module}.__version__, sys.argv[1:])\n")
            os.chmod(path, 0o755)
            records.append(os.path.relpath(path, site) + ",,")
        with open(os.path.join(dist, "RECORD"), "w") as f:
            f.write("\n".join(records) + "\n")
    print("Successfully installed " + " ".join(f"{n}-{v}" for n, v in reqs))


main(sys.argv[1:])
