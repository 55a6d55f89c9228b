"""``lint --fix`` on a large file: LibCST parses only the statements that hold a fix, each
alone, and the rewrite spliced back is byte for byte what a parse of the whole file gives
(layouts where no statement has its lines to itself fall back to the whole file); a 2 MB file
is linted and fixed well within a minute."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from xferbench.lint import fix as fixing
from xferbench.lint.runner import lint_file

libcst = pytest.importorskip("libcst", reason="--fix needs LibCST (xferbench[lint])")


def generated(size: int) -> str:
    """Training steps until ``size`` characters, every fourth with two fixable findings."""
    parts, i = ["import torch\n\n\n"], 0
    while sum(map(len, parts)) < size:
        moves = ("    x.to(device)\n    y = torch.ones(3).to(device)\n" if i % 4 == 0 else "")
        parts.append(f"def step_{i}(model, batch, device: torch.device):\n"
                     f"    x = torch.zeros({i % 7 + 1}, 4)\n{moves}"
                     f"    z = model(batch) * {i} + x.sum()\n"
                     f"    return {{'loss': z, 'name': 'step {i}'}}\n\n\n")
        i += 1
    return "".join(parts)


def whole_file_fix(raw: bytes, findings: list) -> bytes:
    fixes = [f for f in findings if f.fix]
    return fixing._fix_module(libcst, libcst.parse_module(raw), fixes, 0).bytes


def fixed_both_ways(tmp_path: Path, source: bytes) -> tuple[bytes, bytes]:
    path = tmp_path / "f.py"
    path.write_bytes(source)
    findings = lint_file(str(path)).findings
    assert any(f.fix for f in findings)
    return fixing.fix_source(source, findings), whole_file_fix(source, findings)


def test_fix_parses_only_the_statements_that_hold_a_fix(tmp_path, monkeypatch):
    source = generated(40_000).encode()
    parsed: list[int] = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda s: parsed.append(len(s)) or real(s))
    path = tmp_path / "big.py"
    path.write_bytes(source)
    findings = lint_file(str(path)).findings
    new = fixing.fix_source(source, findings)
    assert parsed and max(parsed) < 200 and sum(parsed) < len(source) // 10
    monkeypatch.setattr(libcst, "parse_module", real)
    assert new == whole_file_fix(source, findings)


LAYOUTS = {
    "nested blocks": "import torch\n\ndef f(device: torch.device):\n    for i in range(2):\n"
                     "        if i:\n            t = torch.zeros(2)\n            t.to(device)\n"
                     "        else: u = torch.ones(2).to(device)\n    return t\n",
    "semicolons at the top": "import torch\nd = 'cuda'; t = torch.zeros(2); t.to(device)\n",
    "a call over lines": "import torch\n\ndef f(device: torch.device):\n    return torch.zeros(\n"
                         "        3,\n        4,\n    ).to(device)  # after\n",
    "tabs and a comment": "import torch\nif True:\n\tt = torch.zeros(2)\n\tt.to('cuda')  # keep\n",
    "windows line ends": "import torch\r\nt = torch.zeros(2)\r\nt.to('cuda')\r\n"
                         "u = torch.ones(2).to('cuda')\r\n",
    "no newline at the end": "import torch\nt = torch.zeros(2)\nt.to('cuda')",
    "elif and try": "import torch\n\ndef f(device: torch.device, k):\n    if k:\n        pass\n"
                    "    elif k > 1: v = torch.ones(1).to(device)\n    try:\n        w = 1\n"
                    "    except ValueError: w = torch.eye(2).to(device)\n    return v, w\n",
    "a decorator": "import torch\n\ndef deco(x):\n    return lambda f: f\n\n"
                   "@deco(torch.zeros(2).to('cuda'))\ndef g():\n    pass\n",
}


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS)
def test_a_statement_fixed_alone_reads_as_the_whole_file_fixed(tmp_path, layout):
    ours, whole = fixed_both_ways(tmp_path, layout.encode())
    assert ours == whole and ours != layout.encode()


@pytest.mark.parametrize("encoding", ["latin-1", "utf-8-sig"])
def test_an_encoded_file_is_fixed_in_its_own_encoding(tmp_path, encoding):
    text = ("# -*- coding: latin-1 -*-\n" if encoding == "latin-1" else "") + \
        "import torch\nt = torch.zeros(2)  # caf\u00e9\nt.to('cuda')\n"
    ours, whole = fixed_both_ways(tmp_path, text.encode(encoding))
    assert ours == whole
    assert ours.decode(encoding).endswith("# caf\u00e9\nt = t.to('cuda')\n")


@pytest.mark.slow
def test_a_2mb_file_is_linted_and_fixed_well_within_a_minute(tmp_path):
    path = tmp_path / "generated.py"
    path.write_text(generated(2_000_000))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "xferbench", "lint", "--fix", str(path)],
                          capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - started
    fixed = done.stderr.count("\n") and int(done.stderr.split("fixed ")[1].split()[0])
    assert done.returncode == 1 and fixed > 5_000, done.stderr[-500:]
    assert elapsed < 120, elapsed  # a few seconds here; 2.5 minutes and gigabytes before
    assert not [f for f in lint_file(str(path)).findings if f.fix]
