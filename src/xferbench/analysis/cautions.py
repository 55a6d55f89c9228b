"""What a quote must say with one number beside its value: a fraction outside 0 to 1 (what it
measured instead), a spread too wide to quote it bare. ``citation`` adds them to a
citation's caution, and every table that shows a noise marks it the same way."""

from __future__ import annotations

import math

from ..results import Result


def value_caution(r: Result) -> str | None:
    """A fraction outside 0 to 1, in one sentence: what it measured instead; None within.
    Overlap's serialised fraction is 1 - (t_copy + t_compute - t_both) / min(t_copy,
    t_compute): above 1 where the two together took longer than one after the other, below 0
    where together they took less than the longer alone (which no overlap can do)."""
    if r.unit != "fraction" or r.value is None or not math.isfinite(r.value) \
            or 0.0 <= r.value <= 1.0:
        return None
    if r.benchmark.endswith("Overlap.track_serialised_fraction"):
        if r.value > 1.0:
            return (f"a serialised fraction of {r.value:.3g} is above 1: the copy and the "
                    "matmuls together took longer than one after the other, so they slowed "
                    "each other (contention), and the figure says how much, not how much of "
                    "the copy was hidden")
        return (f"a serialised fraction of {r.value:.3g} is below 0: together the copy and "
                "the matmuls took less than the longer of the two alone, which no overlap "
                "can do: the run-to-run noise is larger than the effect")
    return (f"a fraction of {r.value:.3g} is outside 0 to 1: it is not a share of anything "
            "(read it as a fault of the measurement)")


#: The noise (IQR / median) above which a figure is marked noisy: a rerun may differ by as
#: much (pyperf warns "the benchmark result may be unstable" above a 10% deviation).
NOISY = 0.10


def noisy(spread: float | None, digits: int = 1) -> bool:
    """The spread, as shown to ``digits`` decimals of a percent, is above ``NOISY``: "10.0%"
    is not marked, whatever lies past its last digit."""
    return spread is not None and round(spread * 100, digits) > NOISY * 100


def noise_text(spread: float | None, digits: int = 1) -> str:
    """"2.8%", "52.0% (noisy)", or "n/a" without quartiles: a table's noise cell."""
    if spread is None:
        return "n/a"
    return f"{spread:.{digits}%}" + (" (noisy)" if noisy(spread, digits) else "")


def noise_caution(r: Result) -> str | None:
    """A spread above ``NOISY`` in one sentence; None within it."""
    if not noisy(r.spread, 0):
        return None
    return (f"noisy: its IQR is {r.spread:.0%} of the median (above {NOISY:.0%}), so a rerun "
            "may differ by as much")
