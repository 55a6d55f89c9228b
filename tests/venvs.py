"""Venvs for the tests that try a GPU machine's interpreter or a user's install end to end,
with torch already there, as a GPU image and the README's first step have it, without pip
writing it again.

pip installing torch into a fresh venv writes a gigabyte and stalls the tests beside it.
``linked_venv`` makes a venv whose site-packages holds one
.pth file naming a folder of links to distributions this interpreter has installed (torch at
the version the tests run, and everything each requires): they import, and pip and
importlib.metadata see them installed, from where site-packages stands on the path, and
nothing else of this interpreter is there (asv, xferbench, pytest-benchmark stay out unless
named or required).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path


def requirement_closure(names: list[str]) -> dict[str, importlib.metadata.Distribution]:
    """{name: installed distribution} for ``names`` and everything they require here (the
    requirements of no extra whose markers hold on this interpreter)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, importlib.metadata.Distribution] = {}
    todo = list(names)
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        key = canonicalize_name(dist.metadata["Name"])
        if key in found:
            continue
        found[key] = dist
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


def linked_venv(where: Path, names: list[str]) -> Path:
    """A venv at ``where`` (no pip of its own: name "pip" for it) holding ``names`` and their
    requirements, linked from this interpreter's installs (``where``'s sibling folder
    ``<where>-packages`` holds the links); its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    into = where.with_name(where.name + "-packages")
    into.mkdir()
    for key, dist in sorted(requirement_closure(names).items()):
        if not dist.files:
            raise RuntimeError(f"{key} has no RECORD here: it cannot be linked")
        base = Path(dist.locate_file(""))
        for top in sorted({f.parts[0] for f in dist.files}):
            # scripts (..), byte code and .pth files (read only in a site folder) stay out
            if top not in ("..", "__pycache__") and not top.endswith(".pth") \
                    and not (into / top).exists():
                (into / top).symlink_to(base / top)
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "linked-packages.pth").write_text(f"{into}\n")
    return where / "bin"
