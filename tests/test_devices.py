"""The device layer: resolving device names, errors that name what exists, capabilities."""

from __future__ import annotations

import os
import types

import pytest

from xferbench import XferbenchError
from xferbench import device_memory as dm
from xferbench import devices as dv
from xferbench import stream_hold as sh
from xferbench.device_memory import DoesNotFit, check_fits
from xferbench.devices import Capabilities, Device, capabilities, resolve_device


@pytest.mark.parametrize("spec", ["cpu", "CPU", " cpu ", "cpu:0"])
def test_cpu_resolves_in_any_spelling(spec):
    dev = resolve_device(spec)
    assert dev == Device("cpu")
    assert dev.name == str(dev) == "cpu"
    assert not dev.is_accelerator


def test_resolving_a_device_returns_it_unchanged():
    dev = Device("cuda", 3)  # not checked again: it was resolved once already
    assert resolve_device(dev) is dev


def test_device_name_carries_its_index():
    assert Device("cuda", 1).name == "cuda:1"
    assert Device("mps").name == "mps"
    assert Device("xpu", 0).is_accelerator


def test_auto_is_the_cpu_without_an_accelerator(no_accelerator):
    assert resolve_device("auto") == Device("cpu")


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("", "device '' is empty: use auto, cpu, cuda, cuda:N, xpu or mps"),
        ("tpu", "device 'tpu' is not a device type: use auto, cpu, cuda, cuda:N, xpu or mps"),
        ("gpu:0", "device 'gpu:0' is not a device type"),
        ("cuda:x", "device 'cuda:x' has a bad index: write it as cuda:0"),
        ("cuda:-1", "device 'cuda:-1' has a bad index"),
        ("cpu:1", "device 'cpu:1' not found: the CPU is 'cpu'"),
    ],
)
def test_bad_device_names_are_refused_in_one_sentence(spec, words):
    with pytest.raises(XferbenchError) as info:
        resolve_device(spec)
    message = str(info.value)
    assert message.startswith(words)
    assert "\n" not in message


@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "xpu", "mps", "rocm"])
def test_absent_accelerator_is_refused_naming_the_cpu_build(spec, no_accelerator):
    import torch

    with pytest.raises(XferbenchError) as info:
        resolve_device(spec)
    message = str(info.value)
    assert message.startswith(f"device '{spec}' not found: no accelerator: this PyTorch "
                              f"({torch.__version__}")
    assert "\n" not in message


@pytest.fixture
def two_cudas(monkeypatch):
    """Make the device layer believe in cuda:0 and cuda:1, current device 0."""
    monkeypatch.setattr(dv, "_accelerator_type", lambda: "cuda")
    monkeypatch.setattr(dv, "device_count", lambda kind: 2 if kind == "cuda" else 0)
    monkeypatch.setattr(dv, "_current_index", lambda kind: 0)


def test_auto_picks_the_current_accelerator(two_cudas):
    assert resolve_device("auto") == Device("cuda", 0)


@pytest.mark.parametrize(("spec", "index"), [("cuda", 0), ("cuda:1", 1), ("rocm:1", 1),
                                             ("hip", 0)])
def test_cuda_names_resolve_to_an_index_that_exists(two_cudas, spec, index):
    # ROCm builds of PyTorch expose HIP devices as "cuda"
    assert resolve_device(spec) == Device("cuda", index)


def test_missing_index_is_refused_naming_the_devices_that_exist(two_cudas):
    with pytest.raises(XferbenchError,
                       match=r"^device 'cuda:3' not found: this machine has cuda:0, cuda:1 only$"):
        resolve_device("cuda:3")


def test_other_accelerator_type_is_refused_naming_the_one_present(two_cudas):
    with pytest.raises(XferbenchError, match=r"device 'xpu' not found: this machine has cuda:0"):
        resolve_device("xpu")


def test_mps_has_no_index_but_zero(monkeypatch):
    monkeypatch.setattr(dv, "_accelerator_type", lambda: "mps")
    assert resolve_device("mps") == Device("mps")
    assert resolve_device("auto") == Device("mps")
    with pytest.raises(XferbenchError, match="this machine has mps only"):
        resolve_device("mps:1")


def test_cpu_capabilities_deny_everything_with_a_reason():
    caps = capabilities("cpu")
    assert caps == Capabilities(
        "cpu", False, False, False,
        reason="the CPU has no pinned host memory, timing events or side streams",
    )


def test_mps_capabilities_deny_pinning_and_side_streams(monkeypatch):
    monkeypatch.setattr(dv, "_accelerator_type", lambda: "mps")
    caps = capabilities("mps")
    assert (caps.pinned_memory, caps.timing_events, caps.side_streams) == (False, True, False)
    assert "unified memory" in caps.reason and "one stream" in caps.reason


def test_capabilities_of_an_absent_device_raise():
    with pytest.raises(XferbenchError):
        capabilities("tpu")


def test_capabilities_dict_has_every_field(gpu_caps):
    assert gpu_caps.to_dict() == {
        "device": "cuda:0", "pinned_memory": True, "timing_events": True,
        "side_streams": True, "reason": "", "emulated": False, "stream_hold": True,
        "devices": 1,
    }
    assert Capabilities(**gpu_caps.to_dict()) == gpu_caps


def test_a_probe_from_before_the_emulated_field_reads_as_a_real_device(gpu_caps):
    old = {k: v for k, v in gpu_caps.to_dict().items() if k != "emulated"}
    assert Capabilities(**old).emulated is False


# -- a PrivateUse1 backend (an out-of-tree device such as tests/emu's), on the CPU -------------

@pytest.fixture
def two_npus(monkeypatch):
    """Make the device layer believe in a PrivateUse1 backend named "npu" with two devices,
    current device 0, that says it is emulated."""
    import torch

    monkeypatch.setattr(torch._C, "_get_privateuse1_backend_name", lambda: "npu")
    monkeypatch.setattr(dv, "_accelerator_type", lambda: "npu")
    monkeypatch.setattr(dv, "device_count", lambda kind: 2 if kind == "npu" else 0)
    monkeypatch.setattr(dv, "_current_index", lambda kind: 0)
    monkeypatch.setattr(torch, "npu", types.SimpleNamespace(is_emulated=lambda: True),
                        raising=False)


def test_privateuse1_backend_resolves_by_the_name_it_registered(two_npus):
    assert dv.privateuse1_type() == "npu"
    assert resolve_device("auto") == Device("npu", 0)
    assert resolve_device("npu") == Device("npu", 0)
    assert resolve_device("NPU:1") == Device("npu", 1)
    assert Device("npu", 1).is_accelerator


def test_privateuse1_backend_absent_index_and_bad_names_name_what_exists(two_npus):
    with pytest.raises(XferbenchError,
                       match=r"^device 'npu:2' not found: this machine has npu:0, npu:1 only$"):
        resolve_device("npu:2")
    with pytest.raises(XferbenchError, match=r"^device 'tpu' is not a device type: use auto, "
                                             r"cpu, cuda, cuda:N, xpu, mps or npu$"):
        resolve_device("tpu")
    with pytest.raises(XferbenchError, match=r"device 'cuda' not found: this machine has npu:0"):
        resolve_device("cuda")


def test_emulated_backend_allows_everything_and_says_it_is_emulated(two_npus):
    caps = capabilities("npu:1")
    assert (caps.pinned_memory, caps.timing_events, caps.side_streams) == (True, True, True)
    assert caps.emulated is True and dv.is_emulated("npu:1") is True
    assert caps.reason.startswith("npu:1 is emulated on the host")
    assert caps.to_dict()["emulated"] is True


def test_a_backend_that_does_not_say_is_not_emulated(two_npus, monkeypatch):
    import torch

    monkeypatch.setattr(torch, "npu", types.SimpleNamespace(), raising=False)
    caps = capabilities("npu")
    assert caps.emulated is False and caps.reason == ""
    assert dv.is_emulated(Device("cpu")) is False


def test_privateuse1_placeholder_name_counts_only_when_torch_reports_it(monkeypatch):
    import torch

    monkeypatch.setattr(torch._C, "_get_privateuse1_backend_name", lambda: "privateuseone")
    monkeypatch.setattr(dv, "_accelerator_type", lambda: None)
    assert dv.privateuse1_type() is None
    monkeypatch.setattr(dv, "_accelerator_type", lambda: "privateuseone")
    assert dv.privateuse1_type() == "privateuseone"


def test_no_privateuse1_backend_here(no_accelerator):
    assert dv.privateuse1_type() is None
    assert dv.device_count("emu") == 0
    with pytest.raises(XferbenchError, match=r"^device 'emu' is not a device type: use auto, "
                                             r"cpu, cuda, cuda:N, xpu or mps$"):
        resolve_device("emu")


def test_small_buffers_fit_on_the_cpu():
    assert check_fits(1024, Device("cpu")) is None


def test_a_petabyte_does_not_fit_and_says_where():
    why = check_fits(2**50, Device("cpu"), copies=2)
    assert why is not None
    assert why.startswith("1073741824 MiB x2 does not fit in the ")
    assert why.endswith(" GiB free on cpu")


def test_check_fits_keeps_a_ten_percent_margin(monkeypatch):
    monkeypatch.setattr(dm, "free_memory", lambda device: 1000)
    assert check_fits(450, Device("cpu"), copies=2) is None  # 900 <= 90% of 1000
    assert check_fits(451, Device("cpu"), copies=2) is not None


def test_check_fits_counts_host_copies_for_an_accelerator(monkeypatch):
    monkeypatch.setattr(dm, "free_memory", lambda device: 10**15)
    monkeypatch.setattr(dm, "host_free_memory", lambda: 1000)
    monkeypatch.setattr(dm, "host_memory_grows", lambda: False)
    why = check_fits(400, Device("cuda", 0), copies=2, host_copies=3)
    assert why is not None and "of free host memory" in why
    assert check_fits(400, Device("cuda", 0), copies=2, host_copies=2) is None


def test_a_machine_whose_memory_grows_is_checked_against_the_memory_it_has_in_all(monkeypatch):
    """A microVM that starts small and grows (a memory hot-plug or balloon device bound)
    has little MemAvailable at first: the host check then counts the memory the machine has
    in all (XFERBENCH_HOST_MEMORY_BYTES, else MemTotal), never refusing what it will get."""
    monkeypatch.setattr(dm, "free_memory", lambda device: 10**15)
    monkeypatch.setattr(dm, "host_free_memory", lambda: 1000)
    monkeypatch.setattr(dm, "host_memory_grows", lambda: True)
    monkeypatch.setattr(dm, "_mem_total", lambda: 2000)
    monkeypatch.delenv(dm.HOST_MEMORY_VAR, raising=False)
    assert dm.host_memory_limit() == (2000, "host memory this machine may grow to (MemTotal)")
    assert check_fits(400, Device("cuda", 0), copies=2, host_copies=3) is None  # 1200 of 2000
    monkeypatch.setenv(dm.HOST_MEMORY_VAR, "1200")
    why = check_fits(400, Device("cuda", 0), copies=2, host_copies=3)
    assert why is not None and why.endswith(f"has in all ({dm.HOST_MEMORY_VAR})")
    monkeypatch.setenv(dm.HOST_MEMORY_VAR, "lots")
    with pytest.raises(XferbenchError, match=rf"^{dm.HOST_MEMORY_VAR}='lots' is not a byte"):
        dm.host_memory_limit()


def test_unknown_free_memory_counts_as_fitting(monkeypatch):
    monkeypatch.setattr(dm, "free_memory", lambda device: None)
    assert check_fits(2**60, Device("cpu")) is None


def test_does_not_fit_is_an_xferbench_error():
    assert issubclass(DoesNotFit, XferbenchError)


def test_host_free_memory_is_a_plausible_byte_count():
    free = dm.host_free_memory()
    assert free is not None and 2**20 < free < 2**50


def test_cpu_helpers_are_no_ops():
    cpu = Device("cpu")
    dv.synchronize(cpu)
    dm.reset_peak_memory(cpu)
    assert dm.memory_allocated(cpu) is None
    assert dm.max_memory_allocated(cpu) is None
    assert dm.free_memory(cpu) == pytest.approx(dm.host_free_memory(), rel=0.5)


# -- on an accelerator -----------------------------------------------------------------------

@pytest.mark.gpu
def test_auto_resolves_to_the_accelerator_with_an_index(gpu_device):
    dev = resolve_device("auto")
    assert dev.is_accelerator
    assert dev.type in (*dv.ACCELERATOR_TYPES, dv.privateuse1_type())
    if dev.type != "mps":
        assert dev.index is not None and dev.index < dv.device_count(dev.type)


@pytest.mark.gpu
def test_accelerator_absent_index_is_refused_naming_what_exists(gpu_device):
    if gpu_device.type == "mps":
        pytest.skip("mps has one device")
    with pytest.raises(XferbenchError, match=rf"this machine has {gpu_device.type}:0"):
        resolve_device(f"{gpu_device.type}:99")


@pytest.mark.gpu
def test_accelerator_capabilities_allow_everything_and_say_if_emulated(gpu_device):
    caps = capabilities(gpu_device)
    assert caps.device == gpu_device.name
    assert caps.timing_events and caps.side_streams
    assert caps.emulated is dv.is_emulated(gpu_device)
    if gpu_device.type == "cuda":
        assert caps.pinned_memory and caps.reason == "" and not caps.emulated
    if caps.emulated:
        assert caps.pinned_memory and f"{gpu_device} is emulated on the host" in caps.reason


@pytest.mark.gpu
def test_accelerator_memory_helpers_report_allocations(gpu_device):
    import torch

    free = dm.free_memory(gpu_device)
    assert free is not None and free > 2**20
    dm.reset_peak_memory(gpu_device)
    before = dm.memory_allocated(gpu_device)
    x = torch.empty(64 * 2**20, dtype=torch.uint8, device=gpu_device.torch())
    dv.synchronize(gpu_device)
    assert dm.memory_allocated(gpu_device) >= before + x.numel()
    assert dm.max_memory_allocated(gpu_device) >= before + x.numel()


@pytest.mark.gpu
def test_events_time_device_work_and_streams_switch(gpu_device):
    import torch

    start, end = dv.new_event(gpu_device), dv.new_event(gpu_device)
    side = dv.new_stream(gpu_device)
    a = torch.randn(1024, 1024, device=gpu_device.torch())
    with dv.stream_context(gpu_device, side):
        assert dv.current_stream(gpu_device) == side
        start.record()
        b = a @ a
        end.record()
    dv.synchronize(gpu_device)
    assert start.elapsed_time(end) > 0
    assert dv.current_stream(gpu_device) != side
    assert b.shape == (1024, 1024)


def test_stream_hold_is_refused_off_cuda():
    assert sh.hold_stream(dv.Device("cpu"), 0.01) is False
    assert sh.hold_stream(dv.Device("mps"), 0.01) is False


@pytest.mark.gpu
@pytest.mark.cuda_only("the stream hold (torch.cuda._sleep)")
def test_stream_hold_queues_a_spin_of_about_the_asked_length(gpu_device):
    rate = sh.calibrate_spin(gpu_device)  # warm: the clock has run >= 50 ms under a spin
    assert rate > 1e8  # cycles per second: any GPU clock is above 100 MHz
    start, end = dv.new_event(gpu_device), dv.new_event(gpu_device)
    stream = dv.current_stream(gpu_device)
    start.record(stream)
    assert sh.hold_stream(gpu_device, 0.01) is True
    end.record(stream)
    dv.synchronize(gpu_device)
    # the clock may still move between calibration and the hold, by far less than the ratio
    # between a GPU's idle and boost clocks (5.7x in the emulated device's model)
    assert 0.005 < start.elapsed_time(end) * 1e-3 < 0.02


ZONEINFO = """Node 0, zone      DMA
  pages free     3840
        managed  3840
Node 0, zone   Normal
        managed  2588672
Node 0, zone  Movable
        managed  25165824
Node 0, zone   Device
        managed  0
"""


def test_the_memory_zones_say_where_pinned_memory_cannot_come_from(tmp_path):
    from xferbench.device_memory import memory_zones, zones_text

    path = tmp_path / "zoneinfo"
    path.write_text(ZONEINFO)
    zones = memory_zones(str(path))
    page = os.sysconf("SC_PAGE_SIZE")
    assert zones == [(0, "DMA", 3840 * page), (0, "Normal", 2588672 * page),
                     (0, "Movable", 25165824 * page)]  # a zone with nothing is left out
    text = zones_text(zones)
    assert text.startswith("memory zones: node 0: DMA ") and "Movable" in text
    assert "cannot hold pinned buffers" in text
    assert memory_zones(str(tmp_path / "none")) == [] and "not known" in zones_text([])


@pytest.mark.gpu
def test_pinning_up_front_succeeds_or_is_one_sentence(gpu_device, monkeypatch):
    import torch

    from xferbench.device_memory import pin_check

    if not capabilities(gpu_device).pinned_memory:
        pytest.skip(f"{gpu_device} has no pinned host memory")
    assert pin_check(2**20, gpu_device) is None

    def refuse(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA error: out of memory\nmore lines")

    monkeypatch.setattr(torch, "empty", refuse)
    why = pin_check(2**30, gpu_device)
    assert why.startswith("pinning 1 GiB of host memory failed (CUDA error: out of memory):")
    assert "\n" not in why
