"""MeasureSpec: one frozen record of what is measured and how, one set of defaults, quick mode
resolved once at the edge; and the one parser of boolean environment variables."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from xferbench import XferbenchError
from xferbench.flags import env_flag, parse_flag
from xferbench.measurement import FrozenDict, Measurement, Stats
from xferbench.practices import BENCH_SPEC, quick
from xferbench.spec import DEFAULT_SPEC, MIN_SAMPLES, QUICK_SCALE, MeasureSpec


def test_the_defaults_live_in_one_place():
    # the plugin's option defaults and the library's measure() both start from DEFAULT_SPEC
    from xferbench import pytest_plugin

    assert (pytest_plugin.MIN_TIME_S, pytest_plugin.MAX_TIME_S) == (
        DEFAULT_SPEC.min_time_s, DEFAULT_SPEC.max_time_s)
    assert BENCH_SPEC.max_time_s < DEFAULT_SPEC.max_time_s


def test_a_spec_is_frozen_and_replace_checks_its_values():
    spec = MeasureSpec(label="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.label = "y"  # type: ignore[misc]
    assert spec.replace(nbytes=8).nbytes == 8 and spec.nbytes is None
    with pytest.raises(XferbenchError, match="not a budget"):
        spec.replace(max_time_s=float("inf"))
    with pytest.raises(XferbenchError, match="is not a clock"):
        spec.replace(clock="wall")
    with pytest.raises(XferbenchError, match="must be at least 1"):
        spec.replace(batch=0)


def test_for_quick_scales_every_budget_once():
    spec = MeasureSpec(warmup_s=0.1, min_time_s=0.2, max_time_s=1.0, min_samples=10)
    q = spec.for_quick()
    assert (q.warmup_s, q.min_time_s, q.max_time_s) == pytest.approx(
        (0.1 * QUICK_SCALE, 0.2 * QUICK_SCALE, 1.0 * QUICK_SCALE))
    assert q.min_samples == MIN_SAMPLES and q.quick
    assert q.for_quick() is q  # applying it twice changes nothing


def test_a_spec_round_trips_and_refuses_unknown_fields():
    spec = MeasureSpec(label="h2d", nbytes=4096, clock="completion_s", quick=True)
    assert MeasureSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    with pytest.raises(XferbenchError, match="unknown fields: colour"):
        MeasureSpec.from_dict({**spec.to_dict(), "colour": "red"})


def test_a_measurement_holds_its_spec_and_computes_its_statistics_once(monkeypatch):
    m = Measurement(device="cpu", completion_s=(3.0, 1.0, 2.0),
                    spec=MeasureSpec(label="x", nbytes=10))
    assert (m.label, m.nbytes) == ("x", 10)
    calls = []
    real = Stats.of

    def counting(samples):
        calls.append(1)
        return real(samples)

    monkeypatch.setattr(Stats, "of", counting)
    assert m.median == 2.0 and m.p20 and m.min == 1.0 and m.cv and m.iqr
    assert len(calls) == 1


def test_a_measurements_extra_is_read_only_yet_pickles_and_serialises():
    m = Measurement(device="cpu", completion_s=(1.0,), extra={"stream_hold": True})
    assert isinstance(m.extra, FrozenDict)
    with pytest.raises(TypeError, match="read-only"):
        m.extra["stream_hold"] = False  # type: ignore[index]
    with pytest.raises(TypeError, match="read-only"):
        m.extra.update(a=1)  # type: ignore[attr-defined]
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.extra == {"stream_hold": True}
    assert json.loads(json.dumps(m.to_dict()))["extra"] == {"stream_hold": True}


def test_a_version_1_record_is_upgraded_on_load():
    v1 = {"schema_version": 1, "label": "h2d", "clock": None, "device": "cpu", "nbytes": 8,
          "calls_per_sample": 4, "warmup_s": 0.01, "total_s": 0.3, "stop": "target_cv",
          "target_cv": 0.05, "device_s": [], "completion_s": [1e-6, 2e-6], "enqueue_s": [],
          "extra": {}}
    m = Measurement.from_dict(v1)
    assert m.spec == MeasureSpec(label="h2d", nbytes=8)  # a CV rule is not an IQR rule
    assert m.calls_per_sample == 4 and m.completion_s == (1e-6, 2e-6)
    assert Measurement.from_dict(m.to_dict()) == m


@pytest.mark.parametrize(("text", "value"), [
    ("1", True), ("true", True), ("Yes", True), ("ON", True),
    ("", False), ("0", False), ("false", False), ("no", False), (" off ", False),
])
def test_boolean_variables_read_one_way(text, value):
    assert parse_flag("XFERBENCH_QUICK", text) is value


@pytest.mark.parametrize("text", ["maybe", "2", "quick"])
def test_a_boolean_variable_that_is_neither_is_one_sentence(text):
    with pytest.raises(XferbenchError, match=rf"XFERBENCH_QUICK='{text}' is not a yes or no"):
        parse_flag("XFERBENCH_QUICK", text)


def test_quick_mode_false_is_off(monkeypatch):
    monkeypatch.setenv("XFERBENCH_QUICK", "false")
    assert quick() is False and env_flag("XFERBENCH_QUICK") is False
    monkeypatch.setenv("XFERBENCH_QUICK", "1")
    assert quick() is True
