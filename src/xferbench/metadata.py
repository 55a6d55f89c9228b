"""Metadata: the software and machine state recorded next to every result.

One ``collect_<area>()`` per area; each tolerates absence (no NVML, a CPU-only torch, an
old torch without torch.accelerator) and reports "unknown" rather than raising. ``collect``
gathers them into one typed ``MachineMetadata``, which every reader uses (``from_dict`` reads
a sidecar's, ``to_dict`` writes it).
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from dataclasses import dataclass, fields
from typing import Any

from . import telemetry
from .devices import Capabilities, Device, capabilities, resolve_device
from .stream_hold import launch_queue_depth
from .telemetry import numa_cpus
from .version import __version__

# torch and pynvml load inside the functions that read them: `import xferbench` stays
# free of them, and a machine without either still gets its metadata.

UNKNOWN = "unknown"

#: PCIe transfer rate (GT/s per unit of link width) and line-code efficiency, by generation.
_PCIE_GT_S = {1: (2.5, 8 / 10), 2: (5.0, 8 / 10), 3: (8.0, 128 / 130), 4: (16.0, 128 / 130),
              5: (32.0, 128 / 130), 6: (64.0, 242 / 256)}


def pcie_theoretical_bytes_per_s(generation: Any, width: Any) -> float | None:
    """Theoretical one-way PCIe payload rate in bytes/s after line coding, or None."""
    try:
        gt_s, efficiency = _PCIE_GT_S[int(generation)]
        return gt_s * 1e9 * efficiency * int(width) / 8
    except (KeyError, TypeError, ValueError):
        return None


def collect_python() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "executable": sys.executable,
    }


def collect_host() -> dict[str, Any]:
    cpu_model, virtualized = UNKNOWN, None
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key = line.lower()
                if cpu_model == UNKNOWN and key.startswith(("model name", "hardware",
                                                            "cpu model")):
                    cpu_model = line.split(":", 1)[1].strip()
                elif virtualized is None and key.startswith("flags"):
                    # x86 sets "hypervisor" among a virtual machine's CPU flags
                    virtualized = "hypervisor" in line.partition(":")[2].split()
                if cpu_model != UNKNOWN and virtualized is not None:
                    break
    except OSError:
        cpu_model = platform.processor() or UNKNOWN
    try:
        affinity: Any = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = UNKNOWN
    return {
        "hostname": socket.gethostname() or UNKNOWN,
        "os": f"{platform.system()} {platform.release()}".strip() or UNKNOWN,
        "arch": platform.machine() or UNKNOWN,
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count() or UNKNOWN,
        "cpu_affinity": _ranges(affinity) if isinstance(affinity, list) else affinity,
        "virtualized": virtualized,
        "cpu_cache_bytes": last_level_cache_bytes(),
    }


def last_level_cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """The largest data cache of the first CPU (its last level), from sysfs; None off Linux.
    A pageable copy no larger is read from cache, call after call."""
    sizes = []
    try:
        for entry in os.listdir(root):
            try:
                with open(os.path.join(root, entry, "type")) as fh:
                    if fh.read().strip() == "Instruction":
                        continue
                with open(os.path.join(root, entry, "size")) as fh:
                    text = fh.read().strip().upper()
            except OSError:
                continue
            scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
            digits = text.rstrip("KMG")
            if digits.isdigit():
                sizes.append(int(digits) * scale)
    except OSError:
        return None
    return max(sizes) if sizes else None


def collect_torch() -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        return {"torch": UNKNOWN}
    return {
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", None) or UNKNOWN,
        "cuda": torch.version.cuda or None,
        "hip": getattr(torch.version, "hip", None) or None,
        "torch_threads": torch.get_num_threads(),
        "has_torch_accelerator": hasattr(torch, "accelerator"),
    }


def collect_device(dev: Device) -> dict[str, Any]:
    """GPU name, capability, SMs, memory and PCI bus id; all None on the CPU."""
    out: dict[str, Any] = {
        "device": dev.name,
        "accelerator": dev.type if dev.is_accelerator else None,
        "gpu_name": None, "compute_capability": None, "multiprocessors": None,
        "device_memory_bytes": None, "pci_bus_id": None,
    }
    if not dev.is_accelerator:
        return out
    try:
        import torch

        props = getattr(torch, dev.type).get_device_properties(dev.index or 0)
        out["gpu_name"] = getattr(props, "name", UNKNOWN)
        if hasattr(props, "major"):
            out["compute_capability"] = f"{props.major}.{props.minor}"
        out["multiprocessors"] = getattr(props, "multi_processor_count", None)
        out["device_memory_bytes"] = getattr(props, "total_memory", None)
        if hasattr(props, "pci_bus_id"):
            out["pci_bus_id"] = (
                f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
            )
    except Exception as exc:  # an unusual backend: keep what we have
        out["device_error"] = f"{type(exc).__name__}: {exc}"
    return out


def collect_nvml(pci_bus_id: str | None, index: int | None) -> dict[str, Any]:
    """Driver, PCIe link (current and maximum generation and width; the GPU's own maximum
    generation) and clocks through NVML."""
    out: dict[str, Any] = {
        "driver": None, "pcie_gen": None, "pcie_width": None, "pcie_gen_max": None,
        "pcie_width_max": None, "pcie_gen_gpu_max": None, "sm_clock_mhz": None,
        "mem_clock_mhz": None, "nvml": None,
    }
    try:
        import pynvml  # from nvidia-ml-py, the "nvml" extra
    except ImportError:
        out["nvml"] = "not installed (pip install 'xferbench[nvml]')"
        return out
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        out["nvml"] = f"unavailable: {exc}"
        return out
    try:
        if pci_bus_id:
            handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode())
        else:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index or 0)
        driver = pynvml.nvmlSystemGetDriverVersion()
        out["driver"] = driver.decode() if isinstance(driver, bytes) else driver
        for key, call in (
            ("pcie_gen", pynvml.nvmlDeviceGetCurrPcieLinkGeneration),
            ("pcie_width", pynvml.nvmlDeviceGetCurrPcieLinkWidth),
            ("pcie_gen_max", pynvml.nvmlDeviceGetMaxPcieLinkGeneration),
            ("pcie_width_max", pynvml.nvmlDeviceGetMaxPcieLinkWidth),
            # the GPU's own: the device-and-system maximum above is capped by the root port,
            # which a VM's virtual one may report below the link the GPU trains to
            ("pcie_gen_gpu_max", getattr(pynvml, "nvmlDeviceGetGpuMaxPcieLinkGeneration", None)),
        ):
            try:
                out[key] = int(call(handle)) if call is not None else None
            except Exception:
                out[key] = None
        for key, clock in (("sm_clock_mhz", "NVML_CLOCK_SM"), ("mem_clock_mhz", "NVML_CLOCK_MEM")):
            try:
                out[key] = int(pynvml.nvmlDeviceGetClockInfo(handle, getattr(pynvml, clock)))
            except Exception:
                out[key] = None
        out["nvml"] = "ok"
    except Exception as exc:
        out["nvml"] = f"error: {exc}"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    return out


def collect_numa(pci_bus_id: str | None) -> dict[str, Any]:
    """The GPU's NUMA node and its CPUs ("0-15") from sysfs (Linux), or None."""
    node, cpus, _why = numa_cpus(pci_bus_id)
    return {"gpu_numa_node": node, "gpu_numa_cpus": _ranges(cpus) if cpus else None}


def collect(device: str | Device = "auto", *, under_load: bool = False) -> MachineMetadata:
    """Everything known about this machine and ``device``; unknown fields are None/"unknown".
    With ``under_load``, also the SM clock, throttle reasons and PCIe link read while the
    device copies and computes for a moment (``telemetry.under_load``: an idle link and clock
    read low), and the launch queue's depth (``stream_hold.launch_queue_depth``), as a run
    records them.

    Raises XferbenchError only when ``device`` itself does not exist.
    """
    dev = resolve_device(device)
    meta: dict[str, Any] = {"xferbench": __version__}
    meta.update(collect_python())
    meta.update(collect_host())
    meta.update(collect_torch())
    meta.update(collect_device(dev))
    if dev.type == "cuda" and not meta.get("hip"):
        meta.update(collect_nvml(meta.get("pci_bus_id"), dev.index))
    meta.update(collect_numa(meta.get("pci_bus_id")))
    if under_load and dev.is_accelerator:
        meta.update(telemetry.under_load(dev))
        meta["launch_queue_depth"] = launch_queue_depth(dev)
    meta["pcie_theoretical_bytes_per_s"] = link_peak_bytes_per_s(meta)
    caps = capabilities(dev)
    meta["capabilities"] = caps.to_dict()
    # Results made on an emulated device must never pass for measurements: said at the top.
    meta["emulated"] = caps.emulated
    return MachineMetadata.from_dict(meta)


def link_peak_bytes_per_s(meta: dict[str, Any]) -> float | None:
    """The PCIe link's theoretical one-way rate that shares of it are taken of: the highest
    generation of the GPU's own maximum, NVML's device-and-system maximum and the link seen
    under load (a VM's virtual root port can report a maximum below what the GPU trains to),
    at the widest width known. The current link only where no maximum is known: an idle link
    trains down."""
    gens = [g for g in (meta.get("pcie_gen_gpu_max"), meta.get("pcie_gen_max"),
                        meta.get("pcie_gen_load")) if isinstance(g, int) and g > 0]
    widths = [w for w in (meta.get("pcie_width_max"), meta.get("pcie_width_load"))
              if isinstance(w, int) and w > 0]
    if gens and widths:
        return pcie_theoretical_bytes_per_s(max(gens), max(widths))
    return pcie_theoretical_bytes_per_s(meta.get("pcie_gen"), meta.get("pcie_width"))


def share_of_link(gbps: float | None, link_bytes_per_s: float | None) -> float | None:
    """``gbps`` (10^9 bytes/s) as a share of a link's theoretical rate in bytes/s, or None
    where either is unknown."""
    if gbps is None or not link_bytes_per_s:
        return None
    return gbps * 1e9 / float(link_bytes_per_s)


#: Written only where NVML was asked (a CUDA device): "nvml" then says how that went.
NVML_FIELDS = ("driver", "pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max",
               "pcie_gen_gpu_max", "sm_clock_mhz", "mem_clock_mhz", "nvml")
#: Written only where they were read, under load (``collect(under_load=True)``, a run on an
#: accelerator): "telemetry" says why there are none where they could not be.
LOAD_FIELDS = ("sm_clock_mhz_load", "sm_clock_max_mhz", "throttle_reasons_load",
               "pcie_gen_load", "pcie_width_load", "telemetry", "launch_queue_depth")


@dataclass(frozen=True)
class MachineMetadata:
    """What ``collect`` found, one field per key of the sidecar's ``metadata``; None where a
    file from an older version did not record it (or there is none: no GPU, a CPU build)."""

    xferbench: str | None = None
    python: str | None = None
    python_implementation: str | None = None
    executable: str | None = None
    hostname: str | None = None
    os: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    cpu_count: int | str | None = None  # "unknown" where the OS does not say
    cpu_affinity: str | None = None  # "0-3,6"
    virtualized: bool | None = None  # the CPU reports a hypervisor; None: it does not say
    cpu_cache_bytes: int | None = None  # the last-level cache: a pageable copy below it is hot
    torch: str | None = None
    torch_git: str | None = None
    cuda: str | None = None  # the CUDA the build targets; None: a CPU build
    hip: str | None = None
    torch_threads: int | None = None  # in the benchmark processes, for a run's metadata
    has_torch_accelerator: bool | None = None
    device: str | None = None  # "cuda:0", "cpu"
    accelerator: str | None = None  # the device type; None on the CPU
    gpu_name: str | None = None
    compute_capability: str | None = None
    multiprocessors: int | None = None
    device_memory_bytes: int | None = None
    pci_bus_id: str | None = None
    device_error: str | None = None  # only where reading the device's properties failed
    driver: str | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    pcie_gen_gpu_max: int | None = None  # the GPU's own maximum generation, whatever its slot
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    nvml: str | None = None  # None: NVML was not asked (not a CUDA device)
    gpu_numa_node: int | None = None
    gpu_numa_cpus: str | None = None  # the CPUs of its NUMA node ("0-15")
    pcie_theoretical_bytes_per_s: float | None = None  # one way, after line coding
    sm_clock_mhz_load: int | None = None  # read while the device copied and computed
    sm_clock_max_mhz: int | None = None
    throttle_reasons_load: tuple[str, ...] | None = None
    pcie_gen_load: int | None = None  # the link while copies ran (an idle link reads low)
    pcie_width_load: int | None = None
    telemetry: str | None = None  # why there is no reading under load, where there is none
    #: operations the device's stream holds before a launch blocks the host (measured)
    launch_queue_depth: int | None = None
    capabilities: Capabilities | None = None
    emulated: bool | None = None

    @property
    def link_bytes_per_s(self) -> float | None:
        """The PCIe link's theoretical rate: as recorded, or the link seen under load where
        that is faster (a record made before the GPU's own maximum was read)."""
        rates = [r for r in (self.pcie_theoretical_bytes_per_s, pcie_theoretical_bytes_per_s(
            self.pcie_gen_load, self.pcie_width_load)) if r]
        return max(rates) if rates else None

    def share_of_link(self, gbps: float | None) -> float | None:
        """``gbps`` as a share of this machine's PCIe link (``share_of_link``); above 1 the
        link's maximum is misread (``units.share_text`` says so)."""
        return share_of_link(gbps, self.link_bytes_per_s)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["capabilities"] = self.capabilities.to_dict() if self.capabilities else None
        if self.device_error is None:
            del out["device_error"]
        if self.nvml is None:
            for key in NVML_FIELDS:
                del out[key]
        if all(out[key] is None for key in LOAD_FIELDS):
            for key in LOAD_FIELDS:
                del out[key]
        elif self.throttle_reasons_load is not None:
            out["throttle_reasons_load"] = list(self.throttle_reasons_load)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MachineMetadata:
        """The known keys of ``data`` (others are ignored; absent ones are None)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["capabilities"] = _capabilities(data.get("capabilities"))
        if isinstance(values.get("throttle_reasons_load"), list):
            values["throttle_reasons_load"] = tuple(values["throttle_reasons_load"])
        return cls(**values)


def _capabilities(data: Any) -> Capabilities | None:
    if isinstance(data, Capabilities):
        return data
    if not isinstance(data, dict):
        return None
    known = {f.name for f in fields(Capabilities)}
    try:
        return Capabilities(**{k: v for k, v in data.items() if k in known})
    except TypeError:  # a field it needs is missing: an older probe
        return None


def _ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive CPUs
    for c in cpus:
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"{first}-{last}" if first != last else f"{first}" for first, last in runs)
