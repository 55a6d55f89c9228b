"""Precision and recall of ``xferbench lint`` on real code nobody here wrote: the
training files that ``corpus.toml`` (the set the analysis was tuned on) and ``heldout.toml``
(a second set, labelled before the linter was run on it) beside this file name, each fetched
from the package index (read from its JSON API, ``$PIP_INDEX_URL`` or PyPI's, else by ``pip
download``; the archive kept in a cache outside git:
``$XFERBENCH_REALCODE_CACHE`` or ``~/.cache/xferbench-lint-realcode``), taken out of its
archive, checked against its sha256, linted with the rest of its package (as `xferbench lint`
given the package's folder lints it: its calls into the package's other modules are followed;
``--alone`` lints each file by itself), and scored against its labels. The sets are scored
separately, never pooled.

  python tests/lint/realcode/score_real.py [--set tuned|heldout|heldout2|heldout3|all]
                                           [--cache DIR]
                                           [--only PACKAGE] [--show] [--alone]

A label is ``"LINE CODE VERDICT note"``: ``yes`` (a finding the rule must report: for XB101 a
per-step host read in a training loop, for XB107 a per-step or whole-run timer nothing
synchronised), ``info`` (a read every N steps: right if reported, not a miss if not) or
``no`` (a look-alike that must not be reported: an evaluation loop's read, a read right after
a synchronise...). A report on a line with no label for its code is an error of the corpus:
it is printed and the exit status is 1, as it is for a file whose sha256 does not match. A
file that cannot be fetched is skipped with one line. ``--show`` prints each report with its
line of code, for labelling. A note ending ``[read in another module]`` marks a per-step read
that happens in another module's helper called from that line: counted like any other, and
also reported apart (``local`` recall leaves them out). An entry's ``target``
(``cp311-manylinux1_x86_64``) names the interpreter and platform a wheel built for one is
downloaded for."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import ssl
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from xferbench.lint import CODES, lint_text
from xferbench.lint.project import Project
from xferbench.lint.rules import BY_CODE

CORPUS = Path(__file__).resolve().parent / "corpus.toml"
HELDOUT = CORPUS.with_name("heldout.toml")
HELDOUT2 = CORPUS.with_name("heldout2.toml")
HELDOUT3 = CORPUS.with_name("heldout3.toml")
SETS = {"tuned": CORPUS, "heldout": HELDOUT, "heldout2": HELDOUT2, "heldout3": HELDOUT3}
ELSEWHERE = "[read in another module]"
VERDICTS = ("yes", "info", "no")
#: pip's words for an index it could not reach (as opposed to a release it does not have)
UNREACHABLE = re.compile(r"NewConnectionError|Max retries exceeded|Temporary failure in name "
                         r"resolution|Name or service not known|ConnectTimeout|ProxyError|"
                         r"Network is unreachable|ConnectionResetError|No route to host")


@dataclass(frozen=True)
class Entry:
    package: str
    version: str
    kind: str  # "wheel" or "sdist"
    path: str  # inside the archive
    sha256: str
    what: str
    labels: dict[tuple[int, str], tuple[str, str]]  # (line, code) -> (verdict, note)
    target: str = ""  # "cp311-manylinux1_x86_64": a wheel built for one interpreter

    @property
    def name(self) -> str:
        return f"{self.package}-{self.version}:{self.path}"


@dataclass
class Score:
    true: int = 0
    false: int = 0
    missed: int = 0
    expected: int = 0  # yes labels
    elsewhere: int = 0  # yes labels of reads in another module
    missed_elsewhere: int = 0

    @property
    def reports(self) -> int:
        return self.true + self.false

    @property
    def precision(self) -> float | None:
        return self.true / self.reports if self.reports else None

    @property
    def recall(self) -> float | None:
        return (self.expected - self.missed) / self.expected if self.expected else None

    @property
    def local_recall(self) -> float | None:
        """Recall on the reads the file itself shows (reads in another module left out)."""
        expected = self.expected - self.elsewhere
        missed = self.missed - self.missed_elsewhere
        return (expected - missed) / expected if expected else None


@dataclass
class Outcome:
    scores: dict[str, Score] = field(default_factory=lambda: {c: Score() for c in CODES})
    false_alarms: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # unlabelled reports, bad sha256, bad labels
    skipped: list[str] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    packages: set[str] = field(default_factory=set)

    @property
    def total(self) -> Score:
        s = Score()
        for part in self.scores.values():
            s.true += part.true
            s.false += part.false
            s.missed += part.missed
            s.expected += part.expected
            s.elsewhere += part.elsewhere
            s.missed_elsewhere += part.missed_elsewhere
        return s


def parse_labels(items: list[str], where: str) -> dict[tuple[int, str], tuple[str, str]]:
    out = {}
    for item in items:
        parts = item.split(None, 3)
        if len(parts) < 3 or not parts[0].isdigit() or parts[1] not in CODES or \
                parts[2] not in VERDICTS:
            raise ValueError(f"{where}: label {item!r} is not 'LINE CODE yes|info|no note'")
        key = (int(parts[0]), parts[1])
        if key in out:
            raise ValueError(f"{where}: line {key[0]} {key[1]} is labelled twice")
        out[key] = (parts[2], parts[3] if len(parts) > 3 else "")
    return out


def load(corpus: Path = CORPUS) -> list[Entry]:
    with open(corpus, "rb") as fh:
        data = tomllib.load(fh)
    entries = []
    for f in data["file"]:
        where = f"{f['package']}-{f['version']}:{f['path']}"
        entries.append(Entry(f["package"], f["version"], f["kind"], f["path"], f["sha256"],
                             f.get("what", ""), parse_labels(f.get("labels", []), where),
                             f.get("target", "")))
    return entries


def cache_dir(given: str | None = None) -> Path:
    folder = given or os.environ.get("XFERBENCH_REALCODE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "xferbench-lint-realcode")
    return Path(folder)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def cached_archive(folder: Path, package: str, version: str, kind: str) -> Path | None:
    stem = f"{_normal(package)}-{version}"
    for p in folder.glob("*"):
        low = _normal(p.name.split("-")[0]) + "-" + "-".join(p.name.split("-")[1:])
        if low.lower().startswith(stem.lower() + ("-" if kind == "wheel" else ".")) and (
                p.suffix == ".whl") == (kind == "wheel"):
            return p
    return None


def _wanted(entry: Entry, filename: str) -> bool:
    """Whether ``filename``, listed by the index, is ``entry``'s archive: its sdist, or its
    wheel for ``target`` (else a pure-Python one)."""
    stem = f"{_normal(entry.package)}-{entry.version}".lower()
    name = filename.lower()
    if entry.kind != "wheel":
        return name.replace("-", "_", name.count("-") - 1).startswith(stem + ".") and \
            name.endswith((".tar.gz", ".zip"))
    parts = name[:-4].split("-") if name.endswith(".whl") else []
    if len(parts) < 5 or f"{_normal(parts[0])}-{parts[1]}" != stem:
        return False
    pythons, abis, platforms = parts[-3].split("."), parts[-2].split("."), parts[-1].split(".")
    if entry.target:
        abi, platform = entry.target.lower().split("-", 1)
        return abi in pythons and platform in platforms
    return "none" in abis and "any" in platforms


def fetch_direct(entry: Entry, folder: Path, timeout: float = 20) -> Path | None:
    """``entry``'s archive read straight from the index's JSON API (PEP 691) into ``folder``,
    checked against the sha256 the index gives; None where that fails (pip then tries). One
    HTTP request or two: no interpreter started, no build environment for an sdist."""
    index = (os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple").rstrip("/")
    context = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
    try:
        request = urllib.request.Request(
            f"{index}/{re.sub(r'[-_.]+', '-', entry.package).lower()}/",
            headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with urllib.request.urlopen(request, timeout=timeout, context=context) as r:
            files = json.load(r)["files"]
        found = next(f for f in files if _wanted(entry, f["filename"]))
        with urllib.request.urlopen(urllib.request.urljoin(request.full_url, found["url"]),
                                    timeout=timeout, context=context) as r:
            data = r.read()
    except (OSError, ValueError, KeyError, StopIteration):
        return None
    want = found.get("hashes", {}).get("sha256")
    if want and hashlib.sha256(data).hexdigest() != want:
        return None
    if Path(found["filename"]).name != found["filename"]:  # a name, never a path
        return None
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f".{found['filename']}.{os.getpid()}.part"
    part.write_bytes(data)
    part.replace(folder / found["filename"])
    return cached_archive(folder, entry.package, entry.version, entry.kind)


def fetch(entry: Entry, folder: Path) -> Path | str:
    """The archive of ``entry`` (from the cache, else from the index's JSON API, else
    downloaded by pip), or why not."""
    found = cached_archive(folder, entry.package, entry.version, entry.kind)
    if found is not None:
        return found
    found = fetch_direct(entry, folder)
    if found is not None:
        return found
    binary = ["--only-binary", ":all:"] if entry.kind == "wheel" else ["--no-binary", ":all:"]
    if entry.target:  # "cp311-manylinux1_x86_64": pip fetches the wheel built for that
        abi, platform = entry.target.split("-", 1)
        binary += ["--python-version", f"{abi[2]}.{abi[3:]}", "--implementation", abi[:2],
                   "--abi", abi, "--platform", platform]
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
           "--ignore-requires-python", "--disable-pip-version-check", "--timeout", "20",
           "--retries", "1", "--dest", str(folder), *binary,
           f"{entry.package}=={entry.version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    found = cached_archive(folder, entry.package, entry.version, entry.kind)
    if found is not None:
        return found
    if UNREACHABLE.search(proc.stderr):
        return "unreachable"
    last = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")][-1:]
    return last[0] if last else f"pip download exited {proc.returncode}"


def extract(archive: Path, inner: str) -> bytes:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            return z.read(inner)
    with tarfile.open(archive) as t:
        member = t.extractfile(inner)
        if member is None:
            raise KeyError(inner)
        return member.read()


def fetch_all(entries: list[Entry], folder: Path) -> dict[str, Path | str]:
    """package-version -> its archive or why it could not be had; once the index is found
    unreachable, the rest are not tried."""
    folder.mkdir(parents=True, exist_ok=True)
    releases = {f"{e.package}-{e.version}-{e.kind}": e for e in entries}
    out: dict[str, Path | str] = {}
    missing = {}
    for key, entry in releases.items():
        found = cached_archive(folder, entry.package, entry.version, entry.kind)
        if found is not None:
            out[key] = found
        else:
            missing[key] = entry
    if missing:  # one first: an index that cannot be reached is found out once
        key = next(iter(missing))
        out[key] = fetch(missing.pop(key), folder)
        if out[key] == "unreachable":
            return {**out, **dict.fromkeys(missing, "unreachable")}
    with ThreadPoolExecutor(max_workers=8) as pool:
        for key, result in zip(missing, pool.map(lambda e: fetch(e, folder), missing.values())):
            out[key] = result
    return out


def package_files(archive: Path, folder: Path) -> list[str]:
    """The Python files of ``archive``, taken out into ``folder`` (once), for linting a file
    with the rest of its package."""
    out = folder / "extracted" / archive.name
    done = out / ".done"
    if not done.exists():
        if archive.suffix == ".whl":
            with zipfile.ZipFile(archive) as z:
                members = {n: z.read(n) for n in z.namelist() if n.endswith(".py")}
        else:
            with tarfile.open(archive) as t:
                members = {m.name: t.extractfile(m).read() for m in t.getmembers()
                           if m.isfile() and m.name.endswith(".py")}
        for name, data in members.items():
            target = (out / name).resolve()
            if out.resolve() in target.parents:  # a name, never a way out of the folder
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        done.write_text("")
    return [str(p) for p in out.rglob("*.py")]


def score_file(entry: Entry, text: str, outcome: Outcome, path: str | None = None,
               project: Project | None = None) -> list[str]:
    """Score one file's reports against its labels; the --show lines. ``path`` and
    ``project``: the file taken out of its archive, linted with the rest of its package."""
    result = lint_text(text, path or entry.name, project=project)
    shown = []
    if result.problem is not None:
        outcome.errors.append(f"{entry.name}: {result.problem}")
        return shown
    code_lines = text.splitlines()
    reported = {}
    for f in result.findings:
        reported.setdefault((f.line, f.code), f)
    for (line, code), f in sorted(reported.items()):
        s = outcome.scores[code]
        verdict, note = entry.labels.get((line, code), (None, ""))
        src = code_lines[line - 1].strip() if line <= len(code_lines) else ""
        shown.append(f"{entry.name}:{line}: {code} {f.severity} [{verdict}] {src[:90]}")
        if verdict is None:
            outcome.errors.append(f"{entry.name}:{line}: {code} reported but not labelled: "
                                  f"{src[:80]}")
        elif verdict == "no":
            s.false += 1
            outcome.false_alarms.append(f"{entry.name}:{line}: {code} {src[:70]} ({note})")
        else:
            s.true += 1
    for (line, code), (verdict, note) in sorted(entry.labels.items()):
        if verdict == "yes":
            s = outcome.scores[code]
            elsewhere = note.endswith(ELSEWHERE)
            s.expected += 1
            s.elsewhere += elsewhere
            if (line, code) not in reported:
                s.missed += 1
                s.missed_elsewhere += elsewhere
                outcome.misses.append(f"{entry.name}:{line}: {code} missed ({note})")
    return shown


def run(corpus: Path = CORPUS, cache: str | None = None, only: str | None = None,
        show: bool = False, alone: bool = False) -> Outcome:
    """Score the set ``corpus``: each file linted with the rest of its package (as `xferbench
    lint` given the package's folder does), or ``alone``."""
    entries = [e for e in load(corpus) if only in (None, e.package)]
    folder = cache_dir(cache)
    archives = fetch_all(entries, folder)
    outcome = Outcome()
    projects: dict[Path, tuple[Path, Project | None]] = {}
    for entry in entries:
        archive = archives[f"{entry.package}-{entry.version}-{entry.kind}"]
        if isinstance(archive, str):
            why = ("the package index cannot be reached" if archive == "unreachable"
                   else archive)
            outcome.skipped.append(f"{entry.name}: skipped, not fetched ({why})")
            continue
        try:
            raw = extract(archive, entry.path)
        except (KeyError, OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
            outcome.errors.append(f"{entry.name}: not in {archive.name} ({exc})")
            continue
        if hashlib.sha256(raw).hexdigest() != entry.sha256:
            outcome.errors.append(f"{entry.name}: sha256 {hashlib.sha256(raw).hexdigest()} "
                                  f"is not the corpus's {entry.sha256}")
            continue
        text = raw.decode("utf-8")
        outcome.files += 1
        outcome.lines += text.count("\n")
        outcome.packages.add(entry.package)
        path, project = None, None
        if not alone:
            if archive not in projects:
                files = package_files(archive, folder)
                projects[archive] = (folder / "extracted" / archive.name, Project.of(files))
            base, project = projects[archive]
            path = str(base / entry.path)
        for line in score_file(entry, text, outcome, path, project):
            if show:
                print(line)
    return outcome


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def table(outcome: Outcome) -> list[str]:
    lines = ["| rule | name | reports | true | false | missed | precision | recall |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    rows = [(c, BY_CODE[c].name, s) for c, s in outcome.scores.items()]
    rows.append(("all", "", outcome.total))
    for code, name, s in rows:
        lines.append(f"| {code} | {name} | {s.reports} | {s.true} | {s.false} | {s.missed} | "
                     f"{pct(s.precision)} | {pct(s.recall)} |")
    return lines


def docs_row(label: str, outcome: Outcome) -> str:
    """The set's row of docs/lint.md's after-fix table (a test checks the page quotes it)."""
    s, total = outcome.scores, outcome.total
    read, timer = s["XB101"], s["XB107"]
    found = read.expected - read.missed
    local = (f"; {pct(read.local_recall)} without reads in another module"
             if read.elsewhere else "")
    return (f"| {label} ({outcome.files} files) | {total.reports} | {total.true} | "
            f"{total.false} | {total.missed} | {pct(total.precision)} | "
            f"{pct(read.precision)} ({read.reports}) | {pct(read.recall)} "
            f"({found}/{read.expected}{local}) | {pct(timer.recall)} "
            f"({timer.expected - timer.missed}/{timer.expected}) |")


def summary(outcome: Outcome) -> list[str]:
    s = outcome.scores
    out = [f"{outcome.files} files from {len(outcome.packages)} packages, {outcome.lines:,} "
           "lines", *table(outcome), "",
           "per-step recall: " + ", ".join(
               f"{c} {s[c].expected - s[c].missed}/{s[c].expected} = {pct(s[c].recall)}"
               for c in ("XB101", "XB107"))]
    if any(part.elsewhere for part in s.values()):
        out.append("  leaving out the reads in another module: " + ", ".join(
            f"{c} {pct(s[c].local_recall)}" for c in ("XB101", "XB107")))
    for title, items in (("false alarms", outcome.false_alarms), ("missed", outcome.misses),
                         ("skipped", outcome.skipped), ("errors of the corpus",
                                                        outcome.errors)):
        if items:
            out += ["", f"{title} ({len(items)}):", *(f"  {i}" for i in items)]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", choices=(*SETS, "all"), default="all",
                   help="corpus.toml (tuned on), heldout.toml, heldout2.toml, heldout3.toml, "
                   "or all, each scored alone")
    p.add_argument("--cache", default=None, help="the archives' folder")
    p.add_argument("--only", default=None, metavar="PACKAGE")
    p.add_argument("--show", action="store_true", help="print each report, for labelling")
    p.add_argument("--alone", action="store_true",
                   help="lint each file by itself, not with the rest of its package")
    args = p.parse_args(argv)
    names = tuple(SETS) if args.set == "all" else (args.set,)
    errors = False
    for name in names:
        outcome = run(SETS[name], cache=args.cache, only=args.only, show=args.show,
                      alone=args.alone)
        print(f"== {SETS[name].name} ({name}) ==")
        print("\n".join(summary(outcome)), end="\n\n")
        errors = errors or bool(outcome.errors)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
