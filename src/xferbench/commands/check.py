"""``xferbench check``: does this machine look right for its GPU? In seconds, it measures the
figures that tell (``practices/health.py``: one large copy each way from pinned and from
pageable memory, d2d, an ``.item()`` round trip on an idle device), judges each against the
range published for the GPU and its link (``analysis/reference.py``), and prints a line per
figure and a verdict per device. With ``--devices all`` it also names a device far behind
the others (the one of four at 14 GB/s). It writes nothing unless ``--results DIR`` asks it
to keep the figures as a quick series (not for citation).

Exit status: 0 healthy (or nothing to judge: no reference, an emulated device); 1 a figure
below its range or above its link, or an outlier; 2 bad input (a CPU: nothing to check).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from ..analysis.reference import (
    ABOVE_LINK,
    EMULATED,
    NAMES,
    NO_REFERENCE,
    Assessment,
    judge,
    legend,
)
from ..analysis.sitemap import BANDWIDTH_BENCHMARKS
from ..devices import Device, resolve_device
from ..errors import ExitCode, XferbenchError
from ..metadata import MachineMetadata, collect
from ..practices.health import CHECK_NBYTES, CHECK_SPEC, HealthFigure, measure_health
from ..results import check_folder
from ..results.machines import default_machine_name
from ..results.quickseries import FiledFigure, Filing, file_quick_series
from ..results.repo import suite_commit
from ..results.suite import find_suite
from ..spec import MeasureSpec
from ..units import parse_size, size_label
from .options import add_device, add_format, parse_devices, resolve_devices

#: A device whose figure is below this share of the devices' median is named an outlier.
OUTLIER_SHARE = 0.75
#: How a check of a CPU ends: one sentence, exit 2.
NOTHING_ON_CPU = ("nothing to check on the CPU: xferbench check measures an accelerator's "
                  "copies, and the device here is the CPU")


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "check", allow_abbrev=False,
        help="does this machine look right for its GPU? a sanity check in seconds",
        description="Measure pinned and pageable H2D and D2H at one large size, d2d and the "
                    ".item() round trip, each against the range published for the GPU and "
                    "its link (docs/check.md): a line per figure, a verdict per device. "
                    "Writes nothing by default. Exit status: 0 healthy, 1 a figure below its "
                    "range or above its link (or an outlier device), 2 bad input.")
    add_device(p)
    p.add_argument("--devices", default=None, metavar="all|0,2,...",
                   help="check each of these devices in turn, and name any far behind the "
                        "others")
    p.add_argument("--size", default=size_label(CHECK_NBYTES), metavar="SIZE",
                   help=f"the copies' size (default {size_label(CHECK_NBYTES)}; ranges are "
                        "for 64MiB or more)")
    p.add_argument("--quick", action="store_true",
                   help="a tenth of each budget: a smoke test of the check itself")
    p.add_argument("--results", default=None, metavar="DIR",
                   help="also keep the figures in DIR as a quick series (not for citation)")
    add_format(p, help="text (default) or JSON")
    p.set_defaults(func=cmd_check, needs_torch=True)


@dataclass(frozen=True)
class DeviceCheck:
    """One device's check: what was recorded, each figure and its assessment."""

    device: Device
    meta: MachineMetadata
    figures: tuple[HealthFigure, ...]
    judged: tuple[Assessment, ...]

    @property
    def worse(self) -> tuple[Assessment, ...]:
        return tuple(a for a in self.judged if a.worse)

    def verdict(self) -> str:
        """One line: what is not right, or healthy, or why nothing was judged."""
        name = self.device.name
        if self.worse:
            odd = all(a.verdict == ABOVE_LINK for a in self.worse)
            problem = "a measurement problem" if odd else "not right"
            return f"{name}: {problem}: " + "; ".join(
                f"{NAMES[a.figure]} {_value(a)}: {a.sentence()}" for a in self.worse)
        within = sum(a.verdict != NO_REFERENCE for a in self.judged)
        if self.meta.emulated:
            return f"{name}: nothing judged: {EMULATED}"
        if not within:
            why = self.judged[0].setup if self.judged else "no figure"
            return f"{name}: nothing judged: {why} (docs/check.md: how to add a reference)"
        return (f"{name}: healthy: {within} of {len(self.judged)} figures within or above "
                "their ranges, the rest without one")


def _value(a: Assessment) -> str:
    return f"{a.value:.2f} {a.unit}" if a.unit == "GB/s" else f"{a.value:.1f} {a.unit}"


def check_device(device: Device, nbytes: int, spec: MeasureSpec = CHECK_SPEC) -> DeviceCheck:
    """Measure and judge every figure on ``device``, its link and clock read under load."""
    meta = collect(device, under_load=True)
    figures = tuple(measure_health(device, nbytes, spec))
    judged = tuple(judge(f.figure, f.value, meta, nbytes=f.case.nbytes if f.case else None)
                   for f in figures)
    return DeviceCheck(device, meta, figures, judged)


def outliers(checks: list[DeviceCheck]) -> list[str]:
    """Per figure, each device far behind the devices' median (a rate below OUTLIER_SHARE of
    it, a round trip over 1 / OUTLIER_SHARE of it), as a line; none for emulated devices."""
    if len(checks) < 2 or any(c.meta.emulated for c in checks):
        return []
    out = []
    for i, f in enumerate(checks[0].figures):
        values = [c.figures[i].value for c in checks]
        mid = statistics.median(values)
        rate = f.case is not None
        for c, v in zip(checks, values):
            if (v < OUTLIER_SHARE * mid) if rate else (v * OUTLIER_SHARE > mid):
                a = c.judged[i]
                out.append(f"outlier: {c.device.name}: {NAMES[f.figure]} {_value(a)} against "
                           f"a median of {mid:.2f} {a.unit} over {len(checks)} devices")
    return out


#: The copy benchmarks of the suite, by the clock a check's copy is read on.
COPY_BENCHMARKS = {"device_s": BANDWIDTH_BENCHMARKS["device"],
                   "completion_s": BANDWIDTH_BENCHMARKS["completion"]}
COPY_PARAMS = ("direction", "host_memory", "sync", "layout", "size")


def file_checks(results_dir: str, checks: list[DeviceCheck], nbytes: int,
                started_ms: int) -> list[str]:
    """Keep each device's copies in ``results_dir`` as a quick series of the suite's copy
    benchmarks (the round trip has none: it is printed only); returns the files written."""
    commit = suite_commit(find_suite()).commit
    out = []
    for c in checks:
        figures = [FiledFigure(COPY_BENCHMARKS[f.measurement.primary_clock], COPY_PARAMS,
                               (f.case.direction, f.case.host_memory, f.case.sync,
                                f.case.layout, size_label(nbytes)),
                               f.measurement.samples())
                   for f in c.figures if f.case is not None]
        filing = Filing(default_machine_name(c.meta), c.meta, commit, started_ms,
                        int(time.time() * 1000), "xferbench check")
        path = file_quick_series(os.path.abspath(results_dir), filing, figures)
        out.append(os.path.join(results_dir, os.path.relpath(path, os.path.abspath(
            results_dir))))
    return out


def _devices(args: argparse.Namespace) -> list[Device]:
    chosen = parse_devices(args.devices)
    first = resolve_device(args.device)
    if not first.is_accelerator:
        raise XferbenchError(NOTHING_ON_CPU)
    return resolve_devices(chosen, args.device) if chosen else [first]


def header(c: DeviceCheck, nbytes: int) -> str:
    m = c.meta
    link = (f"PCIe Gen{m.pcie_gen_load} x{m.pcie_width_load} under load"
            if m.pcie_gen_load else "link not read under load")
    if m.pcie_gen_max:
        link += f", max Gen{m.pcie_gen_max} x{m.pcie_width_max}"
    return (f"xferbench check: {c.device} ({m.gpu_name or 'unknown GPU'}; {link}), copies of "
            f"{size_label(nbytes)}")


def text_lines(checks: list[DeviceCheck], found: list[str], nbytes: int) -> list[str]:
    out = []
    for c in checks:
        out.append(header(c, nbytes))
        for a in c.judged:
            out.append(f"  {NAMES[a.figure]:<24} {_value(a):>13}  expected "
                       f"{a.expected:<22} {a.verdict}")
        out.append(c.verdict())
        out.append("")
    if len(checks) > 1:
        out += found or [f"no outlier: the {len(checks)} devices agree within "
                         f"{1 - OUTLIER_SHARE:.0%} of their median on every figure"
                         if not checks[0].meta.emulated else
                         "no outlier named: the devices are emulated"]
        out.append("")
    return out + [legend()]


def as_json(checks: list[DeviceCheck], found: list[str], code: ExitCode) -> dict[str, Any]:
    return {"devices": [{"device": c.device.name, "gpu": c.meta.gpu_name,
                         "figures": [asdict(a) for a in c.judged], "verdict": c.verdict()}
                        for c in checks],
            "outliers": found, "exit": int(code)}


def cmd_check(args: argparse.Namespace) -> ExitCode:
    nbytes = parse_size(args.size)
    devices = _devices(args)
    if args.results:  # a folder that cannot take the series is refused before measuring
        check_folder(os.path.abspath(args.results))
    spec = CHECK_SPEC.for_quick() if args.quick else CHECK_SPEC
    started_ms = int(time.time() * 1000)
    checks = [check_device(dev, nbytes, spec) for dev in devices]
    found = outliers(checks)
    code = ExitCode.REGRESSION if found or any(c.worse for c in checks) else ExitCode.OK
    if args.format == "json":
        print(json.dumps(as_json(checks, found, code), indent=2), flush=True)
    else:
        print("\n".join(text_lines(checks, found, nbytes)), flush=True)
    if args.results:  # after the figures are out: a refusal to file loses none of them
        filed = file_checks(args.results, checks, nbytes, started_ms)
        print(f"xferbench check: kept as a quick series (not for citation): "
              f"{', '.join(filed)}", file=sys.stderr)
    return code
