"""Which version each experiment had at a commit, as ``versions.json`` beside a run's manifest.

    python benchmarks/versions_at.py COMMIT RUN_DIR [RUN_DIR ...]

Manifests written before entries recorded ``experiment_version`` (the committed
``tests/data/h200-fleet`` runs, whose folder names carry the commit they ran) say which
measurement made a finding only through their params hash; ``gpumem.authoring.learn`` then
reads the versions from this file. Reads the experiments' sources at COMMIT with ``git show``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

NAME = re.compile(r'^    name = "([a-z0-9_]+)"', re.M)
VERSION = re.compile(r'^    version = "([^"]+)"', re.M)


def versions_at(commit: str) -> dict[str, str]:
    files = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit,
                            "core/src/gpumem/experiments"], capture_output=True, text=True,
                           check=True).stdout.split()
    out: dict[str, str] = {}
    for f in files:
        if not f.endswith(".py"):
            continue
        src = subprocess.run(["git", "show", f"{commit}:{f}"], capture_output=True, text=True,
                             check=True).stdout
        # each class attribute ``name``, then the first ``version`` after it (its class's)
        for m in NAME.finditer(src):
            v = VERSION.search(src, m.end())
            if v:
                out.setdefault(m.group(1), v.group(1))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    versions = versions_at(argv[0])
    for run in argv[1:]:
        (Path(run) / "versions.json").write_text(
            json.dumps({"commit": argv[0], **versions}, indent=1, sort_keys=True) + "\n")
    print(json.dumps(versions, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
