#!/usr/bin/env python3
"""Facts about one stack of a site file that tests/wip/easybuild_real.sh needs to build
stand-ins for what the stack's install uses (this machine lacks the site's software):

  eb_site_facts.py SITE_TOML NAME VERSION VERSIONSUFFIX

prints shell assignments (each value %q-safe, via shlex.quote): layout, python_version,
python_xy, conda_root, conda_env, venv, interpreter, runtime, network_plugin, image, view
(the stack's image and the uenv view), and
components (a bash array of NAME==VERSION). `extends` files are merged first (tables
deep-merged, the site's own values win), as sitegen does.
"""
import os
import shlex
import sys
import tomllib


def merge(base, over):
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load(path):
    with open(path, "rb") as f:
        data = tomllib.load(f)
    merged = {}
    for rel in data.pop("extends", []):
        merged = merge(merged, load(os.path.join(os.path.dirname(path), rel)))
    return merge(merged, data)


site = load(sys.argv[1])
name, version, suffix = sys.argv[2:5]
stack = next(s for s in site.get("stacks", []) if s["name"] == name and s["version"] == version
             and s.get("versionsuffix", "") == suffix)
py = site.get("python", {})
pyv = str(py.get("version", ""))
facts = {
    "layout": py.get("layout", ""),
    "python_version": pyv,
    "python_xy": ".".join(pyv.split(".")[:2]),
    "conda_root": py.get("conda_root", ""),
    "conda_env": py.get("conda_env", ""),
    "venv": py.get("venv", ""),
    "interpreter": py.get("interpreter", ""),
    "runtime": site.get("container", {}).get("runtime", ""),
    "network_plugin": site.get("collectives", {}).get("network_plugin", ""),
    "image": stack.get("image", ""),
    "view": site.get("container", {}).get("view", ""),
}
for k, v in facts.items():
    print(f"{k}={shlex.quote(v)}")
comps = stack.get("components", {})
print("components=(" + " ".join(shlex.quote(f"{k}=={v}") for k, v in comps.items()) + ")")
