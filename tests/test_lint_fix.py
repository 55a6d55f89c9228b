"""``xferbench lint --fix``: XB102 and XB103 rewritten with formatting and comments kept; a
fixed file parses and fixing it again changes nothing; a file without a fixable finding is
never touched; the write is atomic and keeps the file's permissions."""

from __future__ import annotations

import ast
import os
import stat
import textwrap
from pathlib import Path

import pytest

from xferbench.cli import main
from xferbench.lint.runner import lint_file

pytest.importorskip("libcst", reason="--fix needs LibCST (xferbench[lint])")

BEFORE = textwrap.dedent("""\
    import torch  # the model's buffers


    def make(n, device: torch.device):
        # zeros on the host, then copied
        a = torch.zeros(n, dtype=torch.float16).to(device)  # keep this comment
        b = torch.ones(
            n,
            4,
        ).cuda()
        c = torch.arange(0, n,  2).to(device=device, non_blocking=True)
        d = torch.full((n,), 1.5, device="cpu").to(device)
        t = torch.empty(n).fill_(3)
        t.to(device)  # moved, result dropped
        r = torch.randn(n).to(device)  # random: left alone
        e = torch.eye(n).to(device, torch.float64)  # a dtype too: left alone
        return a, b, c, d, t, r, e
    """)
AFTER = textwrap.dedent("""\
    import torch  # the model's buffers


    def make(n, device: torch.device):
        # zeros on the host, then copied
        a = torch.zeros(n, dtype=torch.float16, device=device)  # keep this comment
        b = torch.ones(
            n,
            4,
            device="cuda",
        )
        c = torch.arange(0, n,  2, device=device)
        d = torch.full((n,), 1.5, device=device)
        t = torch.empty(n).fill_(3)
        t = t.to(device)  # moved, result dropped
        r = torch.randn(n).to(device)  # random: left alone
        e = torch.eye(n).to(device, torch.float64)  # a dtype too: left alone
        return a, b, c, d, t, r, e
    """)


def fix(folder: Path, monkeypatch, capsys, *paths: str) -> tuple[int, str, str]:
    monkeypatch.chdir(folder)
    code = main(["lint", "--fix", *paths])
    out, err = capsys.readouterr()
    return code, out, err


def test_fix_rewrites_keeping_format_and_comments(tmp_path, monkeypatch, capsys):
    path = tmp_path / "make.py"
    path.write_text(BEFORE)
    code, out, err = fix(tmp_path, monkeypatch, capsys, "make.py")
    assert path.read_text() == AFTER
    ast.parse(path.read_text())
    assert "xferbench lint: fixed 5 findings in 1 file" in err
    # what is left: the XB102 --fix does not make (random; a dtype too; t, now assigned, made
    # on the host for its one move)
    assert [line.split()[0] for line in out.splitlines() if ": XB" in line] == \
        ["make.py:14:9:", "make.py:16:9:", "make.py:17:9:"]
    assert code == 1


def test_fixing_twice_changes_nothing(tmp_path, monkeypatch, capsys):
    path = tmp_path / "make.py"
    path.write_text(BEFORE)
    fix(tmp_path, monkeypatch, capsys, "make.py")
    once = path.read_bytes()
    stamp = path.stat().st_mtime_ns
    _, _, err = fix(tmp_path, monkeypatch, capsys, "make.py")
    assert path.read_bytes() == once and path.stat().st_mtime_ns == stamp
    assert "fixed" not in err


def test_files_without_a_fixable_finding_are_never_touched(tmp_path, monkeypatch, capsys):
    quiet = tmp_path / "quiet.py"
    quiet.write_text("import torch\nx = torch.randn(3).cuda()\ny = torch.zeros(2).cuda()  "
                     "# noqa: XB102\n")
    clean = tmp_path / "clean.py"
    clean.write_text("print('nothing here')\n")
    stamps = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (quiet, clean)}
    fix(tmp_path, monkeypatch, capsys, ".")
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (quiet, clean)} == stamps
    assert sorted(os.listdir(tmp_path)) == ["clean.py", "quiet.py"]


def test_fix_keeps_permissions_and_the_encoding(tmp_path, monkeypatch, capsys):
    path = tmp_path / "run.py"
    path.write_bytes("# -*- coding: latin-1 -*-\nimport torch\nx = torch.zeros(2).cuda()  "
                     "# caf\u00e9\n".encode("latin-1"))
    path.chmod(0o750)
    fix(tmp_path, monkeypatch, capsys, "run.py")
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert path.read_bytes().decode("latin-1").endswith(
        'x = torch.zeros(2, device="cuda")  # caf\u00e9\n')


def test_a_failed_write_leaves_the_file_and_no_temporary(tmp_path, monkeypatch, capsys):
    path = tmp_path / "make.py"
    path.write_text(BEFORE)

    def broken(src, dst):
        raise OSError(28, "No space left on device", dst)

    monkeypatch.setattr(os, "replace", broken)
    code, _, err = fix(tmp_path, monkeypatch, capsys, "make.py")
    assert code == 2 and "No space left on device" in err
    assert path.read_text() == BEFORE
    assert os.listdir(tmp_path) == ["make.py"]


def test_every_corpus_fix_parses_and_settles(tmp_path, monkeypatch, capsys):
    corpus = Path(__file__).resolve().parent / "lint" / "corpus"
    for source in corpus.glob("*.py"):
        (tmp_path / source.name).write_text(source.read_text())
    fix(tmp_path, monkeypatch, capsys, ".")
    for path in tmp_path.glob("*.py"):
        ast.parse(path.read_text())
        assert not [f for f in lint_file(str(path)).findings if f.fix], path.name
    snapshot = {p.name: p.read_bytes() for p in tmp_path.glob("*.py")}
    fix(tmp_path, monkeypatch, capsys, ".")
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.py")} == snapshot


def test_fix_without_libcst_is_one_sentence(tmp_path, monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_libcst(name, *args, **kwargs):
        if name.startswith("libcst"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    (tmp_path / "make.py").write_text(BEFORE)
    monkeypatch.setattr(builtins, "__import__", no_libcst)
    code, _, err = fix(tmp_path, monkeypatch, capsys, "make.py")
    assert code == 2
    assert err == ("xferbench: --fix needs LibCST, which is not installed: pip install "
                   "'xferbench[lint]' (or libcst)\n")
    assert (tmp_path / "make.py").read_text() == BEFORE
