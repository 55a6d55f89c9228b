"""The device's state while it works, read through a scripted NVML on the CPU: each clock and
throttle case pinned (nvbench's rule: below 75% of the maximum clock, or power or thermal
throttling, taints a sample), the link under load, and the caution a degraded link earns on
the page and in a citation."""

from __future__ import annotations

import sys
import types

import pytest

from xferbench import telemetry
from xferbench.analysis.provenance import link_caution
from xferbench.devices import Device
from xferbench.metadata import (
    MachineMetadata,
    collect_nvml,
    link_peak_bytes_per_s,
    pcie_theoretical_bytes_per_s,
)
from xferbench.telemetry import ClockReader, ClockState

CUDA = Device("cuda", 0)


def fake_nvml(sm=1980, max_sm=1980, reasons=0, gen=5, width=16, legacy=False, fails=False):
    """A pynvml that answers as scripted; ``legacy``: only the old throttle-reasons call."""
    nv = types.SimpleNamespace(NVML_CLOCK_SM=1, calls=[])

    def init():
        if fails:
            raise RuntimeError("NVML Shared Library Not Found")

    nv.nvmlInit = init
    nv.nvmlDeviceGetHandleByPciBusId = lambda bus: ("bus", bus)
    nv.nvmlDeviceGetHandleByIndex = lambda i: ("index", i)
    nv.nvmlDeviceGetMaxClockInfo = lambda h, kind: max_sm
    nv.nvmlDeviceGetClockInfo = lambda h, kind: nv.calls.append("clock") or nv.sm
    reason_call = "nvmlDeviceGetCurrentClocksThrottleReasons" if legacy else \
        "nvmlDeviceGetCurrentClocksEventReasons"
    setattr(nv, reason_call, lambda h: nv.reasons)
    nv.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: gen
    nv.nvmlDeviceGetCurrPcieLinkWidth = lambda h: width
    nv.sm, nv.reasons = sm, reasons
    return nv


@pytest.fixture
def nvml(monkeypatch):
    def install(**kw):
        nv = fake_nvml(**kw)
        monkeypatch.setitem(sys.modules, "pynvml", nv)
        return nv
    return install


@pytest.mark.parametrize(("sm", "reasons", "slowed"), [
    (1980, 0, None),
    (1755, 0, None),  # a power-capped H200 still runs above 75%: kept
    (1000, 0, "SM clock 1000 MHz, below 75% of its maximum 1980 MHz"),
    (1980, 0x1, None),  # GPU idle is not a slowdown
    (1980, 0x20, "thermal throttling"),
    (1980, 0x40, "thermal throttling"),
    (1980, 0x4, "power throttling"),
    (1980, 0x80, "power throttling"),
    (1980, 0x8, "hw_slowdown throttling"),
    (1980, 0x4 | 0x20, "power and thermal throttling"),
])
def test_each_clock_and_throttle_case_is_read_as_nvbench_reads_it(nvml, sm, reasons, slowed):
    nvml(sm=sm, reasons=reasons)
    state = ClockReader(CUDA).read()
    assert state is not None and state.sm_mhz == sm and state.max_mhz == 1980
    assert state.slowed == slowed


def test_an_older_nvml_answers_through_its_throttle_reasons_call(nvml):
    nvml(reasons=0x40, legacy=True)
    assert ClockReader(CUDA).read().reasons == ("thermal",)


def test_without_nvml_there_is_no_telemetry_and_the_reader_says_why(nvml, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    reader = ClockReader(CUDA)
    assert reader.read() is None and "not installed" in reader.why_not
    nvml(fails=True)
    reader = ClockReader(CUDA)
    assert reader.read() is None and "NVML is unavailable: NVML Shared Library" in reader.why_not


def test_a_backend_with_clock_info_answers_for_itself(monkeypatch):
    module = types.SimpleNamespace(clock_info=lambda index: {
        "sm_clock_mhz": 345.0, "max_sm_clock_mhz": 1980.0, "throttle_reasons": []})
    monkeypatch.setattr(telemetry, "module_of", lambda kind: module)
    state = ClockReader(Device("emu", 0)).read()
    assert state == ClockState(345.0, 1980.0, ()) and "below 75%" in state.slowed


def test_the_cpu_and_unknown_backends_have_no_telemetry(monkeypatch):
    assert ClockReader(Device("cpu")).read() is None
    monkeypatch.setattr(telemetry, "module_of", lambda kind: types.SimpleNamespace())
    assert ClockReader(Device("xpu", 0)).read() is None


@pytest.mark.parametrize(("meta", "caution"), [
    ({"pcie_gen_load": 5, "pcie_width_load": 16, "pcie_gen_max": 5, "pcie_width_max": 16}, None),
    ({"pcie_gen_load": 4, "pcie_width_load": 16, "pcie_gen_max": 5, "pcie_width_max": 16},
     "Gen4 x16 under load, below its maximum Gen5 x16"),
    ({"pcie_gen_load": 5, "pcie_width_load": 8, "pcie_gen_max": 5, "pcie_width_max": 16},
     "Gen5 x8 under load, below its maximum Gen5 x16"),
    # an idle reading (Gen1) is no evidence: only the one under load counts
    ({"pcie_gen": 1, "pcie_width": 16, "pcie_gen_max": 5, "pcie_width_max": 16}, None),
    ({}, None),
])
def test_a_link_below_its_maximum_under_load_earns_a_caution(meta, caution):
    got = link_caution(MachineMetadata.from_dict(meta))
    assert (got is None) if caution is None else (caution in got and "not PyTorch" in got)


def test_the_caution_travels_with_the_citation(tmp_path):
    """A degraded link in a series' sidecar reaches the page's provenance and the citation's
    sentence and table."""
    import json

    from conftest import committed_results
    from manyversions import write_many_versions

    from xferbench.analysis.citation import cite, rows, sentence
    from xferbench.analysis.provenance import provenance
    from xferbench.results import load

    root = tmp_path / "results"  # a GPU's series: a CPU run's copies cross no PCIe link
    write_many_versions(committed_results(), root, 2)
    for side in root.glob("*/*.metadata"):
        data = json.loads(side.read_text())
        data["metadata"].update(pcie_gen_load=3, pcie_width_load=16, pcie_gen_max=5,
                                pcie_width_max=16)
        side.write_text(json.dumps(data))
    rs = load(str(root))
    assert all(p.caution and "Gen3 x16 under load" in p.caution for p in provenance(rs))
    r = next(r for r in rs if r.ok)
    c = cite(rs, r.benchmark, {k: str(v) for k, v in r.param_dict.items()}, torch=r.torch,
             machine=r.machine, allow_quick=True)
    assert "Caution: the PCIe link ran at Gen3 x16 under load" in sentence(c)
    assert ("caution", c.caution) in rows(c) and "Gen3 x16 under load" in dict(rows(c))[
        "PCIe link"]


GEN5_X16 = pcie_theoretical_bytes_per_s(5, 16)


@pytest.mark.parametrize(("meta", "peak"), [
    # a VM's virtual root port reports Gen1 as the device-and-system maximum: the GPU's own
    # maximum is the link's
    ({"pcie_gen_max": 1, "pcie_width_max": 16, "pcie_gen_gpu_max": 5}, GEN5_X16),
    # no GPU maximum read: the link seen under load, where it is faster than NVML's maximum
    ({"pcie_gen_max": 3, "pcie_width_max": 16, "pcie_gen_load": 5, "pcie_width_load": 16},
     GEN5_X16),
    ({"pcie_gen_max": 5, "pcie_width_max": 16, "pcie_gen_load": 4, "pcie_width_load": 16},
     GEN5_X16),
    ({"pcie_gen": 4, "pcie_width": 16}, pcie_theoretical_bytes_per_s(4, 16)),  # no maximum
])
def test_the_pcie_share_is_of_the_gpus_own_link_checked_against_the_link_under_load(meta, peak):
    assert link_peak_bytes_per_s(meta) == pytest.approx(peak)
    # a record made before the GPU's own maximum was read: the link under load still counts
    old = MachineMetadata(pcie_theoretical_bytes_per_s=pcie_theoretical_bytes_per_s(3, 16),
                          pcie_gen_load=5, pcie_width_load=16)
    assert old.share_of_link(GEN5_X16 / 1e9) == pytest.approx(1.0)


def test_a_share_above_100_percent_is_flagged_wherever_it_is_shown():
    from xferbench.analysis.provenance import over_link_caution
    from xferbench.units import share_text

    assert share_text(0.85) == "85%" and share_text(None) == "n/a"
    assert share_text(1.12).startswith("112% (over the link's rate: its maximum is misread")
    assert over_link_caution(1.0) is None
    assert "112% of the PCIe link's theoretical rate: no copy outruns its link" in \
        over_link_caution(1.12)


def test_a_citation_over_its_link_says_the_link_was_misread():
    from xferbench.analysis.citation import citation, sentence
    from xferbench.results import Result, ResultSet

    r = Result(benchmark="bench_copies.Copy.track_completion_s",
               params=(("direction", "h2d"), ("host_memory", "pinned"), ("sync", "blocking"),
                       ("layout", "one"), ("size", "64MiB")),
               value=64 * 2**20 / 70e9, unit="seconds", machine="box", commit="a" * 40,
               date_ms=1, torch="2.13.0", cuda="12.8", python="3.12", env_name="e",
               path="/nowhere.json", device="cuda:0")
    meta = MachineMetadata(device="cuda:0", gpu_name="H200", pcie_gen_max=5, pcie_width_max=16,
                           pcie_theoretical_bytes_per_s=GEN5_X16)

    class Fixed(ResultSet):
        def metadata_for(self, result):
            return meta

        def gpu_for(self, result):
            return "H200"

    c = citation(Fixed([r], {}, "/nowhere"), r, figure="f.svg")
    assert c.share_of_pcie > 1 and "no copy outruns its link" in sentence(c)


def test_nvml_records_the_gpus_own_maximum_generation(monkeypatch):
    """nvmlDeviceGetGpuMaxPcieLinkGeneration (the GPU's own) beside the device-and-system
    maximum that a virtual root port caps; an NVML without the call records None."""
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: "h", nvmlSystemGetDriverVersion=lambda: "560.1",
        nvmlDeviceGetCurrPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetCurrPcieLinkWidth=lambda h: 16,
        nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 1,
        nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16,
        nvmlDeviceGetGpuMaxPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetClockInfo=lambda h, c: 1980, NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    out = collect_nvml(None, 0)
    assert (out["pcie_gen_max"], out["pcie_gen_gpu_max"], out["nvml"]) == (1, 5, "ok")
    assert link_peak_bytes_per_s(out) == pytest.approx(GEN5_X16)
    del fake.nvmlDeviceGetGpuMaxPcieLinkGeneration
    assert collect_nvml(None, 0)["pcie_gen_gpu_max"] is None


def test_a_small_pageable_copy_is_cited_as_cache_hot(tmp_path):
    from xferbench.analysis.provenance import cache_caution
    from xferbench.metadata import last_level_cache_bytes
    from xferbench.results import Result

    for index, (kind, size) in enumerate([("Data", "48K"), ("Instruction", "64K"),
                                          ("Unified", "32768K")]):
        entry = tmp_path / f"index{index}"
        entry.mkdir()
        (entry / "type").write_text(kind + "\n")
        (entry / "size").write_text(size + "\n")
    assert last_level_cache_bytes(str(tmp_path)) == 32 * 2**20
    assert last_level_cache_bytes(str(tmp_path / "none")) is None

    def copy(host_memory: str, size: str) -> Result:
        return Result(benchmark="bench_copies.Copy.track_completion_s",
                      params=(("direction", "h2d"), ("host_memory", host_memory),
                              ("sync", "blocking"), ("layout", "one"), ("size", size)),
                      value=1e-3, unit="seconds", machine="m", commit="c", date_ms=1,
                      torch="2.13.0", cuda="12.8", python="3.12", env_name="e", path="/x")

    meta = MachineMetadata(cpu_cache_bytes=32 * 2**20)
    assert "fits the CPU's 32 MiB last-level cache" in cache_caution(copy("pageable", "4MiB"),
                                                                    meta)
    assert cache_caution(copy("pageable", "64MiB"), meta) is None
    assert cache_caution(copy("pinned", "4MiB"), meta) is None  # read by the copy engine
    # an older record, its cache not read: the sizes any server CPU's cache holds
    assert cache_caution(copy("pageable", "4MiB"), MachineMetadata()) is not None
    assert cache_caution(copy("pageable", "64MiB"), MachineMetadata()) is None
