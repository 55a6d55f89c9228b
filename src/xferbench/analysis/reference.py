"""A figure beside its reference: the range published for this machine's GPU and link
(``references.py``), the verdict, and for a figure below its range the likely cause from what
the run recorded. One function judges (``judge``); ``xferbench run``'s copy table, ``list``,
``cite``, the page and ``xferbench check`` each format its ``Assessment``. Nothing here prints.

Verdicts: within (inside the published range, or within TOLERANCE of its ends: the sources
are other machines and tools); below or above it (for a round trip: slower or faster); above
link, a rate above the link's theoretical one, which no copy reaches: a measurement problem,
never a record; no reference (no row for this GPU and link, an emulated device, or a copy too
small to be the link's rate), where the link's ceiling is still shown.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import XferbenchError
from ..metadata import MachineMetadata, pcie_theoretical_bytes_per_s
from ..practices import HEADLINE_NBYTES
from ..results import Result, ResultSet
from ..telemetry import SLOWDOWNS, THROTTLE_CLOCK_SHARE
from ..units import gbps, parse_size, size_label
from .references import C2C, FIGURES, Range, ReferenceRow, ReferenceTable, row_for, shipped
from .sitemap import BANDWIDTH_BENCHMARKS

WITHIN = "within"
BELOW = "below"
ABOVE = "above"
SLOWER = "slower"  # a round trip's "below"
FASTER = "faster"
ABOVE_LINK = "above link"
NO_REFERENCE = "no reference"
#: The verdicts that say the machine (or the measurement) is not right: check exits 1 on them.
WORSE = (BELOW, SLOWER, ABOVE_LINK)
#: How far outside its published range a figure may fall and still read "within".
TOLERANCE = 0.10
#: Copies from this size on run at their link's rate; smaller ones at their latency's.
MIN_NBYTES = HEADLINE_NBYTES
#: Each figure as a line or a column names it.
NAMES = {"pinned_h2d": "pinned H2D", "pinned_d2h": "pinned D2H", "pageable_h2d": "pageable H2D",
         "pageable_d2h": "pageable D2H", "d2d": "d2d (bytes copied once)",
         "item_roundtrip": ".item() round trip", "kernel_launch": "kernel launch"}
NO_CAUSE = "no cause recorded"
EMULATED = "an emulated device: its times are host threads'"
#: What a claim's ``unless`` may name: the row property that makes it not apply, in words.
CLAIM_CONDITIONS = {"pageable-nearly-pinned": "pageable is nearly pinned here"}


@dataclass(frozen=True)
class Assessment:
    """One figure judged against its reference; rates in GB/s, round trips in us."""

    figure: str  # a key of references.FIGURES
    value: float
    unit: str
    verdict: str
    low: float | None  # the published range (None: not given)
    high: float | None
    reference: str  # the row's id, "" where none applies
    setup: str  # the row's GPU and link, or why no row applies
    ceiling_gbps: float | None = None  # the link's theoretical rate per direction
    ceiling: str = ""  # the link it is of ("PCIe Gen5 x16")
    cause: str = ""  # below: the likely cause; above link: why it is no record

    @property
    def expected(self) -> str:
        """The range in a few characters: "48-55.41 GB/s", "at least 48 GB/s", "at most 63.0
        GB/s (link)", "none"."""
        if self.low is not None and self.high is not None:
            span = f"{self.low:g}" if self.low == self.high else f"{self.low:g}-{self.high:g}"
            return f"{span} {self.unit}"
        if self.low is not None or self.high is not None:
            word, x = ("at least", self.low) if self.low is not None else ("at most", self.high)
            return f"{word} {x:g} {self.unit}"
        if self.ceiling_gbps is not None:
            return f"at most {self.ceiling_gbps:.1f} GB/s (link)"
        return "none"

    @property
    def worse(self) -> bool:
        return self.verdict in WORSE

    def sentence(self) -> str:
        """"48-55.41 GB/s for NVIDIA H200 on PCIe Gen5 x16 (reference h200-pcie5): below;
        likely cause: ...", or where no range applies why, with the link's ceiling."""
        if self.reference:
            head = f"{self.expected} for {self.setup} (reference {self.reference}): {self.verdict}"
        else:
            ceiling = (f": the {self.ceiling} link's theoretical {self.ceiling_gbps:.1f} GB/s "
                       "per direction is the only bound" if self.ceiling_gbps else "")
            head = self.setup + ceiling + (f": {ABOVE_LINK}" if self.verdict == ABOVE_LINK else "")
        if self.verdict in (BELOW, SLOWER):
            return f"{head}; likely cause: {self.cause}"
        return f"{head}: {self.cause}" if self.cause else head


def legend() -> str:
    """What the expected and verdict columns mean, in one sentence."""
    return (f"expected = the range published for this GPU and link (docs/check.md); verdict = "
            f"within it (or within {TOLERANCE:.0%}), below, above, above link (faster than the "
            "link: a measurement problem, never a record) or no reference.")


def figure_of(benchmark: str, params: dict[str, object]) -> str | None:
    """The reference figure a copy benchmark's result is (a key of FIGURES), or None: copies
    of one tensor of MIN_NBYTES or more, either clock, either sync."""
    if benchmark not in BANDWIDTH_BENCHMARKS.values() or params.get("layout") != "one":
        return None
    try:
        if parse_size(str(params.get("size"))) < MIN_NBYTES:
            return None
    except XferbenchError:  # no size, or not one
        return None
    direction, memory = params.get("direction"), params.get("host_memory")
    if direction == "d2d":
        return "d2d"
    if direction in ("h2d", "d2h") and memory in ("pinned", "pageable"):
        return f"{memory}_{direction}"
    return None


def _ceiling(row: ReferenceRow | None, meta: MachineMetadata) -> tuple[float | None, str]:
    """The link's theoretical rate per direction in GB/s, and the link it is of."""
    if row is not None and row.link.kind == C2C:
        return row.link.ceiling_gbps, row.link.label
    for gen, width in ((meta.pcie_gen_max, meta.pcie_width_max), (meta.pcie_gen, meta.pcie_width)):
        rate = pcie_theoretical_bytes_per_s(gen, width)
        if rate:
            return rate / 1e9, f"PCIe Gen{gen} x{width}"
    if row is not None:
        return row.link.ceiling_gbps, row.link.label  # this link was not recorded
    return None, ""


def judge(figure: str, value: float, meta: MachineMetadata,
          table: ReferenceTable | None = None, nbytes: int | None = None) -> Assessment:
    """``value`` of ``figure`` (GB/s, or us for a round trip) on the machine ``meta`` records,
    against the table's row for its GPU and link (the shipped table by default); a copy of
    ``nbytes`` under MIN_NBYTES has no range (its rate is its latency's), only the ceiling."""
    unit = FIGURES[figure]
    row, why = row_for(table or shipped(), meta) if not meta.emulated else (None, EMULATED)
    is_rate = unit == "GB/s" and figure != "d2d"
    ceiling, link = _ceiling(row, meta) if is_rate and not meta.emulated else (None, "")
    rng: Range | None = row.figures.get(figure) if row is not None else None
    if rng is not None and nbytes is not None and nbytes < MIN_NBYTES:
        rng, why = None, (f"no reference for a copy of {size_label(nbytes)}: under "
                          f"{size_label(MIN_NBYTES)} a copy runs at its latency's rate")
    base = Assessment(figure=figure, value=value, unit=unit, verdict=NO_REFERENCE,
                      low=rng.low if rng else None, high=rng.high if rng else None,
                      reference=row.id if rng and row else "",
                      setup=row.setup if rng and row else (why or _none_for(row, figure)),
                      ceiling_gbps=ceiling, ceiling=link)
    if ceiling is not None and value > ceiling:
        return replace(base, verdict=ABOVE_LINK, cause=measurement_problem(
            value, ceiling, link))
    if rng is None:
        return base
    lower = rng.low is not None and value < rng.low * (1 - TOLERANCE)
    higher = rng.high is not None and value > rng.high * (1 + TOLERANCE)
    if unit != "GB/s":  # a time: more is worse
        lower, higher = higher, lower
    if lower:
        return replace(base, verdict=BELOW if unit == "GB/s" else SLOWER,
                       cause="; ".join(likely_causes(meta)) or NO_CAUSE)
    return replace(base, verdict=(ABOVE if unit == "GB/s" else FASTER) if higher else WITHIN)


def _none_for(row: ReferenceRow | None, figure: str) -> str:
    if row is None:
        return "no reference for this GPU"
    return f"no published {NAMES[figure]} for {row.setup}"


def measurement_problem(value: float, ceiling: float, link: str) -> str:
    """Why a rate above its link's is no record, in one sentence."""
    return (f"{value:.1f} GB/s is above the {link} link's theoretical {ceiling:.1f} GB/s per "
            "direction, which no copy reaches: a measurement problem (a clock that missed "
            "part of the copy, or bytes counted wrong), never a record")


def likely_causes(meta: MachineMetadata) -> list[str]:
    """What the run recorded that slows a copy: a link trained below its maximum, an
    off-node NUMA placement, throttling, a virtual machine; empty where nothing was."""
    out = []
    gen, width = meta.pcie_gen_load, meta.pcie_width_load
    gmax, wmax = meta.pcie_gen_max, meta.pcie_width_max
    if gen and width and gmax and wmax and (gen < gmax or width < wmax):
        out.append(f"the link ran at Gen{gen} x{width} under load, below its maximum "
                   f"Gen{gmax} x{wmax}")
    ran, node = cpu_set(meta.cpu_affinity), cpu_set(meta.gpu_numa_cpus)
    if ran and node and not ran <= node:
        out.append(f"the measuring process ran on CPUs {meta.cpu_affinity}, not all on the "
                   f"GPU's NUMA node {meta.gpu_numa_node} (CPUs {meta.gpu_numa_cpus})")
    slowed = sorted(SLOWDOWNS.intersection(meta.throttle_reasons_load or ()))
    clock, top = meta.sm_clock_mhz_load, meta.sm_clock_max_mhz
    if slowed:
        out.append(f"the GPU throttled under load ({' and '.join(slowed)})")
    elif clock and top and clock < THROTTLE_CLOCK_SHARE * top:
        out.append(f"the SM clock ran at {clock:.0f} of {top:.0f} MHz under load")
    if meta.virtualized:
        out.append("a virtual machine (the CPU reports a hypervisor): its link may be shared "
                   "or passed through")
    return out


def cpu_set(text: str | None) -> set[int]:
    """"0-3,6" -> {0, 1, 2, 3, 6}; empty for none or for text that is not a CPU list."""
    out: set[int] = set()
    for part in filter(None, str(text or "").split(",")):
        lo, _, hi = part.partition("-")
        if not (lo.isdigit() and (hi.isdigit() or not hi)):
            return set()
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def assess_result(rs: ResultSet, r: Result) -> Assessment | None:
    """``r`` judged, where it is a reference figure measured on an accelerator; else None."""
    figure = figure_of(r.benchmark, r.param_dict)
    meta = rs.metadata_for(r)
    if figure is None or not r.ok or r.nbytes is None or (
            rs.gpu_for(r) is None and not meta.emulated):
        return None
    return judge(figure, gbps(r.nbytes, float(r.value)), meta)  # type: ignore[arg-type]


def not_a_record(a: Assessment | None) -> str | None:
    """Why a figure may not be quoted as a record (above its link), or None."""
    return a.cause if a is not None and a.verdict == ABOVE_LINK else None


def claim_exception(unless: str, meta: MachineMetadata,
                    table: ReferenceTable | None = None) -> str | None:
    """Why a claim with ``unless`` (a key of CLAIM_CONDITIONS) does not apply on this
    machine ("does not apply: NVLink-C2C, pageable is nearly pinned here"), or None."""
    row, _ = row_for(table or shipped(), meta)
    if row is None or unless not in CLAIM_CONDITIONS or row.pageable_nearly_pinned is None:
        return None
    return f"{row.link.label}, {CLAIM_CONDITIONS[unless]} ({row.setup}, reference {row.id})"
