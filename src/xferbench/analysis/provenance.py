"""Where each series came from: one record per series (machine, PyTorch, and how it was
measured: ``results.series``), read from its ``.metadata`` sidecar and asv's params (date,
suite commit, GPU or CPU, driver, CUDA, the torch build, threads, Python, OS, its mode); the
reasons a series is not for citation (the site's banner: its mode's, from ``series.MODES``,
and the hardware's); and what differs between two series besides the PyTorch release.

The thread count is one figure: the benchmark processes', ``metadata.torch_threads`` (the
sidecar's loader upgrades files of schema 1, which kept it elsewhere).
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass
from typing import Any

from ..metadata import MachineMetadata
from ..results import Result, ResultSet
from ..results.lock import lock_is_held
from ..results.runrecords import ISO_FORMAT
from ..results.series import CAPPED as SERIES_CAPPED
from ..results.series import QUICK, Mode, SeriesKey, labels
from ..results.series import reasons as mode_reasons

__all__ = ["CPU_ONLY", "CUT_SHORT", "EMULATED", "NO_METADATA", "QUICK", "RUNNING", "Provenance",
           "banner", "cautions", "differences", "link_caution", "over_link_caution", "provenance",
           "series_provenance"]

#: The reason of a series run with ``--budget --cap`` (its mode ``capped: yes``, or a
#: combination its sidecar lists as capped): the mode table's (``results.series``).
CAPPED = SERIES_CAPPED
CPU_ONLY = "measured on a CPU, no GPU: every accelerator row is n/a and copies are host copies"
EMULATED = "measured on an emulated device: its times are host threads', not measurements"
CUT_SHORT = "the run was cut short: some classes were not measured"
RUNNING = "its run is still going: some classes are not measured yet"
NO_METADATA = "no metadata recorded: the hardware is unknown"


@dataclass(frozen=True)
class Provenance:
    """One series (machine, PyTorch, how measured): what it ran on and how; None where not
    recorded."""

    machine: str
    torch: str
    commit: str
    measured_ms: int  # when its newest run started (ms since the epoch)
    device: str  # "cuda:0", "cpu", or "unknown"
    gpu: str | None
    cpu_model: str | None
    driver: str | None
    cuda: str | None  # the CUDA the torch build targets (None: a CPU build)
    torch_git: str | None
    threads: int | None
    python: str | None
    os: str | None
    quick: bool
    complete: bool | None
    has_metadata: bool
    commits: tuple[str, ...] = ()  # every suite commit the series' newest results come from
    #: Why its numbers need a caution though they may be cited (a degraded link), or None.
    caution: str | None = None
    mode: Mode = ()  # how it was measured, where not the default way

    @property
    def key(self) -> SeriesKey:
        return SeriesKey(self.machine, self.torch, self.mode)
    capped: bool = False  # some of its numbers sampled under a budget cap (--budget --cap)
    #: its newest run is not over: it holds the results folder's lock and has not finished
    running: bool = False
    emulated: bool = False  # an emulated device (tests/emu): every path runs, no time is real

    @property
    def label(self) -> str:
        return self.key.label

    @property
    def how(self) -> str:
        """"quick, 2 threads"; "default" for the default way (the default grid, in full: not
        the full sweep)."""
        return labels(self.mode) or "default"

    @property
    def build(self) -> str:
        """The torch build's local tag ("cpu", "cu130"), "" for none."""
        return self.torch.partition("+")[2]

    @property
    def release(self) -> str:
        return self.torch.partition("+")[0]

    @property
    def cpu_only(self) -> bool:
        return self.has_metadata and self.gpu is None and not self.device.startswith(
            ("cuda", "xpu", "mps", "hip"))

    @property
    def hardware(self) -> str:
        if self.gpu:
            return self.gpu
        return f"CPU {self.cpu_model or 'unknown'}" if self.has_metadata else "unknown"

    @property
    def date(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.measured_ms / 1000))

    def reasons(self) -> list[str]:
        """Why this series is not for citation (empty: it may be cited)."""
        out = mode_reasons(self.mode)
        if self.capped and CAPPED not in out:
            out.append(CAPPED)
        if not self.has_metadata:
            out.append(NO_METADATA)
        elif self.cpu_only:
            out.append(CPU_ONLY)
        elif self.emulated:
            out.append(EMULATED)
        if self.complete is False:
            out.append(RUNNING if self.running else CUT_SHORT)
        return out


def link_caution(meta: MachineMetadata) -> str | None:
    """A PCIe link that ran below its maximum while the suite measured (read under load:
    an idle link trains down, so only the under-load reading counts), in one sentence; None
    where it ran at its maximum or was not read. nvbandwidth's first question of a slow copy:
    the machine (a riser, a slot, the BIOS) before PyTorch."""
    gen, width = _int(meta.pcie_gen_load), _int(meta.pcie_width_load)
    gen_max = max(_int(meta.pcie_gen_max) or 0, _int(meta.pcie_gen_gpu_max) or 0)
    width_max = _int(meta.pcie_width_max)
    if not (gen and width and gen_max and width_max) or (gen >= gen_max and width >= width_max):
        return None
    return (f"the PCIe link ran at Gen{gen} x{width} under load, below its maximum "
            f"Gen{gen_max} x{width_max}: its host<->device copies are slower than the GPU's "
            "link allows (a slot, riser or BIOS setting, not PyTorch)")


#: Where a machine's last-level cache was not recorded: the sizes no server CPU's cache
#: fails to hold (the default sweep's up to 4 MiB).
CACHE_HOT_BYTES = 4 * 2**20


def cache_caution(r: Result, meta: MachineMetadata) -> str | None:
    """A pageable copy no larger than the CPU's last-level cache, in one sentence: measure()
    copies the same host buffer call after call, so it is read from (or written into) the
    cache, faster than data that comes from memory; None for the others."""
    p = r.param_dict
    if p.get("host_memory") != "pageable" or p.get("direction") not in ("h2d", "d2h") \
            or r.nbytes is None:
        return None
    cache = _int(meta.cpu_cache_bytes)
    if r.nbytes > (cache or CACHE_HOT_BYTES):
        return None
    held = (f"the CPU's {cache / 2**20:.0f} MiB last-level cache" if cache else
            "any server CPU's last-level cache")
    return (f"a pageable copy of {r.nbytes / 2**20:.3g} MiB fits {held}: its host buffer is "
            "copied call after call from cache, so the figure is cache-hot, faster than data "
            "coming from memory")


def over_link_caution(share: float | None) -> str | None:
    """A copy's share of the PCIe link above 100%, in one sentence: no copy outruns its link,
    so the link's maximum was misread (a VM's virtual root port may report less than the
    GPU's own); None at or below 100%."""
    if share is None or share <= 1:
        return None
    return (f"the copy ran at {share:.0%} of the PCIe link's theoretical rate: no copy outruns "
            "its link, so the link's maximum was misread (a virtual root port may report less "
            "than the GPU's own), not the copy faster than PCIe")


def _iso_ms(text: Any) -> int | None:
    try:
        return calendar.timegm(time.strptime(str(text), ISO_FORMAT)) * 1000
    except (ValueError, OverflowError):
        return None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def _text(value: Any) -> str | None:
    return None if value in (None, "", "none", "unknown") else str(value)


def series_provenance(rs: ResultSet, key: SeriesKey) -> Provenance:
    """The provenance of one series of ``rs`` (its newest results and their sidecar)."""
    machine, torch = key.machine, key.torch
    results = list(rs.filter(series=key).newest())  # newest keeps a series' results apart
    if not results:
        raise KeyError(f"no series {key.label}")
    newest: Result = max(results, key=lambda r: (r.date_ms, r.started_ms or 0))
    side = rs.sidecars.get(newest.path)
    meta = side.metadata if side and side.metadata else MachineMetadata()
    run = side.run if side else None
    measured = (_iso_ms(run.started_at) if run else None) or newest.started_ms or newest.date_ms
    return Provenance(
        machine=machine, torch=torch, commit=newest.commit, measured_ms=measured,
        device=_device(newest, meta, run.device if run else None),
        gpu=rs.gpu_for(newest), cpu_model=_text(meta.cpu_model),
        driver=_text(meta.driver), cuda=_text(newest.cuda),
        torch_git=_text(meta.torch_git), threads=_int(meta.torch_threads),
        python=_text(meta.python) or _text(newest.python), os=_text(meta.os),
        quick=any(k == "quick" for k, _ in key.mode),
        complete=run.complete if run else None, has_metadata=bool(side and side.metadata),
        commits=tuple(sorted({r.commit for r in results})),
        caution=link_caution(meta) if rs.gpu_for(newest) else None, mode=key.mode,
        capped=any(r.capped for r in results) or bool(run and run.capped),
        running=bool(run and run.complete is False and run.finished_at is None
                      and lock_is_held(rs.root)),
        emulated=meta.emulated is True,
    )


def _device(r: Result, meta: MachineMetadata, run_device: str | None) -> str:
    """The device that measured ``r``: the results file's label, else the sidecar's."""
    if r.device != "unknown":
        return r.device
    return str(meta.device or run_device or "unknown")


def provenance(rs: ResultSet) -> list[Provenance]:
    """Every series of ``rs``: machines by name, releases in order, the default mode first."""
    return [series_provenance(rs, key) for key in rs.series()]


def banner(series: list[Provenance]) -> list[tuple[str, list[Provenance]]]:
    """(reason, the series it applies to) for every reason a series is not for citation:
    quick first, then every other mode's in the order met, no metadata, a CPU run, a run cut
    short (an emulated device after a CPU run); empty when every series may be cited."""
    order = [QUICK, *dict.fromkeys(r for p in series for r in p.reasons()
                                   if r not in (QUICK, NO_METADATA, CPU_ONLY, EMULATED,
                                                CUT_SHORT, RUNNING)),
             NO_METADATA, CPU_ONLY, EMULATED, CUT_SHORT, RUNNING]
    out = []
    for reason in order:
        hit = [p for p in series if reason in p.reasons()]
        if hit:
            out.append((reason, hit))
    return out


def cautions(series: list[Provenance]) -> list[tuple[str, Provenance]]:
    """(caution, series) for every series whose numbers need one though they may be cited."""
    return [(p.caution, p) for p in series if p.caution]


def differences(a: Provenance, b: Provenance) -> list[tuple[str, str, str]]:
    """(what, A's, B's) for everything but the release that differs between two series:
    a comparison across them measures these differences too."""
    def show(value: Any) -> str:
        return "none" if value in (None, "") else str(value)

    fields = [("build", f"+{a.build}" if a.build else "none", f"+{b.build}" if b.build else "none"),
              ("CUDA", a.cuda, b.cuda), ("machine", a.machine, b.machine),
              ("device", a.hardware, b.hardware), ("driver", a.driver, b.driver),
              ("threads", a.threads, b.threads), ("Python", a.python, b.python),
              ("OS", a.os, b.os), ("suite commit", a.commit[:8], b.commit[:8]),
              ("how measured", a.how, b.how)]
    return [(name, show(x), show(y)) for name, x, y in fields if show(x) != show(y)]

