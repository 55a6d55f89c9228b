"""The machines side by side, computed (no HTML): for each PyTorch release that two machines
or more measured, one column per machine, with the headlines, the copies at the headline
size and every measured value. A release is the version before its local part, so an H100's
``2.14.1+cu128`` and an H200's ``2.14.1+cu130`` share a table; the column says the build."""

from __future__ import annotations

from dataclasses import dataclass

from ...results import Result, version_key
from .catalog import SeriesView
from .views import CopyRow, HeadlineCell, HeadlineRow


@dataclass(frozen=True)
class MachineTable:
    release: str
    series: tuple[SeriesView, ...]  # one per machine: its newest build of the release
    headlines: tuple[tuple[str, tuple[HeadlineCell | None, ...]], ...]  # title, per machine
    copies: tuple[tuple[str, tuple[CopyRow | None, ...]], ...]  # what is copied, per machine
    values: tuple[tuple[str, tuple[Result | None, ...]], ...]  # benchmark(params), per machine


def copy_label(row: CopyRow) -> str:
    return ", ".join(str(v) for k, v in row.result.params if k != "size")


def machine_tables(all_series: list[SeriesView], heads: list[HeadlineRow],
                   copies: list[tuple[SeriesView, list[CopyRow]]]) -> list[MachineTable]:
    """Newest release first; none where every release ran on one machine only."""
    by_release: dict[str, dict[str, SeriesView]] = {}
    for s in all_series:  # in version order: a trend's newest build of the release wins
        by_release.setdefault(s.torch.split("+")[0], {})[s.trend] = s
    copy_rows = {(s.trend, s.torch): {copy_label(r): r for r in rows} for s, rows in copies}
    out = []
    for release in sorted(by_release, key=version_key, reverse=True):
        chosen = tuple(by_release[release][m] for m in sorted(by_release[release]))
        if len(chosen) < 2:
            continue
        keys = [(s.trend, s.torch) for s in chosen]
        head_rows = []
        for h in heads:
            cells = {(c.series.trend, c.series.torch): c for c in h.cells}
            row = tuple(cells.get(k) for k in keys)
            if any(c is not None and c.verdict is not None for c in row):
                head_rows.append((h.title, row))
        labels = list(dict.fromkeys(lb for k in keys for lb in copy_rows.get(k, {})))
        copy_table = tuple((lb, tuple(copy_rows.get(k, {}).get(lb) for k in keys))
                           for lb in labels)
        measured = [{r.label(): r for r in s.results if r.ok} for s in chosen]
        values = tuple((lb, tuple(m.get(lb) for m in measured))
                       for lb in sorted({lb for m in measured for lb in m}))
        out.append(MachineTable(release, chosen, tuple(head_rows), copy_table, values))
    return out
