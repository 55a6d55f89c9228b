"""``xferbench lint --fix`` never changes what a program means nor loses what the user has
every fix of the project's corpus leaves a program that compiles and binds the
same names in every scope; a fix inside a function never turns a global or a closure's
variable into a local; a symbolic link's target is fixed and the link kept; a hard link stays
one file; an edit saved while lint works is not overwritten."""

from __future__ import annotations

import os
import symtable
from pathlib import Path

import pytest

from xferbench.cli import main
from xferbench.lint import lint_text
from xferbench.lint.runner import lint_file

pytest.importorskip("libcst", reason="--fix needs LibCST (xferbench[lint])")

CORPUS = Path(__file__).resolve().parent / "lint" / "corpus"
FIXABLE = ("import torch\n\n\ndef make(n, device: torch.device):\n"
           "    return torch.zeros(n).to(device)\n")
FIXED = ("import torch\n\n\ndef make(n, device: torch.device):\n"
         "    return torch.zeros(n, device=device)\n")


def fix(folder: Path, monkeypatch, capsys, *paths: str) -> tuple[int, str]:
    monkeypatch.chdir(folder)
    code = main(["lint", "--fix", *paths])
    return code, capsys.readouterr().err


def bindings(source: str) -> dict[str, frozenset]:
    """Scope name -> each name with whether it is local, global, free or a parameter."""
    out = {}
    todo = [symtable.symtable(source, "f.py", "exec")]
    while todo:
        table = todo.pop()
        key = f"{table.get_type()} {table.get_name()} {table.get_lineno()}"
        out[key] = frozenset((s.get_name(), s.is_local(), s.is_global(), s.is_free(),
                              s.is_parameter()) for s in table.get_symbols())
        todo.extend(table.get_children())
    return out


def test_every_corpus_fix_compiles_and_binds_the_same_names(tmp_path, monkeypatch, capsys):
    before = {}
    for source in CORPUS.glob("*.py"):
        text = source.read_text()
        (tmp_path / source.name).write_text(text)
        before[source.name] = bindings(text)
    fix(tmp_path, monkeypatch, capsys, ".")
    changed = 0
    for path in tmp_path.glob("*.py"):
        text = path.read_text()
        compile(text, path.name, "exec")
        assert bindings(text) == before[path.name], path.name
        changed += text != (CORPUS / path.name).read_text()
    assert changed >= 2  # the corpus has fixes to make


@pytest.mark.parametrize("body", [
    "t = torch.zeros(3)\n\ndef move(dev):\n    t.to(dev)\n    return t\n",
    "t = torch.zeros(3)\n\ndef move(dev):\n    global t\n    t.to(dev)\n",
    "def outer(dev):\n    t = torch.zeros(3)\n\n    def inner():\n        nonlocal t\n"
    "        t.to(dev)\n    return inner\n",
    "def outer(dev):\n    t = torch.zeros(3)\n\n    def inner():\n        t.to(dev)\n"
    "        return t\n    return inner\n",
], ids=["global", "declared-global", "nonlocal", "closure"])
def test_a_discarded_move_of_a_variable_not_local_to_the_function_is_not_fixed(body):
    source = "import torch\n" + body
    findings = lint_text(source, "t.py").findings
    assert [(f.code, f.fix) for f in findings] == [("XB103", None)]


def test_a_discarded_move_of_a_local_or_a_module_global_is_fixed():
    local = "import torch\n\ndef move(dev):\n    t = torch.zeros(3)\n    t.to(dev)\n    return t\n"
    module = "import torch\nt = torch.zeros(3)\nt.to('cuda')\n"
    assert [f.fix for f in lint_text(local, "t.py").findings] == ["t = t.to(dev)"]
    assert [f.fix for f in lint_text(module, "t.py").findings] == ["t = t.to('cuda')"]


def test_fix_through_a_symbolic_link_fixes_the_target_and_keeps_the_link(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "src").mkdir()
    target = tmp_path / "src" / "make.py"
    target.write_text(FIXABLE)
    link = tmp_path / "make.py"
    link.symlink_to(target)
    fix(tmp_path, monkeypatch, capsys, "make.py")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == FIXED
    assert sorted(os.listdir(tmp_path / "src")) == ["make.py"]


def test_fix_of_a_hard_linked_file_keeps_one_file(tmp_path, monkeypatch, capsys):
    first = tmp_path / "make.py"
    first.write_text(FIXABLE)
    second = tmp_path / "copy_of_make.txt"
    os.link(first, second)
    fix(tmp_path, monkeypatch, capsys, "make.py")
    assert first.stat().st_ino == second.stat().st_ino and first.stat().st_nlink == 2
    assert second.read_text() == FIXED


def test_an_edit_saved_while_lint_works_is_not_lost(tmp_path, monkeypatch, capsys):
    import xferbench.lint.runner as runner

    path = tmp_path / "make.py"
    path.write_text(FIXABLE)
    edit = FIXABLE + "# the user's edit, saved meanwhile\n"
    real = runner.fix_source

    def slow_fix(raw, findings):
        out = real(raw, findings)
        path.write_text(edit)  # the editor saves while lint works
        return out

    monkeypatch.setattr(runner, "fix_source", slow_fix)
    code, err = fix(tmp_path, monkeypatch, capsys, "make.py")
    assert path.read_text() == edit
    assert "make.py: changed while xferbench lint --fix worked on it; not fixed (run it " \
           "again)" in err
    assert code == 1  # the finding is still there
    assert [f.code for f in lint_file(str(path)).findings] == ["XB102"]
