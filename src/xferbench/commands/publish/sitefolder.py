"""The site's folder: what publish may replace, told before the build; the marker that lists
every file a publish wrote, with its SHA-256; and the swap of the new site in for the old.

publish replaces a folder only where everything in it is what a publish wrote there, as it
wrote it: a file it did not write, a file edited since, a link or a folder the user added is
the user's, and publish refuses (one sentence naming it) rather than delete it. A site folder
that is a link (``site -> www/bench``) stays a link: the folder it leads to is replaced, so
the served copy is the new one. A folder that cannot be swapped by a rename (a mount point)
is refused before the build, as is a file system without room for the site.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass

from ...errors import XferbenchError
from ...results.safefiles import (
    UnwritableError,
    check_output_folder,
    check_space,
    is_mount_point,
    left_by_dead_process,
    mount_points,
    remove_tree,
    write_text_safely,
)

#: A file in every site publish builds: publish replaces only a folder that holds it.
SITE_MARKER = ".xferbench-site"
#: A line of the marker naming a file publish wrote, with its SHA-256 ("file: <hex> <path>").
FILE = "file: "
#: The same in markers before 0.2, the file's name alone.
WROTE = "wrote: "
#: The files a publish writes, by name: how a folder whose marker is an older publish's,
#: which listed no files, is told from one the user added to.
LAYOUT = re.compile(r"(index\.html|asv\.html|asv-data\.js|asv\.js|site\.js|style\.css|"
                    r"asv/.+\.(json|xml)|figures/.+\.svg)")
#: The least room a site is checked for before its build (the committed results' is 6 MiB).
SITE_BYTES_MIN = 1 << 20


@dataclass(frozen=True)
class SiteFolder:
    """Where the site goes: ``given`` as the user wrote it, ``real`` the folder replaced (a
    link's target: the link stays)."""

    given: str
    real: str

    @property
    def parent(self) -> str:
        return os.path.dirname(self.real)

    @property
    def base(self) -> str:
        return os.path.basename(self.real)


def sha256(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def read_marker(folder: str) -> dict[str, str | None] | None:
    """The files the marker of ``folder`` lists (path -> SHA-256, None where an older marker
    named the file alone); an empty dict for a marker that lists none; None for no marker."""
    path = os.path.join(folder, SITE_MARKER)
    if not os.path.isfile(path):
        return None
    listed: dict[str, str | None] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line.startswith(FILE):
                digest, _, name = line[len(FILE):].partition(" ")
                listed[name] = digest
            elif line.startswith(WROTE):
                listed[line[len(WROTE):].strip()] = None
    return listed


def write_marker(folder: str) -> None:
    """The marker that says publish built ``folder``, listing every file it wrote there with
    its SHA-256."""
    lines = ["built by xferbench publish; publish replaces this folder as a whole, and refuses "
             "to while it holds anything not listed here or changed since"]
    lines += [f"{FILE}{sha256(os.path.join(folder, rel))} {rel}"
              for rel in sorted(files_under(folder))]
    write_text_safely(os.path.join(folder, SITE_MARKER), "\n".join(lines) + "\n")


def files_under(folder: str) -> list[str]:
    """Every file under ``folder`` (links not followed), relative, with '/' separators."""
    out = []
    for root, _dirs, names in os.walk(folder):
        rel = os.path.relpath(root, folder)
        out += [name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}" for name in names]
    return out


def foreign(folder: str) -> list[str]:
    """What in ``folder`` is not as a publish left it, each said as a sentence's object: a
    file it did not write, one changed since, a link, a folder it did not make. A folder with
    no marker holds nothing of a publish's; one whose marker is an older publish's, which
    listed no files, is judged by what a publish writes (``LAYOUT``)."""
    marker = read_marker(folder)
    if marker is None:  # nothing in it is a publish's: its top level says so (a home folder
        return [_entry(folder, name) for name in sorted(os.listdir(folder))]  # is not walked)
    older = marker == {}
    listed = marker
    made = {rel.rsplit("/", i)[0] for rel in listed for i in range(1, rel.count("/") + 1)}
    mounts = mount_points()
    out: list[str] = []
    for root, dirs, names in os.walk(folder):
        rel_root = os.path.relpath(root, folder).replace(os.sep, "/")
        prefix = "" if rel_root == "." else rel_root + "/"
        for d in sorted(dirs):
            rel, path = prefix + d, os.path.join(root, d)
            if os.path.islink(path):
                out.append(f"the link {rel} -> {os.readlink(path)}")
            elif os.path.realpath(path) in mounts:
                out.append(f"the mount point {rel}/")
            elif (rel not in made) if not older else not files_under(path):
                out.append(f"the folder {rel}/, which publish did not make")
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))
                   and os.path.realpath(os.path.join(root, d)) not in mounts]
        for name in sorted(names):
            rel, path = prefix + name, os.path.join(root, name)
            if rel == SITE_MARKER:
                continue
            if os.path.islink(path):
                out.append(f"the link {rel} -> {os.readlink(path)}")
            elif not os.path.isfile(path):
                out.append(f"{rel}, which is not a file")
            elif older:
                if not LAYOUT.fullmatch(rel):
                    out.append(f"{rel}, which publish did not write (the folder's marker is an "
                               "older publish's, which listed no files)")
            elif rel not in listed:
                out.append(f"{rel}, which publish did not write")
            elif listed[rel] is not None and sha256(path) != listed[rel]:
                out.append(f"{rel}, changed since publish wrote it")
    return out


def _entry(folder: str, name: str) -> str:
    path = os.path.join(folder, name)
    if os.path.islink(path):
        return f"the link {name} -> {os.readlink(path)}"
    if os.path.isdir(path):
        return f"the folder {name}/, which publish did not make"
    return f"{name}, which publish did not write"


def refuse_foreign(site: SiteFolder) -> None:
    """One sentence naming what in the site's folder is the user's, if anything is."""
    found = foreign(site.real) if os.path.isdir(site.real) else []
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        loss = "overwrite the edit" if "changed since" in found[0] else "delete it"
        raise XferbenchError(
            f"--out {site.given} holds {found[0]}{more}: publish replaces the folder as a "
            f"whole and would {loss}; move it out, or give another folder")


def check_site_folder(given: str) -> SiteFolder:
    """Where the site goes, or one sentence why it cannot go there, all before the build: not
    a folder, not writable, a folder with anything of the user's in it, a mount point (the
    swap is a rename), too little room."""
    check_output_folder("--out", given)
    site = SiteFolder(given, os.path.realpath(os.path.abspath(given)))
    if os.path.exists(site.real) and not os.path.isdir(site.real):
        raise XferbenchError(f"--out {given} is a file: give a folder for the site")
    if os.path.isdir(site.real) and is_mount_point(site.real):
        raise XferbenchError(
            f"--out {given} is a mount point: publish swaps a new site in by renaming the "
            f"folder, which a mount point cannot be; give a folder inside it "
            f"(--out {os.path.join(given, 'site')})")
    refuse_foreign(site)
    existing = site.parent
    while not os.path.isdir(existing):
        existing = os.path.dirname(existing)
    sizes = [os.path.getsize(os.path.join(site.real, rel)) for rel in files_under(site.real)] \
        if os.path.isdir(site.real) else []
    try:  # the old site's size, and its largest file, are what the new one will take
        check_space(existing, max(sum(sizes), SITE_BYTES_MIN), f"--out {given}",
                    largest=max(sizes, default=0))
    except UnwritableError as exc:
        raise XferbenchError(str(exc)) from None
    return site


def clean_staging(site: SiteFolder) -> None:
    """Staging folders of publishes that were killed: their exact name, their process gone."""
    for name in os.listdir(site.parent):
        m = re.fullmatch(rf"\.{re.escape(site.base)}-new-(\d+)-\w+", name)
        path = os.path.join(site.parent, name)
        if m and os.path.isdir(path) and left_by_dead_process(path, int(m.group(1))):
            remove_tree(path)


def swap_in(site: SiteFolder, built: str, staging: str) -> None:
    """Put the built site ``built`` where ``site`` is, the old one (checked again: nothing of
    the user's came in during the build) moved into ``staging`` to go with it."""
    if os.path.exists(site.real):
        refuse_foreign(site)
        os.chmod(built, stat.S_IMODE(os.stat(site.real).st_mode))  # the folder's own mode
        os.replace(site.real, os.path.join(staging, "old"))
    os.replace(built, site.real)
