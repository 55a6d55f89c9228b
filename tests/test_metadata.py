"""Metadata: what is recorded about this machine, and "unknown" rather than a crash."""

from __future__ import annotations

import json
import os
import platform
import sys

import pytest

import xferbench
from xferbench import XferbenchError
from xferbench.devices import is_emulated
from xferbench.metadata import (
    MachineMetadata,
    _ranges,
    collect,
    collect_device,
    collect_numa,
    collect_nvml,
    collect_torch,
    pcie_theoretical_bytes_per_s,
)
from xferbench.results.machines import default_machine_name


@pytest.fixture(scope="module")
def cpu_meta():
    """The metadata as a sidecar records it."""
    return collect("cpu").to_dict()


def test_collect_is_a_typed_record_that_round_trips_through_its_dict(cpu_meta):
    meta = collect("cpu")
    assert isinstance(meta, MachineMetadata) and meta.device == "cpu"
    assert meta.capabilities is not None and meta.capabilities.pinned_memory is False
    assert MachineMetadata.from_dict(json.loads(json.dumps(cpu_meta))) == meta


def test_metadata_from_an_older_file_reads_absent_fields_as_none():
    old = MachineMetadata.from_dict({"torch": "2.4.0", "device": "cuda:0", "retired_key": 1,
                                     "capabilities": {"device": "cuda:0"}})
    assert (old.torch, old.gpu_name, old.emulated, old.capabilities) == (
        "2.4.0", None, None, None)  # a probe without its fields is no probe
    assert "retired_key" not in old.to_dict()


def test_the_share_of_the_link_is_computed_in_one_place():
    meta = MachineMetadata(pcie_theoretical_bytes_per_s=63.0e9)
    assert meta.share_of_link(50.4) == pytest.approx(0.8)
    assert meta.share_of_link(None) is None
    assert MachineMetadata().share_of_link(50.4) is None


def test_collect_on_this_machine_names_the_software(cpu_meta):
    import torch

    assert cpu_meta["xferbench"] == xferbench.__version__
    assert cpu_meta["torch"] == torch.__version__
    assert cpu_meta["python"] == platform.python_version()
    assert cpu_meta["executable"] == sys.executable
    assert cpu_meta["torch_threads"] == torch.get_num_threads()
    assert cpu_meta["has_torch_accelerator"] is hasattr(torch, "accelerator")


def test_collect_on_the_cpu_has_no_accelerator_fields(cpu_meta):
    assert cpu_meta["device"] == "cpu"
    assert cpu_meta["accelerator"] is None
    for key in ("gpu_name", "compute_capability", "multiprocessors", "device_memory_bytes",
                "pci_bus_id", "gpu_numa_node", "pcie_theoretical_bytes_per_s"):
        assert cpu_meta[key] is None, key
    # NVML is asked only about a CUDA device
    assert "nvml" not in cpu_meta
    assert cpu_meta["emulated"] is False and cpu_meta["capabilities"]["emulated"] is False


def test_collect_on_this_machine_describes_the_host(cpu_meta):
    assert cpu_meta["cpu_count"] == os.cpu_count()
    assert cpu_meta["arch"] == platform.machine()
    assert cpu_meta["cpu_model"] not in ("", None)
    if hasattr(os, "sched_getaffinity"):
        assert cpu_meta["cpu_affinity"] == _ranges(sorted(os.sched_getaffinity(0)))


def test_collect_records_the_capabilities_probe(cpu_meta):
    assert cpu_meta["capabilities"]["device"] == "cpu"
    assert cpu_meta["capabilities"]["pinned_memory"] is False


def test_collect_is_plain_json(cpu_meta):
    assert json.loads(json.dumps(cpu_meta)) == cpu_meta


def test_collect_for_an_absent_device_raises():
    with pytest.raises(XferbenchError, match="device 'tpu'"):
        collect("tpu")


def test_collect_without_torch_says_unknown(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    assert collect_torch() == {"torch": "unknown"}


def test_collect_without_nvml_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    out = collect_nvml("0000:01:00.0", 0)
    assert out["nvml"].startswith("not installed")
    assert "xferbench[nvml]" in out["nvml"]
    assert out["pcie_gen"] is None and out["driver"] is None


def test_collect_with_nvml_but_no_driver_says_unavailable():
    pytest.importorskip("pynvml")
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("NVML works on this machine")
    out = collect_nvml(None, 0)
    assert out["nvml"].startswith("unavailable: ")
    assert out["pcie_gen_max"] is None


def test_numa_node_is_none_without_a_bus_id_or_sysfs_entry():
    assert collect_numa(None) == {"gpu_numa_node": None, "gpu_numa_cpus": None}
    assert collect_numa("ffff:ff:1f.7") == {"gpu_numa_node": None, "gpu_numa_cpus": None}


def test_collect_device_on_the_cpu_is_all_none():
    out = collect_device(xferbench.resolve_device("cpu"))
    assert out["accelerator"] is None
    assert out["gpu_name"] is None
    assert "device_error" not in out


@pytest.mark.parametrize(
    ("generation", "width", "gb_per_s"),
    [
        (5, 16, 63.0),  # H100/H200 slot
        (4, 16, 31.5),  # A100
        (3, 16, 15.75),
        (4, 8, 15.75),
        (2, 16, 8.0),  # 8b/10b line code
        ("5", "16", 63.0),
    ],
)
def test_pcie_theoretical_rate_after_line_coding(generation, width, gb_per_s):
    rate = pcie_theoretical_bytes_per_s(generation, width)
    assert rate == pytest.approx(gb_per_s * 1e9, rel=2e-3)


@pytest.mark.parametrize(("generation", "width"),
                         [(None, 16), (5, None), (9, 16), ("unknown", 16), (None, None)])
def test_pcie_theoretical_rate_is_none_when_unknown(generation, width):
    assert pcie_theoretical_bytes_per_s(generation, width) is None


@pytest.mark.parametrize(
    ("cpus", "text"),
    [([0, 1, 2, 5], "0-2,5"), ([], ""), ([3], "3"), ([0, 2, 4], "0,2,4"),
     ([0, 1, 3, 4], "0-1,3-4"), (list(range(64)), "0-63")],
)
def test_cpu_ranges_are_compact(cpus, text):
    assert _ranges(cpus) == text


@pytest.mark.gpu
def test_collect_on_the_accelerator_names_the_gpu(gpu_device):
    meta = collect(gpu_device).to_dict()
    assert meta["device"] == gpu_device.name
    assert meta["accelerator"] == gpu_device.type
    assert meta["gpu_name"] not in (None, "", "unknown")
    assert meta["capabilities"]["device"] == gpu_device.name
    assert meta["emulated"] is meta["capabilities"]["emulated"] is is_emulated(gpu_device)
    assert json.loads(json.dumps(meta, default=str))["device"] == gpu_device.name
    if meta["emulated"]:  # never to be mistaken for a measurement: said at the top
        assert "emulated" in meta["capabilities"]["reason"]
        assert "emulated" in default_machine_name(MachineMetadata.from_dict(meta))


@pytest.mark.gpu
@pytest.mark.cuda_only("NVML, with CUDA's device properties,")
def test_collect_on_cuda_reads_the_device_properties_and_nvml(gpu_device):
    meta = collect(gpu_device).to_dict()
    if meta.get("hip"):
        pytest.skip("CUDA only: NVML is NVIDIA's, and this is a ROCm build")
    assert meta["emulated"] is False
    assert meta["device_memory_bytes"] > 2**30
    assert meta["compute_capability"].count(".") == 1
    assert meta["nvml"] is not None
    if meta["nvml"] == "ok" and meta["pcie_gen_max"]:
        # every PCIe slot a GPU sits in today is between Gen3 x4 and Gen6 x16
        assert 3.9e9 <= meta["pcie_theoretical_bytes_per_s"] <= 1.3e11


@pytest.mark.gpu
def test_a_run_records_the_launch_queue_depth_it_measured(gpu_device):
    from xferbench.stream_hold import can_hold_stream, launch_queue_depth

    if not can_hold_stream(gpu_device):
        pytest.skip(f"{gpu_device} has no spin to hold its stream")
    meta = collect(gpu_device, under_load=True)
    assert meta.launch_queue_depth and meta.launch_queue_depth == launch_queue_depth(gpu_device)
    assert MachineMetadata.from_dict(meta.to_dict()).launch_queue_depth == \
        meta.launch_queue_depth
