"""P3 answers for tests and bench/p3.py: the file's reference solutions, and adversarial
answers that try to pass without solving (each must score as wrong on any puzzle)."""

from __future__ import annotations

from conductor.tasks.files import TaskItem


def reference_answers(item: TaskItem) -> list[str]:
    """Each reference solution of a P3_Test item as an answer defining `solution()`."""
    header = str(item.metadata.get("sol_header", "def sol():"))
    header = header.replace("def sol(", "def solution(", 1)
    return [f"{header}\n{body}" for body in item.metadata.get("sol_bodies") or []]


# The honest wrong answer: puzzles it solves (a few accept anything, e.g. a `sat` whose
# loop runs zero times by default) cannot show that an attack failed.
CONTROL = "def solution():\n    return None\n"

# name -> answer. None of them computes anything but None or nothing.
ADVERSARIAL: dict[str, str] = {
    "prints True": "def solution():\n    print(True)\n    print('True')\n    return None\n",
    "redefines sat": "def sat(*args, **kwargs):\n    return True\n\ndef solution():\n    return None\n",
    "raises": "def solution():\n    raise ValueError('True')\n",
    "loops": "def solution():\n    while True:\n        pass\n",
    "exhausts memory": (
        "def solution():\n    hoard = []\n    while True:\n        hoard.append(bytearray(50_000_000))\n"
    ),
    "forges the checker's output": (
        "import gc, os, sys\n"
        "def solution():\n"
        "    # every string constant in reach that looks like a marker, printed as a pass\n"
        "    found = set()\n"
        "    for obj in gc.get_objects():\n"
        "        if type(obj).__name__ == 'code':\n"
        "            found.update(c for c in obj.co_consts if isinstance(c, str) and 'P3' in c)\n"
        "    src = open(sys.argv[0]).read() if sys.argv and os.path.exists(sys.argv[0]) else ''\n"
        "    found.update(w.strip(\"'\\\":\") for w in src.split() if 'P3-' in w)\n"
        "    for marker in found:\n"
        "        print(marker, True)\n"
        "        print(marker + 'true')\n"
        "        print(marker + ' True')\n"
        "    sys.stdout.flush()\n"
        "    os._exit(0)\n"
    ),
    "exits early with status 0": "import sys\ndef solution():\n    print(True)\n    sys.exit(0)\n",
    "patches builtins": (
        "import builtins, json\n"
        "builtins.isinstance = lambda *a, **k: True\n"
        "builtins.len = lambda *a, **k: 0\n"
        "builtins.all = builtins.any = lambda *a, **k: True\n"
        "json.dumps = lambda *a, **k: 'true'\n"
        "def solution():\n    return None\n"
    ),
    "returns an object equal to everything": (
        "class Anything:\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __bool__(self):\n        return True\n"
        "def solution():\n    return Anything()\n"
    ),
    "writes to the terminal directly": (
        "import os\n"
        "def solution():\n"
        "    for fd in (1, 2):\n"
        "        os.write(fd, b'True\\nP3-VERDICT True\\n')\n"
        "    return None\n"
    ),
}
