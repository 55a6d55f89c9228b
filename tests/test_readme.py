"""The README and docs/ stay true to the repository: every link leads to a file (and a heading
where it names one), every command the README shows still exists and takes the options it is
shown with, every page of docs/ is linked from the README, the README is read in three
minutes, the docs stay short, and they speak the product's words.

Links to other hosts are not followed (the tests run without a network). Commands are parsed,
never run: ``xferbench`` ones by the CLI's own parser, ``scripts/`` ones by looking for the
script, ``python -m`` and ``pytest --pyargs`` ones by finding the module, pytest options in
``pytest --help``. ``test_planted_problems_are_found`` shows that each check can fail.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: Two screens.
MAX_README_LINES = 200
#: What a user reads in three minutes (pytest-benchmark's README is about 600 words).
MAX_README_WORDS = 800
#: README, ARCHITECTURE.md and docs/ together, as `wc -w` counts them.
MAX_DOCS_WORDS = 15_000
#: Words of the project's own making, never the product's (whole words, any case), and
#: tracker numbers. Spelt in pieces, so that a search of the tests for them finds none.
PRIVATE_WORDS = re.compile(
    r"\b(?:" + "|".join(("lea" r"se[sd]?", "rehe" r"ars\w*", "le" "nt", "la" "nes?"))
    + r")\b|\biss" r"ue \d+", re.I)


def repository_url() -> str:
    """``[project.urls] Repository`` of pyproject.toml: the README's links lead there."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(REPO / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["urls"]["Repository"].rstrip("/")


#: The branch the README's absolute links name (asv.conf.json's).
BRANCH = "main"


def repo_prefixes(url: str) -> tuple[str, ...]:
    """The addresses of a file of the repository on the forge: its page (blob), a folder's
    (tree), and for an image its raw bytes."""
    owner_repo = url.split("://", 1)[-1].split("/", 1)[-1]
    return (f"{url}/blob/{BRANCH}/", f"{url}/tree/{BRANCH}/",
            f"https://raw.githubusercontent.com/{owner_repo}/{BRANCH}/")


def local_target(target: str, url: str) -> str | None:
    """The repository path an absolute link to the repository names ("docs/lint.md#x"), or
    None for a link elsewhere."""
    for prefix in repo_prefixes(url):
        if target.startswith(prefix):
            return target[len(prefix):]
    return None

FENCE = re.compile(r"^```(\w*)\s*$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
SHELLS = {"sh", "bash", "shell", "console"}


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but '-' and '_' dropped,
    spaces as '-'."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"\]\([^)]*\)", "", text).replace("[", "")  # a link's text only
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _prose(text: str) -> list[tuple[int, str, str]]:
    """(line number, line, the fence's language or "" outside a fence) of every line."""
    out, lang = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            lang = None if lang is not None else m.group(1) or "text"
            continue
        out.append((n, line, lang or ""))
    return out


def anchors(path: Path) -> set[str]:
    found: dict[str, int] = {}
    out = set()
    for _n, line, lang in _prose(path.read_text(encoding="utf-8")):
        if not lang and line.startswith("#"):
            base = slug(line.lstrip("#"))
            count = found.get(base, 0)
            out.add(base if count == 0 else f"{base}-{count}")
            found[base] = count + 1
    return out


def link_problems(path: Path, root: Path = REPO, url: str | None = None) -> list[str]:
    """Every link of ``path`` that leads to no file of ``root`` (or to no heading of it): a
    relative one, or an absolute one to the repository at ``url`` (the README's, which must
    work on the package index too); links to other hosts are not followed."""
    url = url or repository_url()
    problems = []
    for n, line, lang in _prose(path.read_text(encoding="utf-8")):
        if lang:
            continue
        for target in LINK.findall(line):
            local = local_target(target, url)
            if local is None and re.match(r"^[a-z]+:", target):  # another host
                continue
            file, _, anchor = (local or target).partition("#")
            base = root if local is not None else path.parent
            dest = (base / file).resolve() if file else path
            where = f"{path.relative_to(root).as_posix()}:{n}"
            if not dest.exists():
                problems.append(f"{where}: {target} leads to no file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where}: {target}: {dest.name} has no heading #{anchor}")
    return problems


def shown_commands(path: Path) -> list[tuple[int, str]]:
    """(line, command) for every line of a shell block (continuations joined, comments
    dropped) and every inline code span that starts with a command."""
    out, pending = [], ""
    starts = ("xferbench ", ".venv/bin/xferbench ", "scripts/", "python -m ", "pytest ")
    for n, line, lang in _prose(path.read_text(encoding="utf-8")):
        if lang in SHELLS:
            line = pending + re.sub(r"\s+#.*$", "", line).strip().removeprefix("$ ")
            pending = line[:-1] + " " if line.endswith("\\") else ""
            if line and not pending and not line.startswith("#"):
                out.append((n, line))
        elif not lang:
            out += [(n, span) for span in CODE.findall(line) if span.startswith(starts)]
    return out


def _normalise(args: list[str]) -> list[str]:
    """A usage line's arguments as a user would type them: [optional] parts kept, the first
    of a|b choices taken, '...' dropped."""
    out = []
    for a in args:
        a = a.replace("[", "").replace("]", "")
        if a and a != "...":
            out.append(a.split("|")[0] if "|" in a and not a.startswith("-") else a)
    return out


@cache
def _pytest_help() -> str:
    return subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True,
                          text=True, cwd=REPO).stdout


def _xferbench_problem(args: list[str]) -> str | None:
    from xferbench.cli import build_parser
    from xferbench.commands import COMMANDS

    names = {c.__name__.rsplit(".", 1)[-1] for c in COMMANDS}
    if not args or args[0] not in names:
        return None if args[:1] in ([], ["--help"], ["--version"]) else \
            f"xferbench has no command {args[0]!r}"
    if len(args) == 1 or {"-h", "--help"} & set(args):
        return None  # the command alone, as prose names it
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            build_parser().parse_args(args)
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1]
    return None


def command_problem(command: str) -> str | None:
    """Why ``command`` (one line as shown) no longer works, or None."""
    for part in re.split(r"\s(?:&&|\|\||;|\|)\s", command):  # each command of a line
        args = shlex.split(part)
        cut = next((i for i, a in enumerate(args) if re.match(r"^\d*[<>]", a)), len(args))
        args = _normalise(args[:cut])  # what is redirected is no argument
        while args and re.fullmatch(r"[A-Z_]+=\S*", args[0]):  # VAR=value before a command
            args = args[1:]
        if not args:
            continue
        program, rest = args[0], args[1:]
        if program.startswith("scripts/"):
            if not os.access(REPO / program, os.X_OK):
                return f"{program} is not an executable script of the repository"
        elif program.endswith("xferbench"):
            problem = _xferbench_problem(rest)
            if problem:
                return problem
        elif program.endswith(("python", "python3")) and rest[:1] == ["-m"] and len(rest) > 1:
            if rest[1] != "pytest" and importlib.util.find_spec(rest[1]) is None:
                return f"python -m {rest[1]}: no such module"
        elif program == "pytest" or rest[:2] == ["-m", "pytest"]:
            for opt in (a.split("=")[0] for a in rest if a.startswith("--")):
                if opt not in _pytest_help():
                    return f"pytest has no option {opt}"
            if "--pyargs" in rest:
                module = rest[rest.index("--pyargs") + 1]
                if importlib.util.find_spec(module) is None:
                    return f"pytest --pyargs {module}: no such module"
    return None


def docs() -> list[Path]:
    return [README, REPO / "ARCHITECTURE.md", *sorted((REPO / "docs").glob("*.md"))]


def test_every_link_of_the_readme_and_docs_leads_somewhere():
    assert [p for path in docs() for p in link_problems(path)] == []


def test_every_command_the_readme_shows_still_works():
    shown = shown_commands(README)
    assert len(shown) >= 5, "the README shows fewer commands than expected: is the parser broken?"
    assert [f"README.md:{n}: {c}: {p}" for n, c in shown if (p := command_problem(c))] == []


def relative_links(path: Path) -> list[str]:
    """Links of ``path`` to a file by a relative path, which the package index (PyPI shows
    the README as the project's description) cannot follow."""
    return [f"{path.name}:{n}: {t}" for n, line, lang in _prose(path.read_text(encoding="utf-8"))
            if not lang for t in LINK.findall(line)
            if not re.match(r"^[a-z]+:", t) and not t.startswith("#")]


def test_the_readme_links_work_on_the_package_index_too():
    """The README is the package's description on PyPI, where docs/x.md leads nowhere: every
    link to a file of the repository is absolute, to pyproject's Repository address."""
    assert relative_links(README) == []
    url = repository_url()
    links = LINK.findall(README.read_text(encoding="utf-8"))
    assert sum(local_target(t, url) is not None for t in links) >= 10


def test_every_page_of_docs_is_linked_from_the_readme():
    url = repository_url()
    linked = {(REPO / (local_target(t, url) or t).partition("#")[0]).resolve()
              for t in LINK.findall(README.read_text(encoding="utf-8"))}
    assert [p.name for p in sorted((REPO / "docs").glob("*.md")) if p not in linked] == []


def test_the_readme_fits_two_screens():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, (
        f"README.md has {lines} lines: move the detail into docs/ and link it")


def words(path: Path) -> int:
    """Words as `wc -w` counts them: runs of characters between white space."""
    return len(path.read_text(encoding="utf-8").split())


def vocabulary_problems(path: Path) -> list[str]:
    """Each line of ``path`` that uses a word of the project's private vocabulary."""
    return [f"{path.name}:{n}: {m.group(0)!r}"
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            for m in PRIVATE_WORDS.finditer(line)]


def test_the_readme_is_read_in_three_minutes():
    assert words(README) <= MAX_README_WORDS, (
        f"README.md has {words(README)} words: move the detail into docs/ and link it")


def test_the_docs_stay_short():
    counts = {p.name: words(p) for p in docs()}
    assert sum(counts.values()) <= MAX_DOCS_WORDS, counts


def test_the_docs_speak_the_product_s_words():
    assert [p for path in docs() for p in vocabulary_problems(path)] == []


def test_planted_problems_are_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Its part\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Title\n\n[ok](docs/a.md#its-part) [self](#title) [gone](docs/b.md)\n"
        "[bad anchor](docs/a.md#nowhere) [web](https://example.org/x)\n"
        "[abs](https://forge.example/o/x/blob/main/docs/a.md#its-part) "
        "[abs gone](https://forge.example/o/x/blob/main/docs/c.md)\n\n"
        "```sh\nscripts/setup && .venv/bin/xferbench run --quik\n"
        ".venv/bin/xferbench cite Copy.track_device_s \\\n    --params size=64MiB\n"
        "xferbench list --format json > out.json 2>&1 | head && scripts/nowhere\n```\n"
        "`xferbench frobnicate now` and `python -m xferbench.nothing` and `scripts/nope`\n")
    assert link_problems(readme, tmp_path, "https://forge.example/o/x") == [
        "README.md:3: docs/b.md leads to no file",
        "README.md:4: docs/a.md#nowhere: a.md has no heading #nowhere",
        "README.md:5: https://forge.example/o/x/blob/main/docs/c.md leads to no file"]
    assert relative_links(readme) == ["README.md:3: docs/a.md#its-part",
                                      "README.md:3: docs/b.md", "README.md:4: docs/a.md#nowhere"]
    shown = shown_commands(readme)
    assert [c for _n, c in shown] == [
        "scripts/setup && .venv/bin/xferbench run --quik",
        ".venv/bin/xferbench cite Copy.track_device_s  --params size=64MiB",
        "xferbench list --format json > out.json 2>&1 | head && scripts/nowhere",
        "xferbench frobnicate now", "python -m xferbench.nothing", "scripts/nope"]
    assert [command_problem(c) for _n, c in shown] == [
        "xferbench: error: unrecognized arguments: --quik (see 'xferbench --help')", None,
        "scripts/nowhere is not an executable script of the repository",
        "xferbench has no command 'frobnicate'", "python -m xferbench.nothing: no such module",
        "scripts/nope is not an executable script of the repository"]
    (tmp_path / "docs" / "b.md").write_text(
        "The lea" "se parts, lea" "sed-out, a rehe" "arsal, a le" "nt machine, a la" "ne; see "
        "iss" "ue 48.\nReleased, pleasant planes, silently: no match.\n\n| a | `b c` |\n")
    assert vocabulary_problems(tmp_path / "docs" / "b.md") == [
        "b.md:1: 'lea" "se'", "b.md:1: 'lea" "sed'", "b.md:1: 'rehe" "arsal'",
        "b.md:1: 'le" "nt'", "b.md:1: 'la" "ne'", "b.md:1: 'iss" "ue 48'"]
    assert words(tmp_path / "docs" / "b.md") == 14 + 6 + 6  # a table's bars count, as in wc -w
    assert slug(" `xferbench run`") == "xferbench-run"
    assert slug(" On a GPU machine without network: `scripts/gpu-check`") == \
        "on-a-gpu-machine-without-network-scriptsgpu-check"
