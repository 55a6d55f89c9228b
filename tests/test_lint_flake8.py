"""The flake8 plugin through flake8's own command line: ``flake8 --select XB`` reports the
same findings as ``xferbench lint`` at the same places, with the price, and flake8's own
``# noqa`` applies."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xferbench.analysis.prices import PriceBook
from xferbench.lint.report import price_of
from xferbench.lint.runner import lint_file

pytest.importorskip("flake8", reason="the flake8 plugin needs flake8 (the test extra)")

CORPUS = Path(__file__).resolve().parent / "lint" / "corpus"


def flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


def test_flake8_runs_the_same_rules_as_xferbench_lint():
    proc = flake8("--select", "XB", *sorted(p.name for p in CORPUS.glob("*.py")), cwd=CORPUS)
    assert proc.returncode == 1, proc.stderr
    got = sorted((line.split(":")[0], int(line.split(":")[1]), int(line.split(":")[2]),
                  line.split()[1]) for line in proc.stdout.splitlines())
    want = sorted((p.name, f.line, f.col + 1, f.code) for p in CORPUS.glob("*.py")
                  for f in lint_file(str(p)).findings)
    assert got == want and len(got) > 40


def test_flake8_messages_carry_the_price_and_noqa_applies(tmp_path):
    (tmp_path / "m.py").write_text(textwrap.dedent("""\
        import torch
        a = torch.zeros(3).cuda()
        b = torch.ones(3).cuda()  # noqa: XB102
        """))
    proc = flake8("--select", "XB", "m.py", cwd=tmp_path)
    # the shipped table's price: "no GPU price yet" until it holds a GPU's figure
    price = price_of(PriceBook.load(), "create_on_device")["short"]
    assert proc.stdout.splitlines() == [
        "m.py:2:5: XB102 `torch.zeros(...)` fills host memory and `.cuda(...)` then copies it to "
        f"the device: pass `device=` to the factory and skip the copy [{price}]"]


def test_flake8_lists_the_plugin():
    proc = flake8("--version", cwd=CORPUS)
    assert "xferbench: " in proc.stdout
