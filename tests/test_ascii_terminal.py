"""Every command that prints, run where the terminal's encoding is ASCII (PYTHONIOENCODING=ascii,
LANG=C, its output a pipe): no traceback; what ASCII cannot hold ("±", "→") is written as an
escape. Source that Python's own parser cannot handle (a syntax error, a NUL byte, an unknown
coding cookie, nesting deep enough to raise RecursionError) is one line, never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import committed_results

REPO = Path(__file__).resolve().parents[1]
ASCII = {"PYTHONIOENCODING": "ascii", "LANG": "C", "LC_ALL": "C"}
CITE = ["cite", "Creation.track_ready_s", "--params", "factory=zeros,variant=to,size=64MiB",
        "--torch", "2.15.0+cu132", "--machine", "cpu-2core-vm"]
COMMANDS = {
    "help": (["--help"], 0),
    "env": (["env"], 0),
    "list": (["list", "--results", "{results}"], 0),
    "table": (["table", "--results", "{results}"], 0),
    "claims": (["claims", "--results", "{results}"], 0),
    "cite": ([*CITE, "--results", "{results}"], 0),
    "compare": (["compare", "2.14.1", "2.15.0", "--machine", "cpu-2core-vm", "--results",
                 "{results}"], 1),
    "export": (["export", "--results", "{results}"], 0),
    "lint": (["lint", str(REPO / "tests" / "lint" / "corpus")], 1),
    "audit": (["audit", "{script}"], 0),
    "run": (["run", "--quick", "--sweep", "smoke", "--device", "cpu", "--bench", "Creation",
             "--results", "{results}"], 0),
    "publish": (["publish", "--results", "{results}", "--out", "{tmp}/site"], 0),
}
SCRIPT = ("import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), "
          "lr=0.1)\nfor _ in range(2):\n    loss = model(torch.ones(2, 4)).sum()\n"
          "    loss.backward()\n    opt.step()\n    print(loss.item())\n")


def xferbench(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "xferbench", *argv], capture_output=True,
                          cwd=tmp_path, env={**os.environ, **ASCII}, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_prints_on_an_ascii_terminal_without_a_traceback(name, tmp_path):
    argv, status = COMMANDS[name]
    results = tmp_path / "results"
    shutil.copytree(committed_results(), results)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    argv = [a.format(results=results, script=script, tmp=tmp_path) for a in argv]
    done = xferbench(argv, tmp_path)
    both = done.stdout + done.stderr
    assert done.returncode == status, both.decode("ascii", "replace")[-2000:]
    assert b"Traceback" not in both and b"UnicodeEncodeError" not in both
    both.decode("ascii")  # nothing but ASCII reached the pipe


def test_what_ascii_cannot_hold_is_written_as_an_escape(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(committed_results(), results)
    done = xferbench(["table", "--results", str(results)], tmp_path)
    assert done.returncode == 0 and b"\\xb1" in done.stdout  # the noise's "±"


SOURCES = {
    "a syntax error": (b"def f(:\n", "invalid syntax"),
    "a NUL byte": (b"x = 1\x00\n", "a binary file (it holds NUL bytes)"),
    "an unknown coding cookie": (b"# -*- coding: nosuch -*-\nx = 1\n",
                                 "its coding cookie cannot be used"),
    "a cookie its bytes break": (b"# -*- coding: ascii -*-\nx = '\xc3\xa9'\n",
                                 "not ascii text at byte"),
    "deep nesting": (("x = " + "+".join(["1"] * 200_000) + "\n").encode(),
                     "nested too deeply"),
    "deep parentheses": (("x = " + "(" * 300 + "1" + ")" * 300 + "\n").encode(),
                         "too many nested parentheses"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", SOURCES)
def test_source_pythons_parser_cannot_handle_is_one_line_in_lint_and_audit(name, tmp_path):
    data, words = SOURCES[name]
    (tmp_path / "bad.py").write_bytes(data)
    (tmp_path / "good.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    done = xferbench(["lint", "bad.py", "good.py"], tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 1 and b"good.py:2:5: XB102" in done.stdout  # the other file
    assert "Traceback" not in err and len(err.splitlines()) == 1 and words in err, err
    done = xferbench(["audit", "bad.py"], tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 2 and err.startswith("xferbench: the script bad.py cannot be ")
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
