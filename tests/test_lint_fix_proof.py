"""``xferbench lint --fix`` offers a rewrite only where the source proves what it relies on:
the receiver of a dropped move is a tensor (a torch function's result, a tensor's method or
arithmetic, a parameter annotated ``torch.Tensor``), the argument of a factory's move is a
device; never because of a name. Otherwise the finding stays, without a fix, and says why;
and every varied training script --fix touches keeps running as it did."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.cli import main
from xferbench.lint import lint_text

SCRIPTS = Path(__file__).resolve().parent / "lint" / "fixscripts"
HEAD = "import torch\nfrom torch import Tensor\n\n"

#: Receivers of ``<name>.to(dev)`` as a statement that --fix must not assign.
UNPROVEN_TENSORS = {
    "a parameter without annotation": "def f(images, dev):\n    images.to(dev)\n",
    "a loop's target": "def f(loader, dev):\n    for x in loader:\n        x.to(dev)\n",
    "a with's target": "def f(opener, dev):\n    with opener() as t:\n        t.to(dev)\n",
    "an unpacked pair": "def f(batch, dev):\n    x, y = batch\n    x.to(dev)\n",
    "a tensor on one path only": "def f(flag, other, dev):\n    x = torch.zeros(2) if flag "
                                 "else other\n    x.to(dev)\n",
    "a rebinding to an unknown": "def f(load, dev):\n    x = torch.zeros(2)\n    x = load(x)\n"
                                 "    x.to(dev)\n",
    "an unknown function's result": "def f(load, dev):\n    images = load()\n"
                                     "    images.to(dev)\n",
    "a global another function rebinds": "x = torch.zeros(2)\n\ndef g():\n    global x\n"
                                         "    x = object()\n\nx.to('cuda')\n",
    "a parameter called torch": "def f(torch, dev):\n    t = torch.zeros(3)\n    t.to(dev)\n",
    "a zeros that is not torch's": "from mylib import zeros\n\ndef f(dev):\n    t = zeros(3)\n"
                                   "    t.to(dev)\n",
    "a star import after it": "x = torch.zeros(2)\nfrom mylib import *\nx.to('cuda')\n",
    "a tensor plus an unknown": "def f(other, dev):\n    x = torch.zeros(2) + other\n"
                                "    x.to(dev)\n",
    "a tuple-returning torch function": "def f(v, dev):\n    x = torch.max(v, 0)\n"
                                        "    x.to(dev)\n",
}
PROVEN_TENSORS = {
    "a factory's result": "def f(dev):\n    t = torch.zeros(3)\n    t.to(dev)\n",
    "a torch op's result": "def f(a: Tensor, dev):\n    t = torch.cat([a, a])\n    t.to(dev)\n",
    "a method chain": "def f(dev):\n    t = torch.arange(3).float().view(3, 1)\n    t.to(dev)\n",
    "arithmetic with a number": "def f(dev):\n    t = torch.ones(2)\n    t = t * 2 + 1\n"
                                "    t.to(dev)\n",
    "an annotated parameter": "def f(t: torch.Tensor, dev):\n    t.to(dev)\n",
    "Tensor imported from torch": "def f(t: Tensor, dev):\n    t.to(dev)\n",
    "a string annotation": "def f(t: 'torch.Tensor', dev):\n    t.to(dev)\n",
    "an index of a tensor": "def f(dev):\n    t = torch.ones(3, 3)[0]\n    t.to(dev)\n",
    "an annotated assignment": "def f(load, dev):\n    t: torch.Tensor = load()\n"
                               "    t.to(dev)\n",
    "a module's global": "t = torch.zeros(2)\nt.to('cuda')\n",
}
#: Arguments of ``torch.zeros(n).to(<arg>)``, which --fix would make ``device=<arg>``.
UNPROVEN_DEVICES = {
    "an unannotated parameter": ("def f(n, device):\n", "device"),
    "a variable holding a dtype": ("def f(n, load):\n    dev = load(torch.float16)\n", "dev"),
    "a settings object's field": ("def f(n, args):\n", "args.device"),
    "a parameter annotated as something else": ("def f(n, device: object):\n", "device"),
}
PROVEN_DEVICES = {
    "a string": ("def f(n):\n", "'cuda:1'"),
    "an index": ("def f(n):\n", "0"),
    "torch.device": ("def f(n):\n    dev = torch.device('cuda')\n", "dev"),
    "a chosen device": ("def f(n):\n    dev = 'cuda' if torch.cuda.is_available() else "
                        "'cpu'\n", "dev"),
    "an annotated parameter": ("def f(n, dev: torch.device):\n", "dev"),
    "a tensor's device": ("def f(n, x: torch.Tensor):\n", "x.device"),
    "a name bound to a string": ("def f(n):\n    where = 'cuda'\n", "where"),
}


def fixes(source: str, code: str) -> list:
    return [(f.fix, f.message) for f in lint_text(HEAD + source, "t.py").findings
            if f.code == code]


@pytest.mark.parametrize("source", UNPROVEN_TENSORS.values(), ids=UNPROVEN_TENSORS)
def test_a_move_of_a_value_not_known_to_be_a_tensor_is_reported_without_a_fix(source):
    found = fixes(source, "XB103")
    assert found, "the finding stays"
    for fix, message in found:
        assert fix is None
        assert "(no --fix: `" in message and "is not known to be a tensor" in message


@pytest.mark.parametrize("source", PROVEN_TENSORS.values(), ids=PROVEN_TENSORS)
def test_a_move_of_a_proven_tensor_is_fixed_by_assigning_it(source):
    [(fix, message)] = fixes(source, "XB103")
    name = fix.split(" = ")[0]
    assert fix.startswith(f"{name} = {name}.to(")
    assert message.endswith(f"(--fix: `{fix}`)")


@pytest.mark.parametrize("head, arg", UNPROVEN_DEVICES.values(), ids=UNPROVEN_DEVICES)
def test_a_factory_moved_by_a_value_not_known_to_be_a_device_is_not_fixed(head, arg):
    [(fix, message)] = fixes(f"{head}    return torch.zeros(n).to({arg})\n", "XB102")
    assert fix is None and f"(no --fix: `{arg}` is not known to be a device" in message


@pytest.mark.parametrize("head, arg", PROVEN_DEVICES.values(), ids=PROVEN_DEVICES)
def test_a_factory_moved_to_a_proven_device_takes_the_device(head, arg):
    source = f"{head}    return torch.zeros(n).to({arg})\n"
    [(fix, _)] = fixes(source, "XB102")
    assert fix == f"torch.zeros(n, device={arg})"


def run_all(folder: Path) -> dict[str, str]:
    """Each script's output (or its error), each run as ``python script.py`` would, in one
    interpreter."""
    driver = (
        "import contextlib, io, json, os, runpy, sys, traceback\n"
        "out = {}\n"
        "for name in sorted(os.listdir('.')):\n"
        "    if not name.endswith('.py'):\n"
        "        continue\n"
        "    buf = io.StringIO()\n"
        "    sys.argv = [name]\n"
        "    try:\n"
        "        with contextlib.redirect_stdout(buf):\n"
        "            runpy.run_path(name, run_name='__main__')\n"
        "        out[name] = buf.getvalue()\n"
        "    except Exception:\n"
        "        out[name] = 'raised: ' + traceback.format_exc(limit=-1)\n"
        "print(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", driver], cwd=folder, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_fix_keeps_every_training_script_running_as_it_did(tmp_path, monkeypatch, capsys):
    pytest.importorskip("libcst", reason="--fix needs LibCST (xferbench[lint])")
    shutil.copytree(SCRIPTS, tmp_path, dirs_exist_ok=True)
    before = run_all(tmp_path)
    assert not [n for n, out in before.items() if out.startswith("raised: ")], before
    monkeypatch.chdir(tmp_path)
    main(["lint", "--fix", "."])
    err = capsys.readouterr().err
    after = run_all(tmp_path)
    assert after == before
    changed = sorted(p.name for p in tmp_path.glob("*.py")
                     if p.read_bytes() != (SCRIPTS / p.name).read_bytes())
    assert changed == ["annotated.py", "tensors.py"]
    assert "fixed 4 findings in 2 files" in err


def test_the_sample_a_batch_moved_in_place_keeps_its_statement(tmp_path, monkeypatch, capsys):
    pytest.importorskip("libcst", reason="--fix needs LibCST (xferbench[lint])")
    path = tmp_path / "train.py"
    shutil.copy(SCRIPTS / "inplace_batch.py", path)
    monkeypatch.chdir(tmp_path)
    main(["lint", "--fix", "train.py"])
    out = capsys.readouterr().out
    assert path.read_bytes() == (SCRIPTS / "inplace_batch.py").read_bytes()
    assert "train.py:20:1: XB103 `images.to(device)` as a statement drops its result" in out
    assert "(no --fix: `images` is not known to be a tensor (an object's own .to() may move " \
           "it in place and return None); annotate it torch.Tensor to have it fixed)" in out
