"""``xferbench lint`` on Jupyter notebooks: the code cells linted as one program (a name made
in one cell is known in the next), each finding at ``notebook.ipynb:cell N:line:col``, IPython's
magics and shell lines passed over, a cell that does not parse said and left out; ``--fix``
leaves a notebook byte for byte and says so; ``audit`` refuses a notebook, JSON and bytes
Python cannot run, each in one sentence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from xferbench.cli import main


def notebook(*cells: str | list[str], kind: str = "code", language: str = "python",
             extra: dict | None = None) -> str:
    """A notebook (nbformat 4); a cell given as "md:..." is markdown."""
    out = []
    for source in cells:
        text = source if isinstance(source, str) else "".join(source)
        markdown = text.startswith("md:")
        out.append({"cell_type": "markdown" if markdown else kind, "metadata": {},
                    "source": text[3:] if markdown else source,
                    **({} if markdown else {"execution_count": None, "outputs": []})})
    return json.dumps({"cells": out, "metadata": {"kernelspec": {
        "language": language, "name": language}}, "nbformat": 4, "nbformat_minor": 5,
        **(extra or {})}, indent=1)


TRAIN = notebook(
    "md:# Training\n",
    ["%pip install torch\n", "import torch\n", "device = torch.device('cuda')\n",
     "!nvidia-smi\n"],
    "md:Make a buffer\n",
    ["%%time\n", "files = !ls\n", "torch.zeros?\n", "t = torch.zeros(3)\n", "t.to(device)\n"],
    ["%%bash\n", "echo not python\n"],
    "model = torch.nn.Linear(3, 1).to(device)\nopt = torch.optim.SGD(model.parameters())\n"
    "for step in range(10):\n    x = torch.ones(4, 3).to(device)\n"
    "    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
    "    print(loss.item())  # noqa: XB101\n",
    "def broken(:\n",
)


def lint(folder: Path, monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(folder)
    try:
        code = main(["lint", *args])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def findings(out: str) -> list[str]:
    """"where: CODE" of each finding line."""
    return [" ".join(m.groups()) for line in out.splitlines()
            if (m := re.match(r"^(\S.*?:\d+:\d+:) (XB\d+) ", line))]


def test_a_notebooks_code_cells_are_linted_at_their_cell_and_line(tmp_path, monkeypatch,
                                                                   capsys):
    (tmp_path / "train.ipynb").write_text(TRAIN)
    code, out, err = lint(tmp_path, monkeypatch, capsys, "train.ipynb")
    assert code == 1
    # cells count from 1, markdown included; the %%time line is line 1 of cell 4
    assert findings(out) == ["train.ipynb:cell 4:5:1: XB103", "train.ipynb:cell 6:4:9: XB102"]
    assert "(--fix leaves notebooks as they are: write `t = t.to(device)`)" in out
    assert "write `torch.ones(4, 3, device=device)`" in out  # device: made in cell 2
    assert err.splitlines()[0] == ("xferbench lint: train.ipynb:cell 7:1:11: cannot parse: "
                                   "invalid syntax (cell not linted)")


def test_json_and_sarif_name_the_cell(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.ipynb").write_text(TRAIN)
    _, out, _ = lint(tmp_path, monkeypatch, capsys, "train.ipynb", "--format", "json")
    rows = json.loads(out)
    assert [(r["cell"], r["line"], r["code"]) for r in rows] == [(4, 5, "XB103"),
                                                               (6, 4, "XB102")]
    _, out, _ = lint(tmp_path, monkeypatch, capsys, "train.ipynb", "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    assert [r["properties"]["cell"] for r in results] == [4, 6]
    assert not any("fixes" in r for r in results)


def test_fix_leaves_a_notebook_byte_for_byte_and_says_so(tmp_path, monkeypatch, capsys):
    pytest.importorskip("libcst", reason="--fix needs LibCST (xferbench[lint])")
    path = tmp_path / "train.ipynb"
    path.write_text(TRAIN)
    before = path.read_bytes(), path.stat().st_mtime_ns
    code, _, err = lint(tmp_path, monkeypatch, capsys, "--fix", "train.ipynb")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert code == 1 and "fixed" not in err
    assert ("xferbench lint: train.ipynb: --fix leaves notebooks as they are (a cell's code "
            "is a string inside JSON); make the rewrites the findings name in the notebook"
            in err.splitlines())


def test_a_folder_walk_lints_notebooks_but_not_their_checkpoints(tmp_path, monkeypatch,
                                                                 capsys):
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "train.ipynb").write_text(TRAIN)
    (tmp_path / "nb" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "nb" / ".ipynb_checkpoints" / "train-checkpoint.ipynb").write_text(TRAIN)
    _, out, _ = lint(tmp_path, monkeypatch, capsys, ".")
    assert {line.split(":")[0] for line in findings(out)} == {"./nb/train.ipynb"}, out


@pytest.mark.parametrize(("cells", "found"), [
    (["import torch\n", "t = torch.zeros(2)\n", "t.cuda()\n"], ["cell 3:1:1: XB103"]),
    ([["import torch\n", "x = !ls\n", "if True:\n", "    %time y = 1\n",
       "    torch.zeros(2).cuda()\n"]], ["cell 1:5:5: XB102", "cell 1:5:5: XB103"]),
    (["from __future__ import annotations\nimport torch\n",
      "from __future__ import annotations\nt = torch.ones(1)\nt.cuda()\n"],
     ["cell 2:3:1: XB103"]),
    (["%%writefile helper.py\nimport torch\ntorch.zeros(1).cuda()\n"], []),
])
def test_magics_shell_lines_and_cell_magics_are_passed_over(tmp_path, monkeypatch, capsys,
                                                           cells, found):
    (tmp_path / "n.ipynb").write_text(notebook(*cells))
    _, out, err = lint(tmp_path, monkeypatch, capsys, "n.ipynb")
    assert [f.removeprefix("n.ipynb:") for f in findings(out)] == found, err


@pytest.mark.parametrize(("text", "says"), [
    ("{not json", "n.ipynb: not a Jupyter notebook (not valid JSON: "),
    (json.dumps({"worksheets": [], "nbformat": 3}), "n.ipynb: an nbformat 3 notebook, which "
                                                     "lint does not read"),
    (notebook("x <- 1\n", language="R"), "n.ipynb: a notebook in r, not Python; skipped"),
    (json.dumps([1, 2]), "n.ipynb: not a Jupyter notebook (no cells); skipped"),
])
def test_a_file_that_is_no_python_notebook_is_one_sentence(tmp_path, monkeypatch, capsys,
                                                           text, says):
    (tmp_path / "n.ipynb").write_text(text)
    code, out, err = lint(tmp_path, monkeypatch, capsys, "n.ipynb")
    assert code == 2 and out == "" and err.startswith(f"xferbench lint: {says}"), err


@pytest.mark.parametrize(("name", "data", "says"), [
    ("train.ipynb", TRAIN.encode(), "is a Jupyter notebook, which audit does not run: export "
                                    "its code with `jupyter nbconvert --to script"),
    ("data.json", b"{}", "is a JSON file, not a Python script"),
    ("train.py", "import torch\n".encode("utf-16"), "cannot be run as Python: UTF-16 text, "
                                                     "which Python cannot read as source"),
    ("blob.py", b"\x7fELF\x00\x01", "cannot be run as Python: a binary file (it holds NUL "
                                    "bytes), not Python source"),
    ("odd.py", b"# -*- coding: nosuch -*-\nx = 1\n", "cannot be run as Python: its coding "
                                                     "cookie cannot be used"),
])
def test_audit_refuses_a_notebook_json_and_what_python_cannot_read(tmp_path, capsys, name,
                                                                   data, says):
    path = tmp_path / name
    path.write_bytes(data)
    try:
        code = main(["audit", str(path)])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"xferbench: the script {path} {says}"), err
