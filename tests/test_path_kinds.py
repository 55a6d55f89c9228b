"""What a path is, said by one function (``path_kind``) in every command: a missing path, a
link to nothing, a link loop, a folder, a FIFO, a socket, a device, a path through a file, a
working folder that is gone; and what a file's bytes are when not UTF-8 (UTF-16, UTF-32,
binary, another encoding). A FIFO, a socket or a device is never opened, so no reader waits
on one: inside a results folder or given as a file, it is one sentence, exit 2."""

from __future__ import annotations

import codecs
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import committed_results

from xferbench.cli import main
from xferbench.results.filesystem import path_kind, read_regular, text_problem


def make(kind: str, at: Path) -> Path:
    """A path of ``kind`` at ``at``."""
    if kind == "missing":
        return at
    if kind == "dangling link":
        at.symlink_to(at.parent / "gone")
    elif kind == "link loop":
        at.symlink_to(at.parent / f"{at.name}.other")
        (at.parent / f"{at.name}.other").symlink_to(at)
    elif kind == "folder":
        at.mkdir()
    elif kind == "fifo":
        os.mkfifo(at)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(at))
        sock.close()
    elif kind == "through a file":
        at.write_text("x")
        return at / "inside"
    elif kind == "file":
        at.write_text("x")
    return at


WORDS = {
    "missing": "does not exist",
    "dangling link": "is a symbolic link to nothing (it names ",
    "link loop": "is a symbolic link loop",
    "folder": "is a folder, not a file",
    "fifo": "is a named pipe (FIFO), not a file",
    "socket": "is a socket, not a file",
    "through a file": "does not exist (a part of its path is a file, not a folder)",
}


@pytest.fixture
def no_hang():
    """A read that blocks fails the test after 30 s instead of hanging the run."""

    def stop(*_):
        raise TimeoutError("blocked on a read")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("kind", WORDS)
def test_each_kind_of_path_is_named_for_what_it_is(tmp_path, kind, no_hang):
    path = make(kind, tmp_path / "thing")
    refusal = path_kind(str(path)).refusal(f"results file {path}")
    assert refusal.startswith(f"results file {path} {WORDS[kind]}")
    with pytest.raises(Exception, match="results file") as caught:
        read_regular(str(path), "results file")
    assert str(caught.value) == refusal


def test_a_device_and_a_file_are_named_too():
    assert path_kind("/dev/null").refusal("x", "a folder") == \
        "x is a character device, not a folder"
    assert path_kind(__file__).is_file and path_kind(str(Path(__file__).parent)).is_folder


@pytest.mark.parametrize(("raw", "words"), [
    ("x = 1\n".encode("utf-16"), "UTF-16 text"),
    ("x = 1\n".encode("utf-16-le"), "UTF-16 text"),  # no byte order mark
    ("x = 1\n".encode("utf-16-be"), "UTF-16 text"),
    ("x = 1\n".encode("utf-32"), "UTF-32 text"),
    (b"\x7fELF\x02\x01\x00\x00", "a binary file (it holds NUL bytes)"),
    ("caf\u00e9 = 1\n".encode("latin-1"), "not UTF-8 text (byte 3 is 0xe9)"),
    (codecs.BOM_UTF8 + "x = '\u00e9'\n".encode(), None),
    (b"", None),
])
def test_what_bytes_are_when_they_are_not_utf8_text(raw, words):
    assert text_problem(raw) == words


def run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


FOLDER_COMMANDS = [["list"], ["table"], ["claims"], ["export"],
                   ["cite", "Copy.track_device_s"]]


@pytest.mark.parametrize("kind", ["dangling link", "link loop", "fifo", "socket", "file",
                                  "through a file"])
@pytest.mark.parametrize("command", FOLDER_COMMANDS, ids=lambda c: c[0])
def test_a_results_folder_that_is_no_folder_is_named_by_every_reader(
        tmp_path, kind, command, capsys, no_hang):
    path = make(kind, tmp_path / "results")
    code, err = run([*command, "--results", str(path)], capsys)
    words = {"file": "is a file, not a folder", "fifo": "is a named pipe (FIFO), not a folder",
             "socket": "is a socket, not a folder"}.get(kind) or WORDS[kind]
    assert code == 2 and err.count("\n") == 1 and words in err, err


@pytest.mark.parametrize("kind", ["missing", "dangling link", "link loop", "fifo", "folder"])
def test_a_results_file_that_is_no_file_is_named_by_compare_and_audit(tmp_path, kind, capsys,
                                                                       no_hang):
    path = make(kind, tmp_path / "a.json")
    code, err = run(["compare", str(path), "2.13.0"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"xferbench: results file {path} {WORDS[kind]}"), err
    script = make(kind, tmp_path / "train.py")
    code, err = run(["audit", str(script)], capsys)
    assert code == 2 and f"the script {script} {WORDS[kind].replace(', not a file', '')}" in err


@pytest.mark.parametrize("where", ["a results file", "a sidecar", "benchmarks.json",
                                   "machine.json"])
@pytest.mark.parametrize("command", [["list"], ["claims"], ["compare", "2.12.1", "2.13.0"]],
                         ids=lambda c: c[0])
def test_a_fifo_inside_a_results_folder_blocks_no_reader(tmp_path, where, command, capsys,
                                                         no_hang):
    """A FIFO is never opened. One in place of a results file or a sidecar leaves out its own
    series, with one warning naming it, and the command ends as it would without it; one in
    place of a file every series needs stops the command with one sentence."""
    results = tmp_path / "results"
    shutil.copytree(committed_results(), results)
    code_before, _ = run([*command, "--results", str(results)], capsys)
    machine = sorted(p for p in results.iterdir() if p.is_dir())[0]
    target = {"a results file": machine / "zz.json",
              "a sidecar": sorted(machine.glob("*.metadata"))[0],
              "benchmarks.json": results / "benchmarks.json",
              "machine.json": machine / "machine.json"}[where]
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    code, err = run([*command, "--results", str(results)], capsys)
    named = f"{target} is a named pipe (FIFO), not a file"
    if where in ("a results file", "a sidecar"):
        warned = [line for line in err.splitlines() if named in line]
        assert code == code_before != 2 and len(warned) == 1, err
        assert warned[0].startswith("xferbench: warning: ") and warned[0].endswith(
            "(left out: its series only; every other series is read)"), err
        return
    assert code == 2 and err == (f"xferbench: {err.split(' ', 1)[1].split(str(target))[0]}"
                                 f"{named}\n"), err


def test_lint_names_each_kind_and_never_opens_a_fifo(tmp_path, monkeypatch, capsys, no_hang):
    for kind in ("dangling link", "link loop", "fifo", "socket"):
        make(kind, tmp_path / f"{kind.replace(' ', '_')}.py")
    (tmp_path / "u16.py").write_bytes("import torch\n".encode("utf-16"))
    (tmp_path / "data.json").write_text("{}")
    (tmp_path / "ok.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    monkeypatch.chdir(tmp_path)
    code, err = run(["lint", ".", "data.json"], capsys)
    lines = err.splitlines()
    assert code == 1
    assert "xferbench lint: ./dangling_link.py: a symbolic link to nothing (it names " in err
    assert "xferbench lint: ./link_loop.py: a symbolic link loop (its links lead back to " \
           "themselves); skipped" in lines
    assert "xferbench lint: ./fifo.py: a named pipe (FIFO), not Python source; skipped" in lines
    assert "xferbench lint: ./socket.py: a socket, not Python source; skipped" in lines
    assert any(line.startswith("xferbench lint: ./u16.py: UTF-16 text, which Python cannot "
                               "read as source") for line in lines)
    assert any(line.startswith("xferbench lint: data.json: a .json file, not Python source")
               for line in lines)


@pytest.mark.slow
def test_a_working_folder_that_is_gone_is_named_not_a_bare_errno(tmp_path):
    command = Path(sys.executable).parent / "xferbench"  # the entry point users run
    gone = tmp_path / "gone"
    for argv in (["list"], ["lint", "."], ["compare", "a.json", "b.json"], ["env"]):
        gone.mkdir()
        done = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh",
                               str(gone), str(command), *argv], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr == (f"xferbench: cannot run in the working folder ({gone}), which "
                               "no longer exists (deleted or moved): cd to a folder that "
                               "exists\n"), argv
