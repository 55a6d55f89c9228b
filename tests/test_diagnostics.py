"""How each figure was read, from the benchmark process to the reader: a measurement's
diagnostics (its clock, event batches, all_discarded, the SM clock per sample) leave the
Grid beside the value asv gets, travel in the progress line into the sidecar (schema 4), come
back on each Result (``diagnostics``, ``sm_mhz``), and list and cite show them; a figure of
discarded batches alone is not cited as an ordinary one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import committed_results

from xferbench.cli import main
from xferbench.measurement import Measurement
from xferbench.results import load
from xferbench.results.runrecords import Diagnostics, ProgressLine
from xferbench.results.sidecar import Sidecar, upgrade

MACHINE = "cpu-2core-vm"
COPY = "bench_copies.Copy.track_completion_s"


def test_a_measurement_says_how_its_device_time_was_read():
    m = Measurement(device="cuda:0", completion_s=(2e-3,) * 3, device_s=(1e-3, 1e-3, 1.1e-3),
                    extra={"device_clock": "held", "held_batches": 3, "redone_batches": 1,
                           "discarded_batches": 0, "sm_mhz": (1980.0, 1755.0, 1980.0)})
    read = m.diagnostics("device_s")
    assert read["device_clock"] == "held" and read["batches"] == {"held": 3, "redone": 1}
    assert read["sm_mhz"] == [1980.0, 1755.0, 1980.0] and read["all_discarded"] is False
    assert "device_clock" not in m.diagnostics("completion_s")  # a host clock has no batches
    # a clock list that does not pair one for one with the samples is not recorded
    odd = Measurement(device="cuda:0", completion_s=(1.0,), device_s=(1.0, 1.0),
                      extra={"device_clock": "held", "sm_mhz": (1980.0,)})
    assert "sm_mhz" not in odd.diagnostics("device_s")


def test_diagnostics_round_trip_through_the_progress_line_and_the_sidecar():
    read = {"clock": "device_s", "device_clock": "held, batched", "all_discarded": True,
            "batches": {"held": 2, "discarded": 2}, "warnings": ["2 event batches ..."],
            "sm_mhz": [600.0, 600.0]}
    line = ProgressLine("combination", "b.C", 1, 1, params=("1MiB",), status="measured",
                        diagnostics=(("track_device_s", read),))
    again = ProgressLine.from_dict(json.loads(json.dumps(line.to_dict())))
    assert again == line
    d = Diagnostics.from_dict({**read, "params": {"size": "1MiB"}})
    assert d.batches == (("held", 2), ("discarded", 2)) and d.not_citable
    side = Sidecar(None, diagnostics={"b.C.track_device_s": (d,)})
    back = Sidecar.from_dict(upgrade(json.loads(json.dumps(side.to_dict()))))
    assert back.diagnostics["b.C.track_device_s"] == (d,)
    assert "held, batched: 2 held, 2 discarded batches; SM clock 600 to 600 MHz" in d.text()


def test_a_version_3_sidecar_upgrades_with_no_diagnostics():
    new = upgrade({"schema_version": 3, "metadata": {}, "run": {}, "param_names": {}})
    assert new["schema_version"] == 4 and new["diagnostics"] == {}


@pytest.fixture
def results(tmp_path: Path) -> tuple[Path, Path, dict]:
    """The committed results, one Copy figure of which is given diagnostics in its sidecar:
    (the folder, the results file, that figure's params)."""
    root = tmp_path / "results"
    shutil.copytree(committed_results(), root)
    path = sorted((root / MACHINE).glob("*torch2.15.0*.json"))[0]
    first = next(r for r in load(str(root)).filter(path=str(path))
                 if r.benchmark == COPY and r.ok and r.samples)
    return root, path, dict(first.params)


def _file_diagnostics(path: Path, params: dict, samples: int, **changes) -> None:
    side = path.with_suffix(".metadata")
    data = json.loads(side.read_text())
    data["schema_version"] = 4
    data["diagnostics"] = {COPY: [{"params": params, "clock": "device_s",
                                   "device_clock": "held", "batches": {"held": 4},
                                   "all_discarded": False, "sm_mhz": [1980.0] * samples,
                                   **changes}]}
    side.write_text(json.dumps(data))


def _result(root: Path, path: Path, params: dict):
    return next(r for r in load(str(root)).filter(path=str(path))
                if r.benchmark == COPY and dict(r.params) == params)


def test_a_result_carries_its_diagnostics_and_its_clock_per_sample(results):
    root, path, params = results
    n = len(_result(root, path, params).samples)
    _file_diagnostics(path, params, n)
    r = _result(root, path, params)
    assert r.diagnostics.device_clock == "held" and r.sm_mhz == (1980.0,) * n
    _file_diagnostics(path, params, n + 1)  # one clock too many: not paired with the samples
    r = _result(root, path, params)
    assert r.diagnostics is not None and r.sm_mhz is None


def _cite(root: Path, params: dict, capsys) -> dict:
    args = ["cite", COPY, "--results", str(root), "--machine", MACHINE, "--torch", "2.15.0",
            "--format", "json", "--params", ",".join(f"{k}={v}" for k, v in params.items())]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_cite_and_list_show_how_a_figure_was_read(results, capsys):
    root, path, params = results
    _file_diagnostics(path, params, len(_result(root, path, params).samples),
                      warnings=["IQR is 12% of the median"])
    c = _cite(root, params, capsys)
    assert c["read"].startswith("device time, held: 4 held batches; SM clock 1980 to 1980")
    assert "Read on device time, held" in c["sentence"]
    assert c["read_warnings"] == ["IQR is 12% of the median"]
    assert main(["list", "--results", str(root)]) == 0
    assert "read on: device time, held (1)" in capsys.readouterr().out


def test_a_figure_of_discarded_batches_alone_is_not_for_citation(results, capsys):
    root, path, params = results
    _file_diagnostics(path, params, len(_result(root, path, params).samples),
                      all_discarded=True, batches={"held": 4, "discarded": 4})
    c = _cite(root, params, capsys)
    assert any(w.startswith("every event batch was discarded") for w in c["not_for_citation"])
    assert c["sentence"].startswith("Not for citation:")
    assert main(["list", "--results", str(root)]) == 0
    assert "1 from discarded batches alone, taken on a slowed device: not for citation" in \
        capsys.readouterr().out
