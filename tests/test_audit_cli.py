"""``xferbench audit SCRIPT [ARGS...]`` end to end (fresh processes: the script is a user's,
run as ``__main__``), on the CPU and on the emulated device; its bad input; the JSON against
its schema; and the ``xfer_audit`` fixture in a pytest run of its own."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import emu
import pytest

from xferbench.cli import main

REPO = Path(__file__).resolve().parents[1]
AUTOLOAD = str(REPO / "tests" / "emu" / "autoload")

#: A user's training script: its own arguments, a pageable batch copied non_blocking every
#: step, the loss read every step, the output read every fourth step, and a tail.
TRAIN = """\
import argparse
import sys

import torch

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--batches", type=int, default=8)
p.add_argument("--lr", type=float, default=0.1)
args = p.parse_args()
print("args", args.epochs, args.batches, args.lr)
dev = torch.accelerator.current_accelerator() or torch.device("cpu")
torch.manual_seed(0)
model = torch.nn.Linear(16, 4).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=args.lr)
for epoch in range(args.epochs):
    for i in range(args.batches):
        x = torch.randn(8, 16).to(dev, non_blocking=True)
        out = model(x)
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"loss {loss.item():.4f}")
        if i % 4 == 0:
            out.detach().cpu()
print("done")
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    return path


def schema() -> dict:
    return json.loads(resources.files("xferbench").joinpath("data", "audit.schema.json")
                      .read_text())


@pytest.fixture(scope="module")
def emu_env() -> dict[str, str]:
    try:
        emu.build()  # not load(): this process stays off the emulated device
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    return {"XFERBENCH_EMU": "1", "PYTHONPATH": AUTOLOAD}


CPU = {"XFERBENCH_EMU": "0", "CUDA_VISIBLE_DEVICES": ""}


@pytest.mark.slow
def test_a_script_with_arguments_on_the_cpu_text_report(run_python, script):
    proc = run_python("-m", "xferbench", "audit", str(script), "--batches", "6", "--lr", "0.5",
                      "--device", "cpu", env=CPU)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("args 1 6 0.5\n")  # its own arguments, its own output first
    assert "xferbench audit: 6 steps on cpu" in out and "CPU run" in out
    assert "train.py:24  `print(f\"loss {loss.item():.4f}\")`" in out
    assert "warning XB101: host waits for the device: .item() (CPU run: not paid here" in out
    assert "1 per step (6 in all, in 6 of 6 steps)" in out
    assert "train.py:18" in out and "XB102" in out  # randn then moved
    assert out.index("done\n") < out.index("xferbench audit:")


@pytest.mark.slow
def test_json_on_the_emulated_device_is_exact_and_matches_the_schema(run_python, script, emu_env):
    proc = run_python("-m", "xferbench", "audit", "--format", "json", str(script), "--epochs",
                      "2", "--batches", "4", env=emu_env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # the JSON alone: the script's prints went to stderr
    assert "args 2 4 0.1" in proc.stderr
    import jsonschema  # a test extra (not on an offline GPU check machine, which runs -m gpu)

    jsonschema.validate(data, schema())
    assert (data["device"], data["emulated"], data["cpu_run"]) == ("emu:0", True, False)
    assert data["step_count"] == 8 and data["boundary"] == "optimizer"
    assert [s["syncs"] for s in data["steps"]] == [2, 1, 1, 1, 2, 1, 1, 1]
    steps = data["steps"]
    assert all(s["h2d_pageable"] == 1 and s["non_blocking_refused"] == 1 for s in steps[1:])
    assert steps[0]["module_moves"] == 2 and steps[0]["h2d"] == 3  # the model moved first
    assert data["script"] == {"path": str(script), "args": ["--epochs", "2", "--batches", "4"],
                              "exit_status": 0}
    lines = {(f["kind"], f["site"]["line"], f["lint"], f["count"]) for f in data["findings"]}
    assert ("sync", 24, "XB101", 8) in lines and ("sync", 26, "XB101", 2) in lines
    assert ("created_then_moved", 18, "XB102", 8) in lines


@pytest.mark.slow
def test_the_audits_options_may_follow_the_scripts_arguments_and_dash_dash_ends_them(
        run_python, script, tmp_path):
    report = tmp_path / "report.json"
    proc = run_python("-m", "xferbench", "audit", str(script), "--lr", "0.2", "--steps", "3",
                      "--out", str(report), "--format=json", "--", "--batches", "5",
                      "--device", env=CPU)
    # the script got --lr 0.2 --batches 5 --device (argparse refuses its unknown --device)
    assert proc.returncode == 2 and "unrecognized arguments: --device" in proc.stderr
    data = json.loads(report.read_text())
    assert data["script"]["args"] == ["--lr", "0.2", "--batches", "5", "--device"]
    assert data["script"]["exit_status"] == 2 and data["steps_limit"] == 3
    ok = run_python("-m", "xferbench", "audit", "--steps", "2", "--device", "cpu",
                    "--format", "json", "--out", str(report), str(script), env=CPU)
    assert ok.returncode == 0, ok.stderr
    data = json.loads(report.read_text())
    assert data["step_count"] == 2 and data["stopped_at_limit"]
    assert "loss" in ok.stdout  # with --out, the script keeps its stdout


@pytest.mark.parametrize(("body", "status", "says"), [
    ("import torch\nprint(torch.ones(2).sum().item())\nraise ValueError('its own error')\n",
     1, "ValueError: its own error"),
    ("import sys\nsys.exit(3)\n", 3, ""),
    ("import sys\nsys.exit('bad things')\n", 1, "bad things"),
])
def test_a_failing_script_keeps_its_error_and_status_with_the_partial_report(
        tmp_path, body, status, says, capsys):
    path = tmp_path / "fails.py"
    path.write_text(body)
    assert main(["audit", "--device", "cpu", str(path)]) == status
    out, err = capsys.readouterr()
    assert says in err
    if "Error" in says:  # as Python shows it: from the script's own frame
        assert err.startswith("Traceback (most recent call last):\n  File "
                              f"\"{path}\", line 3, in <module>"), err
    assert "no step boundary was seen" in out
    assert f"the script exited with status {status}" in out


@pytest.mark.parametrize(("argv", "says"), [
    (["nope.py"], "xferbench: the script nope.py does not exist\n"),
    (["/dev/null"], "xferbench: the script /dev/null is a character device, not a Python "
                    "script\n"),
    (["--steps", "0", "{script}"], "argument --steps: --steps '0' is not a number of steps"),
    (["{script}", "--steps", "-2"], "argument --steps: --steps '-2' is not a number of steps"),
    (["--device", "tpu", "{script}"], "xferbench: device 'tpu' is not a device type"),
    (["--results", "{script}.missing", "{script}"], "benchmarks.json is missing"),
])
def test_bad_input_is_one_sentence_and_exit_2(script, argv, says, capsys):
    argv = [a.replace("{script}", str(script)) for a in argv]
    try:
        status = main(["audit", *argv])
    except SystemExit as exc:  # argparse's own usage error
        status = exc.code
    out, err = capsys.readouterr()
    assert status == 2
    assert err.count("\n") == 1 and says in err
    assert out == ""  # the script never ran


FIXTURE_TESTS = """\
import torch


def train(steps, read):
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        loss = model(torch.ones(2, 4, device="cpu")).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if read:
            loss.item()


def test_within_budget(xfer_audit):
    train(3, read=False)
    assert xfer_audit.per_step.syncs == 0
    assert xfer_audit.per_step.h2d_pageable_bytes == 0
    assert len(xfer_audit.steps) == 3


def test_over_budget(xfer_audit):
    train(3, read=True)
    assert xfer_audit.per_step.syncs <= 0
"""


@pytest.mark.slow
def test_the_fixture_budgets_a_test_and_a_broken_budget_shows_the_report(run_python, tmp_path):
    (tmp_path / "test_budget.py").write_text(FIXTURE_TESTS)
    proc = run_python("-m", "pytest", "-q", "-p", "no:cacheprovider", "--xfer-device", "cpu",
                      str(tmp_path / "test_budget.py"), env=CPU)
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout + proc.stderr
    report = proc.stdout[proc.stdout.index("xferbench audit"):]
    assert "3 steps on cpu" in report and "host waits for the device: .item()" in report
    assert "test_budget.py:13" in report
