"""``xferbench check``: on the CPU one sentence and exit 2; on the emulated device each figure
with "no reference" and exit 0, one verdict per device with ``--devices all``, nothing written
unless ``--results`` keeps the copies as a quick series. What a real GPU's figures would make
of it (a figure below its range, above its link, a device far behind the others) is checked on
fixture figures: no GPU measured them.

The emulated runs are fresh processes (this one never loads emu), skipped, saying why, where
emu cannot be built."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import emu
import pytest
from conftest import slow_fixture

from xferbench.analysis.reference import judge
from xferbench.cli import main
from xferbench.commands import check
from xferbench.devices import Device
from xferbench.errors import ExitCode, XferbenchError
from xferbench.measurement import Measurement
from xferbench.metadata import MachineMetadata
from xferbench.practices.health import HealthFigure, check_copies
from xferbench.results import load

REPO = Path(__file__).resolve().parents[1]
AUTOLOAD = str(REPO / "tests" / "emu" / "autoload")
FIGURES = ("pinned H2D", "pinned D2H", "pageable H2D", "pageable D2H", "d2d (bytes copied once)",
           ".item() round trip")


def _emu_env(devices: int) -> dict[str, str]:
    try:
        emu.build()  # not load(): this process stays off the emulated device
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    return {"XFERBENCH_EMU": "1", "PYTHONPATH": AUTOLOAD, "XFERBENCH_EMU_DEVICES": str(devices),
            "XFERBENCH_QUICK": "", "XFERBENCH_DEVICE": ""}


def _check(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xferbench", "check", *args], cwd=cwd,
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
@slow_fixture
def two_devices(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``check --devices all --results`` on two emulated devices: the run and its folder."""
    cwd = tmp_path_factory.mktemp("check2")
    proc = _check(cwd, _emu_env(2), "--devices", "all", "--quick", "--size", "1MiB",
                  "--results", "kept")
    return proc, cwd / "kept"


def _figure_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("  ")]


@pytest.mark.slow
def test_the_cpu_has_nothing_to_check_one_sentence_exit_2(tmp_path):
    proc = _check(tmp_path, {"XFERBENCH_EMU": "0"})
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "nothing to check on the CPU" in lines[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_emulated_device_has_no_reference_for_any_figure_and_writes_nothing(tmp_path):
    proc = _check(tmp_path, _emu_env(1), "--quick", "--size", "1MiB")
    assert proc.returncode == 0, proc.stderr
    lines = _figure_lines(proc.stdout)
    assert [line.split("  ")[1].strip() for line in lines] == list(FIGURES)
    assert all(line.endswith("no reference") for line in lines), lines
    assert "emu:0: nothing judged: an emulated device" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # nothing filed without --results


def test_two_emulated_devices_get_one_verdict_each(two_devices):
    proc, _ = two_devices
    assert proc.returncode == 0, proc.stderr
    verdicts = [line for line in proc.stdout.splitlines() if line.startswith("emu:")]
    assert [v.split(":")[:2] for v in verdicts] == [["emu", "0"], ["emu", "1"]]
    assert all("nothing judged: an emulated device" in v for v in verdicts)
    lines = _figure_lines(proc.stdout)
    assert len(lines) == 2 * len(FIGURES) and all(x.endswith("no reference") for x in lines)
    assert "no outlier named: the devices are emulated" in proc.stdout


def test_results_keeps_each_devices_copies_as_a_quick_series(two_devices):
    proc, kept = two_devices
    assert "kept as a quick series (not for citation)" in proc.stderr
    rs = load(str(kept))
    assert {key.how for key in rs.series()} == {"quick", "on emu:1, quick"}
    assert all(key.reasons() for key in rs.series())  # not for citation
    measured = {(r.benchmark.rsplit(".", 1)[1], r.param_dict["direction"],
                 r.param_dict["host_memory"]) for r in rs if r.ok}
    assert measured == {("track_device_s", "h2d", "pinned"), ("track_device_s", "d2h", "pinned"),
                        ("track_device_s", "d2d", "pageable"),
                        ("track_completion_s", "h2d", "pageable"),
                        ("track_completion_s", "d2h", "pageable")}


# --- what a GPU's figures make of it, on fixture figures

H200 = MachineMetadata(gpu_name="NVIDIA H200", device="cuda:0", accelerator="cuda",
                       pcie_gen=5, pcie_width=16, pcie_gen_max=5, pcie_width_max=16,
                       pcie_gen_load=5, pcie_width_load=16)
#: Fixture figures of a healthy H200 (GB/s, and us for the round trip).
HEALTHY = {"pinned_h2d": 55.0, "pinned_d2h": 53.0, "pageable_h2d": 15.0,
           "pageable_d2h": 15.0, "d2d": 1800.0, "item_roundtrip": 12.0}


def _fixture_check(index: int, meta: MachineMetadata = H200, **values: float) -> check.DeviceCheck:
    dev, meta = Device("cuda", index), replace(meta, device=f"cuda:{index}")
    m = Measurement(device=dev.name, completion_s=(1.0,))
    cases = dict(check_copies(check.CHECK_NBYTES))
    figures = tuple(HealthFigure(k, values.get(k, v), m, cases.get(k))
                    for k, v in HEALTHY.items())
    judged = tuple(judge(f.figure, f.value, meta, nbytes=f.case.nbytes if f.case else None)
                   for f in figures)
    return check.DeviceCheck(dev, meta, figures, judged)


def test_a_healthy_h200_says_so():
    c = _fixture_check(0)
    assert not c.worse
    assert c.verdict() == ("cuda:0: healthy: 4 of 6 figures within or above their ranges, "
                           "the rest without one")


def test_a_14_gbps_pinned_h2d_is_not_right_and_names_the_link():
    c = _fixture_check(0, replace(H200, pcie_gen_load=3), pinned_h2d=14.0)
    assert c.verdict().startswith("cuda:0: not right: pinned H2D 14.00 GB/s: 48-55.41 GB/s "
                                  "for NVIDIA H200")
    assert "likely cause: the link ran at Gen3 x16 under load" in c.verdict()


def test_a_copy_above_the_link_is_a_measurement_problem():
    c = _fixture_check(0, pinned_d2h=90.0)
    assert c.verdict().startswith("cuda:0: a measurement problem: pinned D2H 90.00 GB/s")


def test_the_device_far_behind_the_others_is_named(monkeypatch, capsys):
    checks = [_fixture_check(i, pinned_h2d=v) for i, v in enumerate((14.2, 57.1, 56.7, 57.1))]
    monkeypatch.setattr(check, "_devices", lambda args: [c.device for c in checks])
    monkeypatch.setattr(check, "check_device", lambda dev, nbytes, spec: checks[dev.index])
    assert main(["check", "--devices", "all"]) == ExitCode.REGRESSION
    out = capsys.readouterr().out
    assert ("outlier: cuda:0: pinned H2D 14.20 GB/s against a median of 56.90 GB/s over 4 "
            "devices") in out
    assert sum(line.startswith("outlier:") for line in out.splitlines()) == 1
    assert [line.split(":", 2)[1] for line in out.splitlines()
            if line.startswith("cuda:")] == ["0", "1", "2", "3"]


def test_devices_that_agree_name_no_outlier():
    checks = [_fixture_check(i) for i in range(3)]
    assert check.outliers(checks) == []
    text = "\n".join(check.text_lines(checks, [], check.CHECK_NBYTES))
    assert "no outlier: the 3 devices agree within 25% of their median" in text


# --- the round trip, on the accelerator under test


@pytest.mark.gpu
def test_an_item_round_trip_is_timed_on_the_call_itself(gpu_device, small_budget):
    from xferbench.practices.sync import ROUNDTRIP_CLOCK, measure_item_roundtrip

    m = measure_item_roundtrip(gpu_device, small_budget)
    samples = m.samples(ROUNDTRIP_CLOCK)
    assert m.primary_clock == ROUNDTRIP_CLOCK and len(samples) >= 3
    assert all(s > 0 for s in samples)


def test_an_item_round_trip_on_the_cpu_is_refused():
    from xferbench.practices.sync import measure_item_roundtrip

    with pytest.raises(XferbenchError, match="the CPU has no device to wait for"):
        measure_item_roundtrip(Device("cpu"))


def test_a_results_folder_that_cannot_take_the_series_is_refused_before_measuring(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "benchmarks.json").write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(check, "_devices", lambda args: [Device("cuda", 0)])
    measured = []
    monkeypatch.setattr(check, "check_device", lambda *a: measured.append(a))
    assert main(["check", "--results", str(tmp_path)]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert measured == [] and len(err) == 1 and "benchmarks.json" in err[0]
    assert (tmp_path / "benchmarks.json").read_text(encoding="utf-8") == "{not json"


def test_the_json_holds_each_figures_range_verdict_and_cause(monkeypatch, capsys):
    import json

    slow = _fixture_check(0, replace(H200, pcie_gen_load=3), pinned_h2d=14.0)
    monkeypatch.setattr(check, "_devices", lambda args: [slow.device])
    monkeypatch.setattr(check, "check_device", lambda dev, nbytes, spec: slow)
    assert main(["check", "--format", "json"]) == ExitCode.REGRESSION
    doc = json.loads(capsys.readouterr().out)
    (device,) = doc["devices"]
    first = device["figures"][0]
    assert (first["figure"], first["verdict"], first["low"], first["high"]) == (
        "pinned_h2d", "below", 48.0, 55.41)
    assert first["cause"].startswith("the link ran at Gen3 x16 under load")
    assert doc["exit"] == 1 and device["verdict"].startswith("cuda:0: not right")
