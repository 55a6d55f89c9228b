"""``xferbench export``: every measured figure of a results folder for the services people
already use: CSV (one row per figure, as nvbench, bandwidthTest and TorchBench write), Bencher
Metric Format (one series: a Bencher report is one testbed's), PyTorch HUD v3 records (the
``oss_ci_benchmark_v3`` table's shape) and github-action-benchmark's custom JSON (one series,
smaller-is-better or bigger-is-better: the action takes one file per ``tool``). The command
line and the formats only: the figures (interval, samples, unit, clock, series, suite commit)
are ``analysis.export``'s.

Exit status: 0 written; 2 bad input (no results, no figure matching, BMF or
github-action-benchmark over several series)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from typing import Any

from ..analysis.export import CLOCKS, ExportRow, figures, iso, one_series
from ..analysis.provenance import CPU_ONLY
from ..analysis.stats import higher_is_better
from ..errors import ExitCode, XferbenchError
from ..results import load
from ..results.suite import repository_url
from ..version import __version__
from .options import add_bench, add_format, add_results, add_selection, bench_pattern, selection_of

ACTION = "github-action-benchmark"
FORMATS = ("csv", "bmf", "hud", ACTION)
#: github-action-benchmark's ``tool:`` for each file it takes.
ACTION_TOOLS = {"smaller": "customSmallerIsBetter", "bigger": "customBiggerIsBetter"}
#: The CSV's columns, in order; docs/export.md says what each holds.
COLUMNS = ("benchmark", "params", "value", "unit", "clock", "ci99_low", "ci99_high", "q25",
           "q75", "n_samples", "number", "samples", "gbps", "gbps_ci99_low", "gbps_ci99_high",
           "machine", "hardware", "device", "torch", "cuda", "python", "commit",
           "commit_date", "measured_at", "quick", "mode", "not_for_citation", "results_file",
           "host")
#: Bencher's built-in latency measure is in nanoseconds; the others are named by their unit.
BMF_LATENCY = "latency"
BMF_BANDWIDTH = "bandwidth-gb-per-s"


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "export", allow_abbrev=False,
        help="every measured figure as CSV, Bencher Metric Format, PyTorch HUD v3 records "
             "or github-action-benchmark's custom JSON",
        description="Every measured figure of the results folder with its interval (asv's "
                    "99% confidence interval of the median), quartiles, samples, unit, "
                    "clock, machine, PyTorch and suite commit, on stdout. csv: one row per "
                    "figure; bmf: Bencher Metric Format JSON of one series (times as "
                    "Bencher's latency, in ns); hud: PyTorch HUD v3 benchmark records; "
                    "github-action-benchmark: the action's custom JSON of one series, "
                    "smaller-is-better or bigger-is-better (--better).",
        epilog="exit status: 0 written; 2 bad input (no results, nothing matching, bmf or "
               "github-action-benchmark over several series: choose one with --machine, "
               "--torch, --mode, --host)")
    add_results(p)
    add_format(p, help="csv (default), bmf, hud or github-action-benchmark", choices=FORMATS)
    p.add_argument("--better", choices=tuple(ACTION_TOOLS), default=None,
                   help="with github-action-benchmark: the figures for its "
                        "customSmallerIsBetter tool (smaller, the default: times in ns, "
                        "fractions, counts, bytes) or customBiggerIsBetter (bigger: rates, "
                        "behaviour checks, GB/s where the size is known)")
    add_bench(p, help="only benchmarks whose name matches REGEX")
    add_selection(p, machine="only this machine's figures")
    p.add_argument("--quick", action=argparse.BooleanOptionalAction, default=None,
                   help="only quick runs' figures (--no-quick: none of them; default: both, "
                        "each marked)")
    p.set_defaults(func=cmd_export)


def chosen(args: argparse.Namespace) -> list[ExportRow]:
    pattern = bench_pattern(args.bench)
    rs = load(args.results).select(selection_of(args))
    return [f for f in figures(rs)
            if (pattern is None or pattern.search(f.benchmark))
            and (args.quick is None or f.quick == args.quick)]


def _num(x: float | int | None) -> str:
    return "" if x is None else repr(x)


def csv_text(found: list[ExportRow]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for f in found:
        ci = f.ci99 or (None, None)
        gci = f.gbps_ci99 or (None, None)
        w.writerow([
            f.benchmark, ";".join(f"{k}={v}" for k, v in f.params), _num(f.value), f.unit,
            f.clock, _num(ci[0]), _num(ci[1]), _num(f.q25), _num(f.q75), len(f.samples),
            _num(f.number), " ".join(repr(s) for s in f.samples), _num(f.gbps),
            _num(gci[0]), _num(gci[1]), f.machine, f.hardware, f.device, f.torch, f.cuda,
            f.python, f.commit, iso(f.commit_date_ms), iso(f.measured_ms),
            "yes" if f.quick else "no", f.mode, "; ".join(f.not_for_citation), f.results_file,
            f.host])
    return out.getvalue()


def _metric(value: float, interval: tuple[float, float] | None, scale: float = 1.0
            ) -> dict[str, float]:
    out = {"value": value * scale}
    if interval is not None:
        out["lower_value"], out["upper_value"] = interval[0] * scale, interval[1] * scale
    return out


def bmf(found: list[ExportRow]) -> dict[str, dict[str, dict[str, float]]]:
    """Bencher Metric Format: {benchmark: {measure: {value, lower_value, upper_value}}}, the
    median with asv's 99% interval. BMF holds numbers and names only, so what a reader must
    know of a figure is in its name: its mode where not the default (" [quick]"), so that a
    smoke test never joins a default run's history; the clock a time was read on; and that a
    CPU run's figures are not for citation."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for f in one_series(found):
        measures: dict[str, dict[str, float]] = {}
        if f.unit == "seconds":
            measures[BMF_LATENCY] = _metric(f.value, f.ci99, 1e9)
        else:
            measures[re.sub(r"[^a-z0-9]+", "-", f.unit.lower()).strip("-")] = _metric(
                f.value, f.ci99)
        if f.gbps is not None:
            measures[BMF_BANDWIDTH] = _metric(f.gbps, f.gbps_ci99)
        out[f.name + bmf_tail(f)] = measures
    return out


def bmf_tail(f: ExportRow) -> str:
    """" [quick; host clock; a CPU run: not for citation]": the mode where not the default,
    a time's clock, and the CPU caveat, where any applies."""
    parts = [f.mode] if f.mode != "default" else []
    if f.clock != "none":
        parts.append(f"{f.clock} clock")
    if CPU_ONLY in f.not_for_citation:
        parts.append("a CPU run: not for citation")
    return f" [{'; '.join(parts)}]" if parts else ""


def action_benchmark(found: list[ExportRow], better: str = "smaller") -> list[dict[str, Any]]:
    """github-action-benchmark's custom JSON: an array of {name, unit, value, range, extra}
    for its ``customSmallerIsBetter`` tool (``better`` "smaller": times in ns, fractions,
    counts, bytes) or ``customBiggerIsBetter`` ("bigger": rates, behaviour checks, and GB/s
    where the size is known). The value is the median; ``range`` is the wider side of asv's
    99% interval around it, as the action's "± x"; ``extra`` gives the interval itself and
    the series."""
    bigger = better == "bigger"
    out = []
    for f in one_series(found, why="github-action-benchmark follows one series per file"):
        samples = f"{len(f.samples)} samples" if f.samples else "no samples recorded"
        if higher_is_better(f.unit) == bigger:
            scale, unit = (1e9, "ns") if f.unit == "seconds" else (1.0, f.unit)
            out.append(_action_entry(f, f"the median ({samples})", unit, f.value * scale,
                                     _scaled(f.ci99, scale)))
        if bigger and f.gbps is not None:
            what = f"the bytes copied over the median time ({samples})"
            out.append(_action_entry(f, what, "GB/s", f.gbps, f.gbps_ci99))
    if not out:
        raise XferbenchError(
            f"none of the chosen figures is {better}-is-better: nothing for "
            f"{ACTION_TOOLS[better]} (--better {'smaller' if bigger else 'bigger'} has the "
            "others)")
    return out


def _scaled(interval: tuple[float, float] | None, scale: float) -> tuple[float, float] | None:
    return None if interval is None else (interval[0] * scale, interval[1] * scale)


def _action_entry(f: ExportRow, what: str, unit: str, value: float,
                  interval: tuple[float, float] | None) -> dict[str, Any]:
    """One figure as the action's entry: ``what`` the value is, ``interval`` in ``unit``."""
    entry: dict[str, Any] = {"name": f.name + bmf_tail(f), "unit": unit, "value": value}
    lines = [what]
    if interval is not None:
        entry["range"] = f"± {max(value - interval[0], interval[1] - value):.6g}"
        lines.append(f"asv's 99% interval of the median: {interval[0]:.6g} to "
                     f"{interval[1]:.6g} {unit}")
    lines += [f"clock: {f.clock}", f"{f.series} ({f.hardware}), suite commit {f.commit[:8]}"]
    if f.not_for_citation:
        lines.append("not for citation: " + "; ".join(f.not_for_citation))
    entry["extra"] = "\n".join(lines)
    return entry


def _repo() -> str:
    url = repository_url() or ""
    m = re.search(r"://[^/]+/(.+?)(?:\.git)?/?$", url)
    return m.group(1) if m else ""


def _runner(f: ExportRow) -> dict[str, Any]:
    """The table's runner: what the sidecar recorded of the host and the device. Its numbers
    cannot be empty, so a 0 stands for one not recorded, and extra_info names each such."""
    gpu = not f.device.startswith("cpu")
    memory = f.device_memory_bytes if gpu else None
    unknown = [k for k, v in (("cpu_count", f.cores), ("avail_mem_in_gb", None),
                              ("avail_gpu_mem_in_gb", memory if gpu else 0)) if v is None]
    return {"name": f.machine, "type": f.device, "cpu_info": f.cpu or "",
            "cpu_count": f.cores or 0, "mem_info": "", "avail_mem_in_gb": 0,
            "gpu_info": f.hardware if gpu else "", "gpu_count": int(gpu),
            "gpu_mem_info": "", "avail_gpu_mem_in_gb": round(memory / 2**30) if memory else 0,
            "extra_info": {"hardware": f.hardware,
                           "not_recorded": ", ".join(unknown) + " (0 here: not recorded)"
                           if unknown else ""}}


def hud_record(f: ExportRow) -> dict[str, Any]:
    """One figure as a row of PyTorch's oss_ci_benchmark_v3 table: its maps hold text, its
    values are the raw samples (the median where none were recorded)."""
    ci = f.ci99 or (None, None)
    return {
        "timestamp": f.measured_ms // 1000, "schema_version": "v3", "name": "xferbench",
        "repo": _repo(), "head_branch": "", "head_sha": f.commit,
        "workflow_id": 0, "run_attempt": 1, "job_id": 0,
        "runners": [_runner(f)],
        "benchmark": {"name": "xferbench", "mode": "", "dtype": "", "extra_info": {
            "suite_commit": f.commit, "xferbench": __version__, "device": f.device,
            "clock": f.clock, "quick": "yes" if f.quick else "no", "mode": f.mode,
            "not_for_citation": "; ".join(f.not_for_citation), "results_file": f.results_file}},
        "model": {"name": f.name, "type": "micro-benchmark", "backend": "",
                  "origins": ["xferbench"], "extra_info": dict(f.params)},
        "inputs": {},
        "dependencies": {"torch": {"repo": "pytorch/pytorch", "branch": "", "sha": "",
                                   "version": f.torch, "extra_info": {"cuda": f.cuda}}},
        "metric": {"name": f"{f.benchmark.rsplit('.', 1)[-1]} ({f.unit})",
                   "benchmark_values": list(f.samples) or [f.value], "target_value": 0.0,
                   "extra_info": {"median": repr(f.value), "unit": f.unit,
                                  "ci99_low": _num(ci[0]), "ci99_high": _num(ci[1]),
                                  "q25": _num(f.q25), "q75": _num(f.q75),
                                  "gbps": _num(f.gbps), "clock": CLOCKS[f.clock]}},
    }


def cmd_export(args: argparse.Namespace) -> ExitCode:
    if args.better is not None and args.format != ACTION:
        raise XferbenchError(f"--better chooses the figures of --format {ACTION}, not of "
                             f"--format {args.format}: drop it, or export {ACTION}")
    found = chosen(args)
    if not found:
        raise XferbenchError("no measured figure matches: nothing to export (xferbench list "
                             "shows what the results hold)")
    if args.format == "csv":
        print(csv_text(found), end="")
    elif args.format == "bmf":
        print(json.dumps(bmf(found), indent=1))
    elif args.format == ACTION:
        print(json.dumps(action_benchmark(found, args.better or "smaller"), indent=1))
    else:
        print(json.dumps([hud_record(f) for f in found], indent=1))
    return ExitCode.OK
