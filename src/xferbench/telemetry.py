"""The device's state while it works: its SM clock and throttle reasons, read per event batch
so that samples taken on a slowed device can be discarded (as nvbench does), and the PCIe link
read while a copy runs (a link trains down at idle: read then, a Gen5 x16 link can look like
Gen1). Part of the device layer.

CUDA reads NVML (nvidia-ml-py, the "nvml" extra), its handle found by the device's PCI bus id
(CUDA's device order need not be NVML's). A backend whose device module has ``clock_info()``
(tests/emu's) answers for itself. Anything else has no telemetry: every reader returns None
and the measurement says its clock was not checked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .devices import Device, module_of, synchronize

# torch and pynvml load inside the functions that read them: `import xferbench` stays free
# of them.

#: nvbench's rule: a sample taken while the SM clock runs below this share of its maximum
#: is discarded (its --throttle-threshold).
THROTTLE_CLOCK_SHARE = 0.75

#: NVML's clock-event (throttle) reason bits (nvml.h, nvmlClocksEventReason*), by the name
#: used here. GPU idle, application clocks, sync boost and display clocks are not slowdowns.
REASON_BITS = {
    "power": 0x4 | 0x80,  # SwPowerCap, HwPowerBrakeSlowdown
    "hw_slowdown": 0x8,  # HwSlowdown (thermal or power, reported by the hardware)
    "thermal": 0x20 | 0x40,  # SwThermalSlowdown, HwThermalSlowdown
}
#: The reasons that taint a sample whatever the clock reads.
SLOWDOWNS = frozenset(REASON_BITS)


@dataclass(frozen=True)
class ClockState:
    """One reading: the SM clock and its maximum in MHz, and the active slowdown reasons."""

    sm_mhz: float
    max_mhz: float
    reasons: tuple[str, ...] = ()

    @property
    def throttled(self) -> str | None:
        """The active slowdown reasons in words ("thermal throttling"), or None."""
        why = sorted(SLOWDOWNS.intersection(self.reasons))
        return f"{' and '.join(why)} throttling" if why else None

    def slowed_for(self, sm_clocked: bool) -> str | None:
        """Why a sample taken now would misread the device: ``slowed`` for work that follows
        the SM clock (kernels), ``throttled`` alone for work that does not (copies: an idle
        GPU's SM clock reads a fraction of its maximum while its copy engines and memory run
        at full speed)."""
        return self.slowed if sm_clocked else self.throttled

    @property
    def slowed(self) -> str | None:
        """Why a sample of kernels taken now would misread the device, or None when it would
        not: a slowdown reason, or the SM clock below THROTTLE_CLOCK_SHARE of its maximum."""
        if self.throttled:
            return self.throttled
        if self.max_mhz > 0 and self.sm_mhz < THROTTLE_CLOCK_SHARE * self.max_mhz:
            return (f"SM clock {self.sm_mhz:.0f} MHz, below {THROTTLE_CLOCK_SHARE:.0%} of its "
                    f"maximum {self.max_mhz:.0f} MHz")
        return None


def pci_bus_id(dev: Device) -> str | None:
    """The device's PCI bus id as NVML writes it ("0000:3b:00.0"), or None where torch's
    device properties do not say."""
    if not dev.is_accelerator:
        return None
    try:
        props = module_of(dev.type).get_device_properties(dev.index or 0)
        return (f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:"
                f"{props.pci_device_id:02x}.0")
    except Exception:  # a backend without PCI properties
        return None


def l2_cache_bytes(device: Device) -> int | None:
    """The device's L2 cache in bytes (``L2_cache_size`` of the backend's device properties:
    torch.cuda's, tests/emu's), or None where the backend does not say."""
    if not device.is_accelerator:
        return None
    try:
        props = module_of(device.type).get_device_properties(device.index or 0)
    except Exception:  # a backend without device properties
        return None
    size = getattr(props, "L2_cache_size", None)
    return int(size) if isinstance(size, int) and size > 0 else None


class _Nvml:
    """NVML for one device: initialised once, its handle found by PCI bus id (else index)."""

    def __init__(self, pynvml: Any, dev: Device) -> None:
        self.nv = pynvml
        pynvml.nvmlInit()
        bus = pci_bus_id(dev)
        if bus:
            self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(bus.encode())
        else:
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(dev.index or 0)
        self.max_mhz = float(pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_SM))

    def clock(self) -> ClockState:
        nv = self.nv
        sm = float(nv.nvmlDeviceGetClockInfo(self.handle, nv.NVML_CLOCK_SM))
        get = (getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
               or nv.nvmlDeviceGetCurrentClocksThrottleReasons)
        bits = int(get(self.handle))
        reasons = tuple(name for name, mask in REASON_BITS.items() if bits & mask)
        return ClockState(sm, self.max_mhz, reasons)

    def link(self) -> tuple[int | None, int | None]:
        nv = self.nv
        try:
            return (int(nv.nvmlDeviceGetCurrPcieLinkGeneration(self.handle)),
                    int(nv.nvmlDeviceGetCurrPcieLinkWidth(self.handle)))
        except Exception:
            return None, None


class ClockReader:
    """Reads ``dev``'s clock state; ``read()`` is None where the device has no telemetry (no
    NVML, a backend without ``clock_info``), and stays None after a failed read."""

    def __init__(self, dev: Device) -> None:
        self.dev = dev
        self.source: Any = None
        self.why_not = "no telemetry for this device"
        module = module_of(dev.type) if dev.is_accelerator else None
        if module is not None and callable(getattr(module, "clock_info", None)):
            self.source = module.clock_info
        elif dev.type == "cuda":
            self._open_nvml()

    def _open_nvml(self) -> None:
        try:
            import pynvml  # from nvidia-ml-py, the "nvml" extra
        except ImportError:
            self.why_not = "NVML is not installed (pip install 'xferbench[nvml]')"
            return
        try:
            self.source = _Nvml(pynvml, self.dev)
        except Exception as exc:
            self.why_not = f"NVML is unavailable: {exc}"

    def read(self) -> ClockState | None:
        try:
            if isinstance(self.source, _Nvml):
                return self.source.clock()
            if self.source is not None:
                info = self.source(self.dev.index or 0)
                return ClockState(float(info["sm_clock_mhz"]), float(info["max_sm_clock_mhz"]),
                                  tuple(info.get("throttle_reasons", ())))
        except Exception as exc:
            self.why_not, self.source = f"the clock could not be read: {exc}", None
        return None

    def link(self) -> tuple[int | None, int | None]:
        """The PCIe link's current generation and width, where NVML reads them."""
        if isinstance(self.source, _Nvml):
            return self.source.link()
        return None, None


_READERS: dict[str, ClockReader] = {}


def clock_reader(dev: Device) -> ClockReader:
    """The one ClockReader of ``dev`` in this process."""
    reader = _READERS.get(dev.name)
    if reader is None:
        reader = _READERS[dev.name] = ClockReader(dev)
    return reader


def under_load(dev: Device, seconds: float = 0.3) -> dict[str, Any]:
    """The SM clock and the PCIe link read while ``dev`` copies 64 MiB pinned buffers to itself
    and runs matmuls for about ``seconds``: what the link and clock are when the suite
    measures, not at idle. Keys: sm_clock_mhz_load, sm_clock_max_mhz, throttle_reasons_load,
    pcie_gen_load, pcie_width_load (None where unknown), telemetry (why, where none)."""
    out: dict[str, Any] = {"sm_clock_mhz_load": None, "sm_clock_max_mhz": None,
                           "throttle_reasons_load": None, "pcie_gen_load": None,
                           "pcie_width_load": None}
    reader = clock_reader(dev)
    if not dev.is_accelerator or reader.source is None:
        out["telemetry"] = reader.why_not if dev.is_accelerator else "the CPU has none"
        return out
    import torch

    src = torch.empty(64 * 2**20, dtype=torch.uint8).pin_memory()
    dst = torch.empty_like(src, device=dev.torch())
    a = torch.ones(1024, 1024, device=dev.torch())
    deadline = time.perf_counter() + seconds
    state = None
    link: tuple[int | None, int | None] = (None, None)
    while time.perf_counter() < deadline:
        for _ in range(4):
            dst.copy_(src, non_blocking=True)
            a = (a @ a).clamp_(max=1.0)
        state, link = reader.read() or state, reader.link()  # read while the work runs
        synchronize(dev)
    if state is not None:
        out.update(sm_clock_mhz_load=state.sm_mhz, sm_clock_max_mhz=state.max_mhz,
                   throttle_reasons_load=list(state.reasons))
    out["pcie_gen_load"], out["pcie_width_load"] = link
    return out


def numa_cpus(pci_bus_id: str | None) -> tuple[int | None, list[int] | None, str]:
    """(NUMA node, its CPUs, why not) of the device at ``pci_bus_id``, from sysfs (Linux): what
    ``xferbench run --numa auto`` pins the benchmark processes to, as nvbandwidth does. The
    CPUs are None, with the reason, where the machine does not say."""
    if not pci_bus_id:
        return None, None, "the device has no PCI bus id (no NVML, or an emulated device)"
    try:
        with open(f"/sys/bus/pci/devices/{pci_bus_id.lower()}/numa_node") as fh:
            node = int(fh.read().strip())
    except (OSError, ValueError):
        return None, None, f"sysfs gives no NUMA node for {pci_bus_id}"
    if node < 0:
        return None, None, f"{pci_bus_id} is on no NUMA node (a single-node machine)"
    try:
        with open(f"/sys/devices/system/node/node{node}/cpulist") as fh:
            text = fh.read().strip()
    except OSError:
        return node, None, f"sysfs gives no CPU list for NUMA node {node}"
    cpus: list[int] = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        cpus += range(int(lo), int(hi or lo) + 1)
    return (node, cpus, "") if cpus else (node, None, f"NUMA node {node} lists no CPUs")
