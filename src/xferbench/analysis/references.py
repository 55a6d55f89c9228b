"""The reference ranges shipped with the package (``data/references.toml``): the figures
published for each accelerator on its host link, each with its sources, read and checked
here; and which row a GPU's name and recorded link select. ``reference.py`` judges a figure
against them.

A GPU's name selects a row by whole words: the name is split into lower-case words, the
vendor and brand words are dropped ("nvidia", "geforce", "tesla", "amd", "instinct"), and a
row matches where one of its names appears among them as consecutive words. "NVIDIA H200",
"NVIDIA H200 NVL" and "H200" select the H200 row; "NVIDIA GH200 480GB" does not (its word is
"gh200"), nor does "NVIDIA H20". Where several rows match, the one with the longest name wins.
A PCIe row applies where the link's maximum generation and width equal the row's, or were not
recorded; an NVLink-C2C row applies by name (its link is not PCIe).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from ..errors import XferbenchError
from ..metadata import MachineMetadata, pcie_theoretical_bytes_per_s

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SCHEMA_VERSION = 1
#: The figures a row may give, in the order they are shown, with their unit.
FIGURES = {"pinned_h2d": "GB/s", "pinned_d2h": "GB/s", "pageable_h2d": "GB/s",
           "pageable_d2h": "GB/s", "d2d": "GB/s", "item_roundtrip": "us",
           "kernel_launch": "us"}
#: What each source must say.
SOURCE_FIELDS = ("origin", "date", "tool", "setup", "says")
#: Words of a GPU's name that name the vendor or brand, not the part.
BRAND_WORDS = frozenset({"nvidia", "geforce", "tesla", "quadro", "amd", "instinct", "radeon"})
PCIE = "pcie"
C2C = "nvlink-c2c"


@dataclass(frozen=True)
class RangeSource:
    id: str
    origin: str  # a URL, or a repository and file
    date: str
    tool: str
    setup: str
    says: str  # what it measured, in its own figures

    @property
    def line(self) -> str:
        return f"{self.origin} ({self.date}; {self.tool}; {self.setup}): {self.says}"


@dataclass(frozen=True)
class Range:
    """A published range: ``low`` to ``high`` (None: not given, a floor alone)."""

    low: float | None
    high: float | None
    sources: tuple[RangeSource, ...]


@dataclass(frozen=True)
class Link:
    kind: str  # PCIE or C2C
    gen: int | None = None
    width: int | None = None
    gbps: float | None = None  # C2C: per direction

    @property
    def label(self) -> str:
        return f"PCIe Gen{self.gen} x{self.width}" if self.kind == PCIE else "NVLink-C2C"

    @property
    def ceiling_gbps(self) -> float | None:
        """Its theoretical rate per direction in GB/s."""
        if self.kind == C2C:
            return self.gbps
        rate = pcie_theoretical_bytes_per_s(self.gen, self.width)
        return None if rate is None else rate / 1e9


@dataclass(frozen=True)
class ReferenceRow:
    id: str
    accelerator: str
    names: tuple[tuple[str, ...], ...]  # each a run of words of a GPU's name
    link: Link
    figures: Mapping[str, Range]
    #: where pageable copies run nearly as fast as pinned ones: its sources, else None
    pageable_nearly_pinned: tuple[RangeSource, ...] | None = None

    @property
    def setup(self) -> str:
        return f"{self.accelerator} on {self.link.label}"


@dataclass(frozen=True)
class ReferenceTable:
    path: str
    rows: tuple[ReferenceRow, ...]


def words(name: str | None) -> tuple[str, ...]:
    """The words of a GPU's name that name the part: "NVIDIA H100 80GB HBM3" -> ("h100",
    "80gb", "hbm3")."""
    return tuple(w for w in re.split(r"[^a-z0-9]+", str(name or "").lower())
                 if w and w not in BRAND_WORDS)


def _contains(haystack: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def rows_for(table: ReferenceTable, gpu: str | None) -> list[ReferenceRow]:
    """The rows ``gpu``'s name selects, the most specific (longest name) first."""
    have = words(gpu)
    hits = [(max(len(n) for n in row.names if _contains(have, n)), i, row)
            for i, row in enumerate(table.rows) if any(_contains(have, n) for n in row.names)]
    return [row for _, _, row in sorted(hits, key=lambda h: (-h[0], h[1]))]


def link_fits(row: ReferenceRow, meta: MachineMetadata) -> bool:
    """Whether ``row``'s link is this machine's: a PCIe row needs the recorded maximum link
    (where recorded) to be its generation and width; an NVLink-C2C row fits by name."""
    if row.link.kind != PCIE:
        return True
    gen, width = meta.pcie_gen_max, meta.pcie_width_max
    if gen is None or width is None:
        return True
    return (int(gen), int(width)) == (row.link.gen, row.link.width)


def row_for(table: ReferenceTable, meta: MachineMetadata) -> tuple[ReferenceRow | None, str]:
    """(the row for this machine's GPU and link, or None; why none where none)."""
    found = rows_for(table, meta.gpu_name)
    if not found:
        return None, f"no reference for {meta.gpu_name or 'this GPU'}"
    fits = [row for row in found if link_fits(row, meta)]
    if fits:
        return fits[0], ""
    have = f"PCIe Gen{meta.pcie_gen_max} x{meta.pcie_width_max}"
    return None, (f"no reference for {meta.gpu_name} on {have} (the table has it on "
                  f"{', '.join(r.link.label for r in found)})")


# -- reading the file --------------------------------------------------------------------------

def shipped_path() -> str:
    return str(files("xferbench") / "data" / "references.toml")


@cache
def shipped() -> ReferenceTable:
    """The table shipped with the package, read once per process."""
    return load_references()


def load_references(path: str | None = None) -> ReferenceTable:
    """The reference table at ``path`` (default: the one shipped), every row and source
    checked; one sentence (XferbenchError) for the first problem."""
    path = path or shipped_path()
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise XferbenchError(f"reference table {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise XferbenchError(f"reference table {path} is not TOML: {exc}") from None
    if data.get("schema_version") != SCHEMA_VERSION:
        raise XferbenchError(f"reference table {path} has schema_version "
                             f"{data.get('schema_version')!r}: this xferbench reads "
                             f"{SCHEMA_VERSION}")
    sources = {str(k): _source(path, str(k), v) for k, v in (data.get("sources") or {}).items()}
    rows = data.get("rows")
    if not isinstance(rows, list) or not rows:
        raise XferbenchError(f"reference table {path} needs at least one [[rows]] entry")
    out = tuple(_row(path, i, r, sources) for i, r in enumerate(rows))
    ids = [r.id for r in out]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise XferbenchError(f"reference table {path} names row {twice[0]!r} twice")
    return ReferenceTable(path, out)


def _text(where: str, data: Any, key: str) -> str:
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise XferbenchError(f"{where} needs {key!r} as text (given {value!r})")
    return value.strip()


def _source(path: str, key: str, data: Any) -> RangeSource:
    where = f"reference table {path}: source {key!r}"
    return RangeSource(key, *(_text(where, data, f) for f in SOURCE_FIELDS))


def _cited(where: str, data: Any, sources: Mapping[str, RangeSource]) -> tuple[RangeSource, ...]:
    """The sources ``data["sources"]`` names: at least one, each a [sources.NAME]."""
    named = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(named, list) or not named:
        raise XferbenchError(f"{where} names no source: give sources = [\"NAME\", ...], each a "
                             "[sources.NAME] with its origin, date, tool, setup and what it says")
    missing = [n for n in named if n not in sources]
    if missing:
        raise XferbenchError(f"{where} cites {missing[0]!r}, which is not one of the table's "
                             f"[sources]: {', '.join(sources) or 'none'}")
    return tuple(sources[n] for n in named)


def _number(where: str, data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise XferbenchError(f"{where}: {key} must be a positive number (given {value!r})")
    return float(value)


def _range(where: str, data: Any, sources: Mapping[str, RangeSource]) -> Range:
    if not isinstance(data, dict):
        raise XferbenchError(f"{where} is not a table {{low, high, sources}}")
    low, high = _number(where, data, "low"), _number(where, data, "high")
    if low is None and high is None:
        raise XferbenchError(f"{where} gives neither low nor high")
    if low is not None and high is not None and low > high:
        raise XferbenchError(f"{where}: low {low:g} is above high {high:g}")
    return Range(low, high, _cited(where, data, sources))


def _link(where: str, data: Any, sources: Mapping[str, RangeSource]) -> Link:
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == PCIE:
        gen, width = data.get("gen"), data.get("width")
        if pcie_theoretical_bytes_per_s(gen, width) is None or isinstance(gen, bool):
            raise XferbenchError(f"{where}: a PCIe link needs gen (1 to 6) and width "
                                 f"(given {gen!r}, {width!r})")
        return Link(PCIE, int(gen), int(width))
    if kind == C2C:
        _cited(f"{where} (NVLink-C2C)", data, sources)
        return Link(C2C, gbps=_number(where, data, "gbps"))
    raise XferbenchError(f"{where}: link kind {kind!r} is not {PCIE} or {C2C}")


def _row(path: str, i: int, data: Any, sources: Mapping[str, RangeSource]) -> ReferenceRow:
    if not isinstance(data, dict):
        raise XferbenchError(f"reference table {path}: row {i + 1} is not a table")
    row_id = _text(f"reference table {path}: row {i + 1}", data, "id")
    where = f"reference table {path}: row {row_id!r}"
    names = data.get("names")
    if not isinstance(names, list) or not names or not all(words(n) for n in names):
        raise XferbenchError(f"{where} needs names = [\"H200\", ...]: the words of the GPU "
                             "names it covers")
    figures = data.get("figures")
    if not isinstance(figures, dict) or not figures:
        raise XferbenchError(f"{where} gives no figures")
    unknown = sorted(set(figures) - set(FIGURES))
    if unknown:
        raise XferbenchError(f"{where}: figure {unknown[0]!r} is not one of "
                             f"{', '.join(FIGURES)}")
    nearly = data.get("pageable_nearly_pinned")
    return ReferenceRow(
        row_id, _text(where, data, "accelerator"), tuple(words(n) for n in names),
        _link(where, data.get("link"), sources),
        {k: _range(f"{where}, figure {k!r}", figures[k], sources) for k in FIGURES if k in figures},
        None if nearly is None else _cited(f"{where}, pageable_nearly_pinned", nearly, sources))
