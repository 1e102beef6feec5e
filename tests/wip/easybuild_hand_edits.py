#!/usr/bin/env python3
"""The changes proposed for the easyconfig renderer (and the few for sitegen's own modulefile),
applied by hand to copies of the committed outputs, so that tests/wip/easybuild_real.sh can
show that the real EasyBuild accepts them. Evidence for the renderer rewrite, not a renderer:
delete it once the renderer emits this.

usage: easybuild_hand_edits.py REPO OUT [--only CHANGE,...]
       SITEGEN_EB_EASYCONFIGS=OUT/easyconfigs-out SITEGEN_EB_MODULES=OUT/modules-out \
         tests/wip/easybuild_real.sh build/sitegen

CHANGE (default: all but startdir): style (E221, E501 by splitting literals, same values),
version (easybuild_version), whatis (URL line), usage (sitegen's help sections as usage; sitegen's
help in EasyBuild's layout), env (modextravars / modextrapaths; what EasyBuild cannot carry in
modluafooter and modtclfooter), checksum (the image's sha256: a placeholder, the site file
must give the real one), sanity (torch at the listed version from the right pythonX.Y, in the
container for container stacks; the network plugin library), nobin (no empty bin/ on PATH),
python (pip run by python3.12, not `python`), guard (the image check spares EasyBuild's test
load), startdir (start_dir for MakeCp: not needed, kept to show it only moves eb -x's warning).
"""
import ast
import os
import re
import shutil
import sys

repo, out = sys.argv[1], sys.argv[2]
only = None
if len(sys.argv) > 4 and sys.argv[3] == "--only":
    only = set(sys.argv[4].split(","))


def want(c):
    return only is None or c in only


def pyq(s):
    q = "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"
    assert ast.literal_eval(q) == s
    return q


def split_literal(value, width):
    """Pieces of value whose quoted forms are each at most width long (break after spaces)."""
    parts = []
    while len(pyq(value)) > width:
        cut = width - 2
        while len(pyq(value[:cut])) > width:
            cut -= 1
        sp = value.rfind(" ", 0, cut)
        if sp > cut // 2:
            cut = sp + 1
        parts.append(value[:cut])
        value = value[cut:]
    parts.append(value)
    return parts


def wrap_long_lines(text):
    """E501: every line over 120 characters that is one string literal (list element, dict
    value, assignment) or a heredoc command ('...' + local_x + '...') is split, same value."""
    out = []
    for line in text.split("\n"):
        if len(line) <= 120:
            out.append(line)
            continue
        m = re.fullmatch(r"( *)('(?:[^'\\]|\\.)*')(,?)", line)
        if m:
            ind, lit, comma = m.groups()
            parts = split_literal(ast.literal_eval(lit), 120 - len(ind) - 1)
            out += [ind + pyq(p) for p in parts[:-1]] + [ind + pyq(parts[-1]) + comma]
            continue
        m = re.fullmatch(r"( *)('(?:[^'\\]|\\.)*') \+ (local_\w+) \+ ('(?:[^'\\]|\\.)*')(,?)", line)
        if m:
            ind, head, var, tail, comma = m.groups()
            out.append(ind + head)
            out.append(ind + "f'{" + var + "}" + tail[1:] + comma)
            continue
        m = re.fullmatch(r"( *)((?:\w+ = )|(?:'\w+': ))('(?:[^'\\]|\\.)*')(,?)", line)
        if m:
            ind, key, lit, comma = m.groups()
            parts = split_literal(ast.literal_eval(lit), 120 - len(ind) - 4)
            out.append(ind + key + "(")
            out += [ind + "    " + pyq(p) for p in parts]
            out.append(ind + ")" + comma)
            continue
        raise SystemExit(f"cannot wrap: {line[:100]}")
    return "\n".join(out)


def lua_help_text(lua):
    m = re.search(r'^help\((".*")\)$', lua, re.M)
    return ast.literal_eval(m.group(1).replace("\\$", "$")), m


def eb_help(desc, usage, homepage, docurls):
    """EasyBuild's _generate_help_text for description, usage, homepage and docurls."""
    lines = ["", "", "Description", "===========", desc.strip()]
    if usage.strip():
        lines += ["", "", "Usage", "=====", usage.strip()]
    lines += ["", "", "More information", "================", " - Homepage: %s" % homepage]
    if docurls:
        lines += [" - Documentation:"] + ["    - %s" % u for u in docurls]
    return "\n".join(lines)


def lua_str(s):
    o = ['"']
    for ch in s.encode():
        c = chr(ch)
        if c in '\\"':
            o.append("\\" + c)
        elif c == "\n":
            o.append("\\n")
        elif 0x20 <= ch < 0x7F:
            o.append(c)
        else:
            o.append("\\%03d" % ch)
    o.append('"')
    return "".join(o)


def pylines(name, text):
    """name = '\\n'.join([...]) of text's lines (text ends with a newline)."""
    assert text.endswith("\n")
    return name + " = '\\n'.join([\n" + "".join("    %s,\n" % pyq(line) for line in text.split("\n")) + "])\n"


def replace_block(text, start_re, new):
    """Replaces the top-level statement starting at the line matching start_re (up to the
    next blank line) with new."""
    m = re.search(start_re, text, re.M)
    assert m, start_re
    end = text.index("\n\n", m.start())
    return text[:m.start()] + new.rstrip("\n") + text[end:]


def insert_before(text, anchor_re, new):
    m = re.search(anchor_re, text, re.M)
    assert m, anchor_re
    return text[:m.start()] + new + text[m.start():]


IMAGE_SHA256 = "0" * 63 + "1"  # placeholder: the site file must give the real one


def lumi_footers(image_name, image_dir, binds):
    lua = "\n".join([
        "-- The image: the installed copy, else the site's shared copy (as LUMI's create_container_vars).",
        f'local image_name = "{image_name}"',
        "local image = pathJoin(root, image_name)",
        f'if not isFile(image) then image = pathJoin("{image_dir}", image_name) end',
        "-- Only a user's load fails without the image: EasyBuild's test load (--module-only, before",
        "-- the image is installed) runs with $___EASYBUILD___ set.",
        'if mode() == "load" and not isFile(image) and os.getenv("___EASYBUILD___") ~= "EasyBuild" then',
        f'  LmodError("container image " .. image_name .. " not found in " .. root .. " nor in {image_dir}; '
        'reinstall the module or ask your support team")',
        "end",
        'setenv("SIF", image)',
        'setenv("SIFPYTORCH", image)',
        f'local binds = "{binds}," .. pathJoin(root, "runscripts") .. ":/runscripts"',
        'if isFile(pathJoin(root, "user-software.squashfs")) then',
        '  binds = binds .. "," .. pathJoin(root, "user-software.squashfs") .. ":/user-software:image-src=/"',
        'elseif isDir(pathJoin(root, "user-software")) then',
        '  binds = binds .. "," .. pathJoin(root, "user-software") .. ":/user-software"',
        "end",
        'setenv("SINGULARITY_BIND", binds)',
        "",
    ])
    tcl = "\n".join([
        "# The image: the installed copy, else the site's shared copy (as LUMI's create_container_vars).",
        f'set image_name "{image_name}"',
        "set image [file join $root $image_name]",
        f'if {{ ![file isfile $image] }} {{ set image [file join "{image_dir}" $image_name] }}',
        "# Only a user's load fails without the image: EasyBuild's test load (--module-only, before",
        "# the image is installed) runs with $___EASYBUILD___ set.",
        "if { [module-info mode load] && ![file isfile $image] &&",
        '     (![info exists ::env(___EASYBUILD___)] || $::env(___EASYBUILD___) ne "EasyBuild") } {',
        f'    error "container image $image_name not found in $root nor in {image_dir}; '
        'reinstall the module or ask your support team"',
        "}",
        "setenv SIF $image",
        "setenv SIFPYTORCH $image",
        f'set binds "{binds},$root/runscripts:/runscripts"',
        'if { [file isfile "$root/user-software.squashfs"] } {',
        '    append binds ",$root/user-software.squashfs:/user-software:image-src=/"',
        '} elseif { [file isdirectory "$root/user-software"] } {',
        '    append binds ",$root/user-software:/user-software"',
        "}",
        "setenv SINGULARITY_BIND $binds",
        "",
    ])
    return lua, tcl


def dict_block(name, items):
    return name + " = {\n" + "".join(f"    {pyq(k)}: {pyq(v)},\n" for k, v in items) + "}\n"


def torch_check(py, version, prefix=""):
    code = f"import torch; v = torch.__version__.split('+')[0]; assert v == '{version}', v"
    return f'{prefix}{py} -c "{code}"'


def edit(site, ec_path, lua_path):
    ec = open(ec_path).read()
    lua = open(lua_path).read()
    env = {"SYSTEM": {}, "EXTERNAL_MODULE": "EXTERNAL_MODULE"}
    exec(ec, env)
    help_text, help_m = lua_help_text(lua)
    homepage = env["homepage"]
    docurls = env.get("docurls", [])
    desc = env["description"]
    assert help_text.startswith(desc)
    rest = help_text[len(desc):]
    rest = rest.replace("\n\nHomepage: %s\n" % homepage, "\n", 1)
    rest = "\n".join(line for line in rest.split("\n") if not line.startswith("More: "))
    usage = rest.strip("\n") + "\n"
    ver = env["components"] if "components" in env else None

    if want("usage"):
        ec = insert_before(ec, r"^\ntoolchain = ", "\n" + pylines("usage", usage))
        new_help = eb_help(desc, usage, homepage, docurls)
        lua = lua[:help_m.start()] + "help(" + lua_str(new_help) + ")" + lua[help_m.end():]
    if want("whatis"):
        ec = ec.replace("    'Keywords:", "    'URL: %s',\n    'Keywords:" % homepage.replace("'", "\\'"), 1)
        # keep sitegen's order: Description, Keywords, URL
        ec = re.sub(r"(    'URL: [^\n]*\n)(    'Keywords:[^\n]*\n)", r"\2\1", ec)
    if want("version"):
        ec = ec.replace("easyblock = ", "easybuild_version = '5.2.1'\n\neasyblock = ", 1)
    comps = {}
    m = re.search(r"Components:\n((?:  .*\n)+)", help_text)
    for line in m.group(1).splitlines():
        k, v = line.split()
        comps[k] = v
    torch = comps.get("torch")
    mv = dict(env.get("modextravars", {}))
    paths = {}
    sanity = list(env.get("sanity_check_commands", []))
    lua_footer = tcl_footer = None

    if site == "lumi":
        image = env["local_sif"]
        foot = env["modluafooter"]
        image_dir = re.search(r'pathJoin\("([^"]+)", image_name\)', foot).group(1)
        binds = re.search(r'local binds = "([^"]+)," \.\.', foot).group(1)
        for k, v in re.findall(r'setenv\("(SINGULARITYENV_\w+)", "([^"]*)"\)', foot):
            mv[k] = v
        mv["CONTAINERROOT"] = "%(installdir)s"
        mv["RUNSCRIPTSPYTORCH"] = "%(installdir)s/runscripts"
        mv["RUNSCRIPTS"] = "%(installdir)s/runscripts"
        lua_footer, tcl_footer = lumi_footers(image, image_dir, binds)
        if not want("guard"):
            lua_footer = lua_footer.replace(' and os.getenv("___EASYBUILD___") ~= "EasyBuild"', "")
            tcl_footer = tcl_footer.replace(
                ' &&\n     (![info exists ::env(___EASYBUILD___)] || $::env(___EASYBUILD___) ne "EasyBuild") }', " }")
        if want("guard"):
            lua = lua.replace(
                'if mode() == "load" and not isFile(image) then',
                '-- Only a user\'s load fails without the image: EasyBuild\'s test load (--module-only, before\n'
                '-- the image is installed) runs with $___EASYBUILD___ set.\n'
                'if mode() == "load" and not isFile(image) and os.getenv("___EASYBUILD___") ~= "EasyBuild" then')
        if only is not None and "startdir" in only:
            ec = ec.replace("\nskipsteps = ", "\nstart_dir = '%(builddir)s'\nskipsteps = ", 1)
        if want("checksum"):
            ec = ec.replace("\n]\nskipsteps = ", "\n]\nchecksums = ['%s']\n\nskipsteps = " % IMAGE_SHA256, 1)
        sanity += [torch_check("python3.12", torch, 'singularity exec "$SIF" '),
                   'singularity exec "$SIF" test -f /opt/aws-ofi-rccl/librccl-net.so']
    elif site == "frontier":
        mv["CONDA_PREFIX"] = "%(installdir)s/conda-env"
        mv["CONDA_DEFAULT_ENV"] = "%(installdir)s/conda-env"
        mv["RUNSCRIPTS"] = "%(installdir)s/runscripts"
        paths["PATH"] = "conda-env/bin"
        sanity.append(torch_check("python3.10", torch))
        if want("nobin"):
            ec = ec.replace('mkdir -p "%(installdir)s/bin" "%(installdir)s/runscripts"',
                            'mkdir -p "%(installdir)s/runscripts"')
            lua = lua.replace('prepend_path("PATH", pathJoin(root, "bin"))\n', "")
    elif site == "cirrus":
        mv["PYTHONUSERBASE"] = "%(installdir)s/python/3.12.1"
        mv["RUNSCRIPTS"] = "%(installdir)s/runscripts"
        paths["PATH"] = "python/3.12.1/bin"
        paths["PYTHONPATH"] = "python/3.12.1/lib/python3.12/site-packages"
        if want("python"):
            ec = ec.replace('/python/3.12.1" python -m pip install', '/python/3.12.1" python3.12 -m pip install')
        sanity.append(torch_check("python3.12", torch))
        # EasyBuild prepends <root>/bin (its default) before modextrapaths: sitegen's order.
        lua = lua.replace('prepend_path("PATH", pathJoin(root, "bin"))\n', "")
        lua = lua.replace('local userbase = ', 'prepend_path("PATH", pathJoin(root, "bin"))\nlocal userbase = ')
    elif site == "aurora":
        conda = re.search(r'local conda_env = "([^"]+)"', env["modluafooter"]).group(1)
        mv["CONDA_PREFIX"] = conda
        mv["CONDA_DEFAULT_ENV"] = conda
        mv["RUNSCRIPTS"] = "%(installdir)s/runscripts"
        paths["PATH"] = conda + "/bin"
        sanity.append(torch_check("python3.10", torch))
        lua = lua.replace('prepend_path("PATH", pathJoin(root, "bin"))\n', "")
        lua = lua.replace('-- What activating', 'prepend_path("PATH", pathJoin(root, "bin"))\n-- What activating')
    elif site == "local":
        mv["RUNSCRIPTS"] = "%(installdir)s/runscripts"
        # layout "system": the interpreter the scripts exec, by path (a python3.11 first on PATH
        # may be another one, e.g. EasyBuild's own venv); a real interpreter, so its X.Y is checked.
        sanity.append('/usr/bin/python3 -c "import sys, torch; assert sys.version_info[:2] == (3, 11), sys.version; '
                      "v = torch.__version__.split('+')[0]; assert v == '%s', v\"" % torch)

    if want("env"):
        new = dict_block("modextravars", sorted(mv.items()))
        if paths:
            new += "\nmodextrapaths = {\n" + "".join(f"    {pyq(k)}: {pyq(v)},\n" for k, v in paths.items()) + "}\n"
        if lua_footer:
            new += "\n# What EasyBuild cannot carry in modextravars/modextrapaths, once per module syntax;\n"
            new += "# EasyBuild's module defines `root` (the install dir) before it.\n"
            new += pylines("modluafooter", lua_footer) + "\n" + pylines("modtclfooter", lua_footer and tcl_footer)
        if "modextravars" in env:
            ec = replace_block(ec, r"^modextravars = ", "")
        ec = replace_block(ec, r"^# sitegen's modulefile body", new)
        ec = re.sub(r"\n\n\n+", "\n\n", ec)
    if want("sanity"):
        ec = replace_block(ec, r"^sanity_check_commands = ",
                           "sanity_check_commands = [\n" + "".join(f"    {pyq(c)},\n" for c in sanity) + "]\n")
    if want("style"):
        ec = re.sub(r"^(name|version|versionsuffix|local_sif) +=", r"\1 =", ec, flags=re.M)
        ec = wrap_long_lines(ec)
    open(ec_path, "w").write(ec)
    open(lua_path, "w").write(lua)


for tree in ("easyconfigs-out", "modules-out"):
    shutil.rmtree(os.path.join(out, tree), ignore_errors=True)
    shutil.copytree(os.path.join(repo, tree), os.path.join(out, tree), symlinks=True)
for site in sorted(os.listdir(os.path.join(out, "easyconfigs-out"))):
    for d, _, fs in os.walk(os.path.join(out, "easyconfigs-out", site)):
        for f in fs:
            if f.endswith(".eb"):
                ec_path = os.path.join(d, f)
                env = {"SYSTEM": {}, "EXTERNAL_MODULE": "EXTERNAL_MODULE"}
                exec(open(ec_path).read(), env)
                lua_path = os.path.join(out, "modules-out", site, "modulefiles", env["name"],
                                        env["version"] + env.get("versionsuffix", "") + ".lua")
                edit(site, ec_path, lua_path)
