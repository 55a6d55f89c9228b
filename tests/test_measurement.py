"""Measurement and Stats: statistics from synthetic samples with known answers, persistence."""

from __future__ import annotations

import dataclasses
import json
import math
import random

import numpy as np
import pytest

from xferbench import XferbenchError
from xferbench.measurement import (
    SCHEMA_VERSION,
    Measurement,
    Stats,
    format_seconds,
    quantile,
)
from xferbench.spec import MeasureSpec


def test_stats_of_one_to_five_gives_textbook_values():
    st = Stats.of([5.0, 1.0, 4.0, 2.0, 3.0])  # unsorted on purpose
    assert st.n == 5
    assert st.median == 3.0
    assert st.mean == 3.0
    assert st.min == 1.0
    assert (st.q25, st.q75) == (2.0, 4.0)
    assert st.iqr == 2.0
    assert st.iqr_rel == pytest.approx(2 / 3)
    assert st.p20 == pytest.approx(1.8)
    assert st.p80 == pytest.approx(4.2)
    # sample standard deviation (n - 1): sqrt(10 / 4) over the mean 3
    assert st.cv == pytest.approx(math.sqrt(2.5) / 3)


def test_stats_of_even_count_interpolates_the_median():
    assert Stats.of([1.0, 2.0, 10.0, 20.0]).median == 6.0


def test_stats_of_constant_samples_has_zero_spread():
    st = Stats.of([2e-3] * 7)
    assert st.cv == 0.0
    assert st.iqr == 0.0
    assert st.median == 2e-3


def test_stats_of_one_sample_has_zero_cv():
    st = Stats.of([4.0])
    assert (st.n, st.median, st.cv, st.iqr) == (1, 4.0, 0.0, 0.0)


def test_stats_of_no_samples_raises():
    with pytest.raises(ValueError, match="no samples"):
        Stats.of([])


@pytest.mark.parametrize("q", [0.0, 0.2, 0.25, 0.5, 0.75, 0.8, 1.0])
def test_quantile_matches_numpy_linear_interpolation(q):
    rng = random.Random(1234)
    xs = sorted(rng.lognormvariate(0, 1) for _ in range(37))
    assert quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)), rel=1e-12)


def test_quantile_of_nothing_is_nan():
    assert math.isnan(quantile([], 0.5))


def _m(**kw):
    base = dict(device="cuda:0", completion_s=(3e-3, 3e-3, 3e-3, 3e-3, 3e-3),
                device_s=(1e-3, 1e-3, 1e-3, 1e-3, 1e-3),
                enqueue_s=(1e-5, 1e-5, 1e-5, 1e-5, 1e-5), nbytes=2_000_000)
    base.update(kw)
    return with_spec(**base)


def with_spec(**kw):
    """A Measurement whose spec fields (nbytes, clock, label, target_iqr) are given flat."""
    spec = {k: kw.pop(k) for k in ("nbytes", "clock", "label", "target_iqr") if k in kw}
    return Measurement(**kw, spec=MeasureSpec(**spec))


def test_primary_clock_is_device_time_where_it_exists():
    m = _m()
    assert m.primary_clock == "device_s"
    assert m.median == 1e-3
    assert m.stats("completion_s").median == 3e-3
    assert m.stats("enqueue_s").median == 1e-5


def test_primary_clock_is_completion_time_on_the_cpu():
    m = Measurement(device="cpu", completion_s=(2.0, 4.0, 6.0))
    assert m.primary_clock == "completion_s"
    assert m.median == 4.0
    assert m.min == 2.0


def test_gbps_is_decimal_bytes_over_median_device_time():
    # 2e6 bytes in 1 ms is 2e9 bytes/s: 2.0 GB/s (10^9), not 1.86 GiB/s
    assert _m().gbps == pytest.approx(2.0)


def test_gbps_is_none_without_a_byte_count():
    assert _m(nbytes=None).gbps is None


def test_unknown_clock_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown clock 'wall_s'"):
        _m().samples("wall_s")


def test_clean_measurement_has_no_warnings():
    assert _m().warnings == ()


def test_wide_iqr_warns_with_its_share_of_the_median():
    m = Measurement(device="cpu", completion_s=(1.0, 1.0, 2.0, 3.0, 3.0, 3.0))
    # q25 = 1.25, q75 = 3.0, median 2.5: IQR is 70% of the median
    assert "IQR is 70% of the median" in m.warnings


def test_few_samples_warn():
    m = Measurement(device="cpu", completion_s=(1.0, 1.0, 1.0))
    assert m.warnings == ("only 3 samples",)


def test_stopping_noisy_at_max_time_warns_but_stopping_quiet_does_not():
    noisy = (1.0, 1.1, 1.2, 1.1, 1.0, 1.05)  # IQR 0.0875 over a median of 1.075: 8.1%
    m = with_spec(device="cpu", completion_s=noisy, stop="max_time_s", target_iqr=0.02)
    assert any(w.startswith("stopped at max_time_s with IQR 8.1% of the median (target 2.0%)")
               for w in m.warnings)
    quiet = Measurement(device="cpu", completion_s=(1.0,) * 6, stop="max_time_s")
    assert quiet.warnings == ()


def test_measurement_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        _m().nbytes = 5  # type: ignore[misc]


def test_dict_round_trip_through_json_keeps_every_field():
    m = _m(calls_per_sample=10, warmup_s=0.05, total_s=1.5, stop="max_time_s",
           target_iqr=0.01, label="h2d pinned non_blocking one 64MiB", extra={"k": [1, 2]})
    data = json.loads(json.dumps(m.to_dict()))
    assert data["schema_version"] == SCHEMA_VERSION
    back = Measurement.from_dict(data)
    assert back == m
    assert back.extra == {"k": [1, 2]}
    assert isinstance(back.device_s, tuple)


def test_dict_round_trip_keeps_an_absent_byte_count():
    m = Measurement(device="cpu", completion_s=(1e-6, 2e-6))
    back = Measurement.from_dict(m.to_dict())
    assert back.nbytes is None
    assert back.device_s == ()
    assert back == m


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, 0, None, "1"])
def test_unknown_schema_version_is_refused_by_name(version):
    data = _m().to_dict()
    data["schema_version"] = version
    with pytest.raises(XferbenchError, match=rf"schema_version {version!r} is not supported"):
        Measurement.from_dict(data)


def test_missing_schema_version_is_refused():
    data = _m().to_dict()
    del data["schema_version"]
    with pytest.raises(XferbenchError, match="schema_version None"):
        Measurement.from_dict(data)


def test_malformed_record_is_an_xferbench_error():
    data = _m().to_dict()
    del data["completion_s"]
    with pytest.raises(XferbenchError, match="malformed"):
        Measurement.from_dict(data)
    data = _m().to_dict()
    data["device_s"] = ["fast"]
    with pytest.raises(XferbenchError, match="malformed"):
        Measurement.from_dict(data)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1.5, "1.5 s"), (12.25, "12.2 s"), (1.23e-3, "1.23 ms"), (2.5e-6, "2.5 us"),
     (999e-9, "999 ns"), (3e-9, "3 ns"), (0.0, "0 ns"), (math.nan, "n/a"), (math.inf, "n/a")],
)
def test_format_seconds_picks_the_readable_unit(seconds, text):
    assert format_seconds(seconds) == text


def test_summary_names_median_spread_gbps_and_warnings():
    m = with_spec(device="cpu", completion_s=(1e-3, 1e-3, 2e-3), nbytes=1_000_000,
                  label="h2d pageable blocking one 1MiB")
    text = m.summary()
    first, *rest = text.splitlines()
    assert first.startswith("h2d pageable blocking one 1MiB on cpu: median 1 ms")
    assert "n=3" in first
    assert first.endswith(", 1.00 GB/s")
    assert "  WARNING: only 3 samples" in rest
