"""Nothing of the user's is lost, continued from test_userfiles.py: audit's report and the
user's script (--out, os._exit, fork, a closed stdout, `--`), the tracebacks (a damaged
asv.conf.json in run and publish, a sidecar field of the wrong type, Ctrl-C while xferbench or
torch loads) and the messages that did not say what was wrong (a bad date). Each test failed
on the code before the fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import committed_results, series_options

from xferbench.cli import main

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "results"
CPU = {"XFERBENCH_DEVICE": "cpu", "CUDA_VISIBLE_DEVICES": ""}


def xferbench(*args: str, cwd: Path = REPO, prelude: str = "", env: dict | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m xferbench ARGS`` in a fresh process, ``prelude`` run first (an import
    hook, say)."""
    code = f"{prelude}\nimport runpy\nrunpy.run_module('xferbench', run_name='__main__', " \
           "alter_sys=True)"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, text=True,
                          capture_output=True, timeout=timeout,
                          env={**os.environ, **CPU, **(env or {})})


def one_sentence(proc: subprocess.CompletedProcess[str], *words: str, code: int = 2) -> str:
    assert proc.returncode == code, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("xferbench: ") and all(w in lines[0] for w in words), lines[0]
    return lines[0]


def script(tmp_path: Path, body: str, name: str = "victim.py") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


ARGV = "import sys\nprint('ARGV', sys.argv[1:])\n"


# -- audit: --out, and the script's own files ----------------------------------------------------

@pytest.mark.parametrize("how", ["same", "relative", "dot", "symlink", "hardlink"])
def test_audit_out_never_names_the_script(tmp_path, how):
    victim = script(tmp_path, ARGV)
    out = {"same": str(victim), "relative": "victim.py", "dot": "./victim.py"}.get(how)
    if how == "symlink":
        (tmp_path / "report.txt").symlink_to(victim)
        out = "report.txt"
    elif how == "hardlink":
        os.link(victim, tmp_path / "report.txt")
        out = "report.txt"
    proc = xferbench("audit", "--out", out, "victim.py", cwd=tmp_path)
    one_sentence(proc, "--out")
    assert victim.read_text() == ARGV and "ARGV" not in proc.stdout  # refused before it ran


@pytest.mark.slow
def test_audit_out_replaces_a_report_never_a_users_file(tmp_path):
    victim = script(tmp_path, ARGV, "train.py")
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n")
    one_sentence(xferbench("audit", "--out", str(notes), str(victim)), "is not an audit report")
    assert notes.read_text() == "# my notes\n"
    for fmt in ("text", "json"):  # an earlier report is the audit's: replaced
        report = tmp_path / f"report.{fmt}"
        for _ in range(2):
            ok = xferbench("audit", "--format", fmt, "--out", str(report), str(victim))
            assert ok.returncode == 0, ok.stderr
        assert report.read_text().count("xferbench audit:" if fmt == "text" else '"step_count"') \
            == 1


def test_a_relative_out_is_written_where_the_audit_started_not_where_the_script_went(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    victim = script(tmp_path, "import os\nos.chdir('elsewhere')\n", "train.py")
    proc = xferbench("audit", "--out", "report.txt", str(victim), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "report.txt").read_text().startswith("xferbench audit: ")
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize(("out", "words"), [("folder", "is a folder"),
                                            ("nowhere/report.txt", "does not exist"),
                                            ("victim.py/report.txt", "which is a file")])
def test_an_out_that_cannot_be_written_is_said_before_the_script_runs(tmp_path, out, words):
    (tmp_path / "folder").mkdir()
    victim = script(tmp_path, "open('ran', 'w').write('the script ran')\n")
    one_sentence(xferbench("audit", "--out", out, str(victim), cwd=tmp_path), words)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("out", [True, False])
def test_a_script_ending_in_os_exit_still_gets_its_report(tmp_path, out):
    victim = script(tmp_path, "import os\nprint('bye', flush=True)\nos._exit(4)\n")
    report = tmp_path / "report.txt"
    proc = xferbench("audit", *(["--out", str(report)] if out else []), str(victim))
    assert proc.returncode == 4, proc.stderr
    text = report.read_text() if out else proc.stdout
    assert text.count("xferbench audit: 1 step") == 1 and "bye" in proc.stdout


FORKS = """\
import os, sys, time
if os.fork() == 0:  # the child ends after the parent, with a status of its own
    time.sleep(0.5)
    print("child", flush=True)
    {child_end}
print("parent")
"""


@pytest.mark.parametrize(("child_end", "out"), [("sys.exit(5)", True), ("sys.exit(5)", False),
                                                ("raise SystemExit(5)", True),
                                                ("os._exit(5)", True), ("pass", False)])
def test_a_script_that_forks_gets_one_report_the_parents(tmp_path, child_end, out):
    victim = script(tmp_path, FORKS.format(child_end=child_end))
    report = tmp_path / "report.json"
    proc = xferbench("audit", "--format", "json", *(["--out", str(report)] if out else []),
                     str(victim))  # returns once the child closed its end of the pipes too
    assert proc.returncode == 0, proc.stderr
    assert "child" in proc.stdout + proc.stderr and "parent" in proc.stdout + proc.stderr
    text = report.read_text() if out else proc.stdout
    data = json.loads(text)  # one JSON document, not two run together
    assert data["script"]["exit_status"] == 0  # the parent's report, not the child's


@pytest.mark.parametrize("argv", [["victim.py", "--", "--steps", "5"],
                                  ["--", "victim.py", "--steps", "5"],
                                  ["victim.py", "--", "--out", "x", "--steps=5"],
                                  ["--format", "json", "victim.py", "--lr", "1", "--",
                                   "--steps", "5"]])
def test_after_dash_dash_every_argument_is_the_scripts(tmp_path, argv):
    script(tmp_path, ARGV)
    proc = xferbench("audit", *argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    args = argv[argv.index("--") + 1:]
    args = args[1:] if argv.index("--") < argv.index("victim.py") else args
    if "--lr" in argv:
        args = ["--lr", "1", *args]
    assert f"ARGV {args!r}" in proc.stdout + proc.stderr
    assert not (tmp_path / "x").exists()


def test_audit_without_a_script_is_one_sentence(capsys):
    assert main(["audit"]) == 2
    assert capsys.readouterr().err == ("xferbench: no script given: xferbench audit [options] "
                                       "SCRIPT [ARGS ...]\n")


@pytest.mark.slow
@pytest.mark.parametrize("body", ["import sys\nsys.stdout.close()\n",
                                  "import sys\nsys.stdout = None\n",
                                  "import os, sys\nsys.stdout.close()\nsys.stderr.close()\n"
                                  "raise SystemExit(3)\n",
                                  "import sys, io\nsys.stdout = io.StringIO()\n"])
def test_a_script_that_closes_or_replaces_stdout_still_gets_its_report(tmp_path, body):
    victim = script(tmp_path, body)
    proc = xferbench("audit", str(victim))
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == (3 if "SystemExit(3)" in body else 0)
    assert proc.stdout.count("xferbench audit: 1 step") == 1


# -- tracebacks: a damaged asv.conf.json ------------------------------------------------------

@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    from test_faults import _checkout

    return _checkout(tmp_path_factory.mktemp("clone"))


@pytest.mark.parametrize("damage", ["truncated", "a list", "empty", "not utf-8"])
def test_a_damaged_asv_conf_is_one_sentence_in_run_and_publish_and_leaves_nothing(
        clone, tmp_path, damage):
    conf = clone / "asv.conf.json"
    good = conf.read_bytes()
    conf.write_bytes({"truncated": good[:300], "a list": b"[1, 2]", "empty": b"",
                      "not utf-8": good[:100] + b"\xff\xfe" + good[100:]}[damage])
    try:
        started = time.monotonic()
        run = xferbench("run", "--quick", "--device", "cpu", "--results",
                        str(tmp_path / "r"), cwd=clone)
        one_sentence(run, "asv.conf.json")
        assert time.monotonic() - started < 60 and not (tmp_path / "r").exists()  # no lock
        site = xferbench("publish", "--results", str(GOLDEN), "--out", str(tmp_path / "site"),
                         cwd=clone)
        one_sentence(site, "asv.conf.json")
        assert sorted(p.name for p in tmp_path.iterdir()) == []
    finally:
        conf.write_bytes(good)


# -- tracebacks: a sidecar field of the wrong type ---------------------------------------------

@pytest.mark.parametrize(("key", "value"), [("benchmarks", ["a", "b"]), ("outcomes", [1, 2]),
                                            ("runs", {"a": 1}), ("benchmarks", "text"),
                                            ("outcomes", {"x": [{"params": 5}]})])
@pytest.mark.parametrize("command", ["list", "cite", "compare"])
def test_a_sidecar_field_of_the_wrong_type_is_one_sentence(tmp_path, capsys, key, value,
                                                           command):
    """Its file's series is left out with a warning; a command that needs it fails saying
    why, in one sentence, never a traceback."""
    results = shutil.copytree(committed_results(), tmp_path / "results")
    side = sorted(results.glob("*/*.metadata"))[0]
    needs = series_options(side.with_suffix(".json"))
    data = json.loads(side.read_text())
    data[key] = value
    side.write_text(json.dumps(data))
    argv = {"list": ["list", *needs],
            "cite": ["cite", "Behaviour.track_holds", "--params", "check=tensor_to_new",
                     *needs],
            "compare": ["compare", needs[3].split("+")[0], "2.13.0", *needs[:2]]}[command]
    assert main([*argv, "--results", str(results)]) == 2
    *warned, last = capsys.readouterr().err.strip().splitlines()
    assert f"metadata file {side}" in last and last.startswith("xferbench: "), last
    assert len(warned) == 1 and warned[0].startswith(f"xferbench: warning: metadata file {side}")


# -- messages: a bad date ----------------------------------------------------------------------

@pytest.mark.parametrize("date", ["yesterday", [2024], "1700000000000", True])
def test_a_bad_date_is_said_as_a_bad_date(tmp_path, capsys, date):
    results = shutil.copytree(GOLDEN, tmp_path / "results")
    victim = sorted(p for p in results.glob("*/*.json") if p.name != "machine.json")[0]
    assert "torch2.13.0-cpu" in victim.name
    data = json.loads(victim.read_text())
    data["date"] = date
    victim.write_text(json.dumps(data))
    needs = ["--torch", "2.13.0+cpu"]  # its series: the other is read around it
    for argv in (["list", *needs], ["publish", "--out", str(tmp_path / "site"), *needs]):
        assert main([*argv, "--results", str(results)]) == 2
        err = capsys.readouterr().err
        assert f"has date {date!r}, not asv's milliseconds since 1970" in err, err
        assert "result_columns" not in err
    assert not (tmp_path / "site").exists()


# -- Ctrl-C while xferbench or torch loads ------------------------------------------------------

ONE_CTRL_C = """\
import os, signal, sys
class Once:
    fired = False
    def find_spec(self, fullname, path=None, target=None):
        if fullname == {module!r} and not Once.fired:
            Once.fired = True
            os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C lands
        return None
sys.meta_path.insert(0, Once())
"""


@pytest.mark.parametrize("module", ["xferbench.cli", "xferbench.commands",
                                    "xferbench.commands.publish.site",
                                    "xferbench.results.resultset", "argparse"])
def test_ctrl_c_while_xferbench_loads_is_one_line_and_exit_130(module):
    proc = xferbench("list", "--results", str(GOLDEN), prelude=ONE_CTRL_C.format(module=module))
    assert (proc.returncode, proc.stderr) == (130, "xferbench: interrupted\n"), proc.stderr


def test_the_command_is_the_entry_that_catches_ctrl_c_while_loading():
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["xferbench"] == "xferbench.__main__:entry"
    proc = subprocess.run([sys.executable, "-c", ONE_CTRL_C.format(module="xferbench.cli") +
                           "from xferbench.__main__ import entry\nsys.exit(entry())", "list"],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (130, "xferbench: interrupted\n")


def test_ctrl_c_while_torch_imports_numpy_stops_the_run(tmp_path):
    # torch imports numpy from C++ and turns a KeyboardInterrupt there into a warning; the run
    # must stop all the same, before it measures or writes anything
    started = time.monotonic()
    proc = xferbench("run", "--quick", "--device", "cpu", "--results", str(tmp_path / "r"),
                     "--bench", "Creation.track_ready", prelude=ONE_CTRL_C.format(module="numpy"))
    assert proc.returncode == 130, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == "xferbench: interrupted"
    assert "Traceback" not in proc.stderr and "measuring" not in proc.stdout
    assert not (tmp_path / "r").exists() and time.monotonic() - started < 120
