"""Hostile cases: a cell that plants code for later cells to run, by class.

Cells of one run share /work (and /tmp): that is how a run keeps files between cells.
The round this answers used it to run code inside a later cell's `python3`: a
/work/json.py shadowing the standard library, a user-site .pth file under HOME (then
/work). Here a cell plants, in every directory it can write, a module for every
standard-library name, sitecustomize and usercustomize, and .pth files in every user
site it can name; the follow-up then starts Python every way a cell does (`python3 -c`,
`-m`, a script in a planted directory, an import in the cell itself) and none of the
planted code may run.
"""

from __future__ import annotations

from hostile_base import C, all_of, blocked, exits, never_prints

from conductor_kernel.interfaces import ExecResult

PLANT = r"""
import os, sys, site
names = sorted(n for n in sys.stdlib_module_names if not n.startswith("_"))
names += ["sitecustomize", "usercustomize"]
folders = ["/work", "/work/sub", "/tmp", "/dev/shm", os.path.expanduser("~")]
user_site = site.getusersitepackages()
for base in (os.path.expanduser("~"), "/work", "/tmp"):
    folders.append(user_site.replace(os.path.expanduser("~"), base, 1))
planted = 0
for folder in folders:
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        continue
    for name in names:
        try:
            with open(os.path.join(folder, name + ".py"), "w") as f:
                f.write(f"print('PLANTED', {name!r}, __file__, flush=True)\n")
            planted += 1
        except OSError:
            pass
    try:
        with open(os.path.join(folder, "zz-planted.pth"), "w") as f:
            f.write("import sys; print('PLANTED pth', flush=True)\n")
    except OSError:
        pass
with open("/work/sub/prog.py", "w") as f:
    f.write("import json, random, string, collections\nprint('prog ran')\n")
print("planted", planted, flush=True)
"""

LATER = r"""
import subprocess, sys
names = sorted(n for n in sys.stdlib_module_names if not n.startswith("_"))
probe = "import importlib\nfor n in %r:\n    try: importlib.import_module(n)\n    except BaseException: pass\nprint('imports done')" % (names,)
runs = [
    ["python3", "-c", probe],
    ["python3", "-m", "json.tool", "/work/sub/data.json"],
    ["python3", "/work/sub/prog.py"],
    ["python3", "-c", "import site, sys; print('usersite', site.ENABLE_USER_SITE, sys.flags.safe_path)"],
]
open("/work/sub/data.json", "w").write('{"a": 1}')
for argv in runs:
    done = subprocess.run(argv, cwd="/work", capture_output=True, text=True, timeout=60)
    print(done.stdout, done.stderr[-300:], flush=True)
import csv, wave, tabnanny  # not preloaded by the runner: found on the cell's own path
print("cell imports done", flush=True)
"""


def _nothing_planted_ran(r: ExecResult, fill: dict[str, str]) -> None:
    assert r.exit_code == 0, (r.exit_code, r.signal, r.stderr[-300:])
    for needle in ("imports done", "prog ran", "cell imports done"):
        assert needle in r.stdout, f"{needle!r} missing: {r.stdout[-400:]!r}"
    never_prints("PLANTED")(r, fill)


LATER_CELLS = [
    C(
        "planted_modules_for_later_pythons",
        "plants a module for every standard-library name, sitecustomize, usercustomize and "
        ".pth files in /work, /tmp, /dev/shm, HOME and every user site it can name; the "
        "next cell starts python3 with -c, -m and a script, and imports in itself",
        PLANT,
        all_of(exits(0), lambda r, _: _planted_something(r)),
        timeout=20,
        follow_up=LATER,
        follow_expect=_nothing_planted_ran,
    ),
    C(
        "home_is_no_shared_place",
        "writes dot files and a user site under HOME (a later cell's programs read HOME)",
        """
import os
home = os.path.expanduser("~")
print("HOME", home, flush=True)
for rel in (".bashrc", ".profile", ".pythonrc.py", ".config/pip/pip.conf", ".local/x.pth"):
    path = os.path.join(home, rel)
    def write(path=path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        put(path, "planted")
    attempt(rel, write)
""",
        all_of(blocked(5), lambda r, _: _home_outside_work(r)),
    ),
]


def _planted_something(r: ExecResult) -> None:
    counts = [int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("planted")]
    assert counts and counts[0] > 100, f"the plant itself failed: {r.stdout[-300:]!r}"


def _home_outside_work(r: ExecResult) -> None:
    home = next(line.split()[1] for line in r.stdout.splitlines() if line.startswith("HOME"))
    assert not home.startswith(("/work", "/tmp", "/dev/shm")), f"HOME is {home}"
