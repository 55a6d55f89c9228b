"""The peer-copy matrix of a machine, read from bench_peer's results (never typed): GB/s per
ordered pair of devices, each pair's peer access and its first copy. The source of a cell is
the device of the series that measured it (each ``xferbench run --devices`` series holds its
device's row), the destination its ``to`` parameter. ``publish`` draws each matrix as a heat
map and tabulates its cells; ``cite`` reads a cell's peer access and picks a series by device.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..errors import XferbenchError
from ..practices import HEADLINE_NBYTES
from ..practices.contention import STREAM_PARAM
from ..results import Result, ResultSet, version_key
from ..results.machines import slug
from ..results.series import SeriesKey

PEER_CLASS = "bench_peer.Peer."
PEER_BENCHMARK = PEER_CLASS + "track_device_s"
FIRST_BENCHMARK = PEER_CLASS + "track_first_copy_s"
ACCESS_BENCHMARK = PEER_CLASS + "track_peer_access"


def device_of(rs: ResultSet, r: Result) -> tuple[str, int] | None:
    """(type, index) of the device ``r``'s series ran on ("cuda", 2), from its sidecar's
    metadata; None where it does not say."""
    text = str(rs.metadata_for(r).device or "")
    kind, _, index = text.partition(":")
    return (kind, int(index)) if kind and index.isdigit() else None


def by_device(rs: ResultSet, device: str) -> ResultSet:
    """The results of the series measured on ``device`` ("cuda:1"); one sentence where no
    series was."""
    kept = [r for r in rs if str(rs.metadata_for(r).device or "") == device]
    if not kept:
        known = sorted({str(rs.metadata_for(r).device) for r in rs
                        if rs.metadata_for(r).device})
        raise XferbenchError(f"device {device!r} measured nothing in {rs.root}: its series are "
                             f"on {', '.join(known) or 'no recorded device'}")
    return ResultSet(kept, rs.benchmarks, rs.root, rs.sidecars)


@dataclass(frozen=True)
class PeerCell:
    """One ordered pair: its copy (``result``, None where no series measured it), its peer
    access and first copy as recorded, and why there is no number."""

    src: int
    dst: int
    result: Result | None
    peer_access: bool | None
    first_copy_s: float | None
    reason: str = ""

    @property
    def gbps(self) -> float | None:
        return self.result.gbps if self.result is not None and self.result.ok else None


@dataclass(frozen=True)
class PeerMatrix:
    """Every ordered pair of a machine's devices at one layout and size, newest release."""

    machine: str
    torch: str
    device_type: str
    layout: str
    nbytes: int
    devices: tuple[int, ...]
    cells: tuple[PeerCell, ...]

    def cell(self, src: int, dst: int) -> PeerCell | None:
        return next((c for c in self.cells if (c.src, c.dst) == (src, dst)), None)

    @property
    def path(self) -> str:
        """The heat map's site-relative path: its name says ``peer``."""
        return f"figures/peer-{slug(self.machine)}-{slug(self.layout)}.svg"


def _newest(found: list[Result]) -> Result | None:
    ok = [r for r in found if r.ok] or found
    return max(ok, key=lambda r: (r.ok, r.date_ms, r.started_ms or 0)) if ok else None


def _rows(rs: ResultSet) -> dict[tuple[str, int, str], list[Result]]:
    """(benchmark, source index, to) -> the results, for the peer class."""
    out: dict[tuple[str, int, str], list[Result]] = {}
    for r in rs:
        where = device_of(rs, r) if r.benchmark.startswith(PEER_CLASS) else None
        if where is not None:
            out.setdefault((r.benchmark, where[1], str(r.param_dict.get("to"))), []).append(r)
    return out


def _size(found: list[Result]) -> int | None:
    """The headline size where it was measured, else the largest size measured."""
    sizes = {r.nbytes for r in found if r.ok and r.nbytes}
    if not sizes:
        return None
    return HEADLINE_NBYTES if HEADLINE_NBYTES in sizes else max(sizes)


def _cell(rows: dict[tuple[str, int, str], list[Result]], src: int, dst: int, layout: str,
          nbytes: int, device_type: str) -> PeerCell:
    found = [r for r in rows.get((PEER_BENCHMARK, src, str(dst)), [])
             if r.param_dict.get("layout") == layout and r.nbytes == nbytes]
    result = _newest(found)
    access = _newest(rows.get((ACCESS_BENCHMARK, src, str(dst)), []))
    first = _newest(rows.get((FIRST_BENCHMARK, src, str(dst)), []))
    reason = ""
    if result is None:
        reason = (f"no series of {device_type}:{src} measured it: run with --devices all")
    elif not result.ok:
        reason = "skipped or failed in its run (see the run's outcomes)"
    return PeerCell(src, dst, result, None if access is None or not access.ok
                    else access.value == 1.0,
                    first.value if first is not None and first.ok else None, reason)


def class_trends(rs: ResultSet, prefix: str) -> list[tuple[str, list[Result]]]:
    """(trend, its results of the class ``prefix``): per machine, per mode apart from the
    device (each device's series is one row of the same matrix, but a quick run's never
    joins a full run's), the trend named as ``SeriesKey.trend`` names it."""
    out: dict[str, list[Result]] = {}
    for r in rs:
        if r.benchmark.startswith(prefix):
            rest = tuple((k, v) for k, v in r.mode if k != "device")
            out.setdefault(SeriesKey(r.machine, r.torch, rest).trend, []).append(r)
    return sorted(out.items())


def peer_matrices(rs: ResultSet) -> list[PeerMatrix]:
    """One matrix per trend (a machine, a mode apart) and layout, at its newest PyTorch
    release with peer results: every ordered pair of the devices any of its series names."""
    out = []
    for machine, on in class_trends(rs, PEER_CLASS):
        torch = max({r.torch for r in on}, key=version_key)
        chosen = ResultSet([r for r in on if r.torch == torch], rs.benchmarks, rs.root,
                           rs.sidecars)
        rows = _rows(chosen)
        kinds = {kind for r in chosen if (kind := device_of(chosen, r)) is not None}
        if not kinds:
            continue
        device_type = sorted(kinds)[0][0]
        devices = tuple(sorted({src for _b, src, _t in rows} | {
            int(to) for _b, _s, to in rows if to.isdigit()}))
        for layout in _layouts(chosen):
            nbytes = _size([r for r in chosen if r.benchmark == PEER_BENCHMARK
                            and r.param_dict.get("layout") == layout])
            if nbytes is None:
                continue
            cells = tuple(_cell(rows, s, d, layout, nbytes, device_type)
                          for s in devices for d in devices if s != d)
            out.append(PeerMatrix(machine, torch, device_type, layout, nbytes, devices, cells))
    return out


def _layouts(rs: ResultSet) -> list[str]:
    declared = rs.declared_params(PEER_BENCHMARK).get("layout") or []
    seen = {str(r.param_dict.get("layout")) for r in rs if r.benchmark == PEER_BENCHMARK}
    return [str(v) for v in declared if str(v) in seen] or sorted(seen)


def peer_access_note(rs: ResultSet, r: Result) -> str | None:
    """For a peer-copy result: the sentence a citation of it must carry where its pair had no
    peer access; None for other benchmarks, and where the pair had it."""
    if not r.benchmark.startswith(PEER_CLASS):
        return None
    where = device_of(rs, r)
    to = str(r.param_dict.get("to"))
    same = [a for a in rs if a.benchmark == ACCESS_BENCHMARK and a.path == r.path
            and str(a.param_dict.get("to")) == to and a.ok]
    if where is None or not same or same[0].value != 0.0:
        return None
    return (f"no peer access: can_device_access_peer({where[0]}:{where[1]}, {where[0]}:{to}) "
            "was False, so this copy was staged through host memory")


def citation_note(rs: ResultSet, results_file: str, benchmark: str,
                  params: dict[str, Any]) -> str | None:
    """``peer_access_note`` for the result a citation quotes (its file, benchmark, params)."""
    path = os.path.abspath(results_file)
    for r in rs:
        if (r.benchmark == benchmark and r.param_dict == params
                and os.path.abspath(r.path) == path):
            return peer_access_note(rs, r)
    return None


CONTENTION_CLASS = "bench_contention.Contention."


@dataclass(frozen=True)
class ContentionRow:
    """One stream copy of a contention mode in one series: the copy alone and with the
    others."""

    machine: str
    torch: str
    device: str  # the series' device ("cuda:0")
    mode: str
    stream: str  # the stream copy's name (practices/contention.py STREAM_PARAM's value)
    alone: Result | None
    together: Result | None

    @property
    def alone_gbps(self) -> float | None:
        return self.alone.gbps if self.alone is not None else None

    @property
    def together_gbps(self) -> float | None:
        return self.together.gbps if self.together is not None else None

    @property
    def ratio(self) -> float | None:
        """Together over alone, in GB/s: 1 is no loss to contention."""
        a, t = self.alone_gbps, self.together_gbps
        return t / a if a and t is not None else None


def contention_rows(rs: ResultSet) -> list[ContentionRow]:
    """Every measured stream copy, per machine at its newest release with contention
    results."""
    out = []
    for machine, found in class_trends(rs, CONTENTION_CLASS):
        on = [r for r in found if r.ok]
        if not on:
            continue
        torch = max({r.torch for r in on}, key=version_key)
        copies: dict[tuple[str, str, str], dict[str, Result]] = {}
        for r in on:
            if r.torch == torch:
                key = (str(rs.metadata_for(r).device or "unknown"), str(r.param_dict["mode"]),
                       str(r.param_dict[STREAM_PARAM]))
                copies.setdefault(key, {})[r.benchmark.rsplit(".", 1)[-1]] = r
        for (device, mode, stream), timed in sorted(copies.items()):
            out.append(ContentionRow(machine, torch, device, mode, stream,
                                     timed.get("track_alone_s"), timed.get("track_together_s")))
    return out
