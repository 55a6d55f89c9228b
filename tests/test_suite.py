"""benchmarks/_asv.py: a class's whole grid measured in one process (one failure or misfit is
that combination's, never the class's), what ``xferbench run`` learns of the suite, and a
device probe that never imports torch into asv's own processes."""

from __future__ import annotations

import json
import sys
import time

import pytest

from xferbench.device_memory import DoesNotFit
from xferbench.practices import VerificationError

CPU_PROBE = json.dumps({"device": "cpu", "capabilities": {
    "device": "cpu", "pinned_memory": False, "timing_events": False, "side_streams": False,
    "reason": "the CPU has none"}})


@pytest.fixture
def suite(monkeypatch, tmp_path, fresh_suite):
    """benchmarks._asv imported with a CPU probe handed down, progress into a file."""
    monkeypatch.setenv("XFERBENCH_PROBE", CPU_PROBE)
    monkeypatch.setenv("XFERBENCH_PROGRESS", str(tmp_path / "progress.jsonl"))
    return fresh_suite("_asv")


def toy_class(suite, measure):
    """A Grid of two parameters whose odd n is skipped at discovery for one method."""

    class Toy(suite.Grid):
        params = (["a", "b"], [1, 2, 3])
        param_names = ["x", "n"]

        def setup_cache(self):
            return self.measure_grid()

        def measure(self, x, n):
            return measure(x, n)

        @suite.skip_when(params, lambda x, n: "odd n" if n % 2 else None)
        def track_even(self, cache, x, n):
            return self.values["track_even"]

    Toy.__module__ = "benchmarks.bench_toy"
    return Toy


def test_grid_measures_what_some_method_reports_and_keeps_each_outcome(suite, tmp_path):
    def measure(x, n):
        if (x, n) == ("a", 2):
            raise DoesNotFit("64 MiB x2 does not fit")
        if (x, n) == ("b", 2):
            raise VerificationError("destination 0 differs")
        return {"track_even": n * 10}

    toy = toy_class(suite, measure)
    cache = toy().setup_cache()
    assert list(cache) == [("a", 2), ("b", 2)]  # odd n: no method reports them
    assert cache[("a", 2)] == {"skip": "64 MiB x2 does not fit"}
    assert cache[("b", 2)]["error"].startswith("VerificationError: destination 0 differs")
    assert "Traceback" in cache[("b", 2)]["error"]
    lines = [json.loads(x) for x in (tmp_path / "progress.jsonl").read_text().splitlines()]
    assert [r["event"] for r in lines] == ["start", "combination", "combination"]
    import torch

    assert lines[0] == {"event": "start", "class": "bench_toy.Toy", "done": 0, "total": 2,
                        "executable": sys.executable, "torch": torch.__version__}
    assert [(r["params"], r["status"], r["done"]) for r in lines[1:]] == [
        (["a", "2"], "skipped", 1), (["b", "2"], "failed", 2)]
    assert lines[2]["why"] == "VerificationError: destination 0 differs"


def test_setup_turns_each_outcome_into_asvs_own(suite):
    toy = toy_class(suite, lambda x, n: {"track_even": 7.5})()
    cache = {("a", 2): {"values": {"track_even": 7.5}}, ("b", 2): {"skip": "does not fit"},
             ("a", 4): {"error": "RuntimeError: boom"}}
    toy.setup(cache, "a", 2)
    assert toy.track_even(cache, "a", 2) == 7.5
    with pytest.raises(NotImplementedError, match="does not fit"):
        toy.setup(cache, "b", 2)  # asv: skipped (NaN), this combination only
    with pytest.raises(RuntimeError, match="boom"):
        toy.setup(cache, "a", 4)  # asv: failed, this combination only
    with pytest.raises(NotImplementedError, match="not measured"):
        toy.setup(cache, "b", 6)


def test_a_value_with_no_samples_fails_its_combination_with_the_reason(suite, tmp_path):
    """An empty sample list would be stored by asv as a null that the progress line called
    measured; it is a failed combination, saying which measurement took none."""
    from xferbench.measurement import Measurement
    from xferbench.spec import MeasureSpec

    empty = Measurement(device="cuda:0", completion_s=(), spec=MeasureSpec(label="h2d 1MiB"),
                        stop="max_time_s")
    cache = toy_class(suite, lambda x, n: {"track_even": suite.measured(empty)})().setup_cache()
    assert cache[("a", 2)]["error"].startswith(
        "NoSamples: h2d 1MiB on completion_s (stopped: max_time_s): no samples were taken")
    lines = [json.loads(x) for x in (tmp_path / "progress.jsonl").read_text().splitlines()]
    assert {r["status"] for r in lines[1:]} == {"failed"}


def test_a_method_without_device_time_is_skipped_and_the_others_keep_their_values(suite):
    """A call that could not be held has no device time: that method is skipped with the
    reason (the machine's answer, not exit 3), the combination's other values stay."""
    from xferbench.measurement import Measurement
    from xferbench.spec import MeasureSpec

    why = "one call could not be held: it queues 4 operation(s) in 3 ms behind a hold"
    m = Measurement(device="cuda:0", completion_s=(1e-3, 1.1e-3, 1.2e-3),
                    spec=MeasureSpec(clock="completion_s"), extra={
                        "device_clock": "unavailable", "device_clock_unavailable": why})

    class Two(toy_class(suite, None)):
        def measure(self, x, n):
            return {"track_even": suite.device_time(m), "track_host": suite.measured(m)}

        def track_host(self, cache, x, n):
            return self.values["track_host"]

    Two.__module__ = "benchmarks.bench_toy"
    cache = Two().setup_cache()
    entry = cache[("a", 2)]
    assert entry["skips"] == {"track_even": f"no device time here: {why}"}
    assert entry["values"]["track_host"]["samples"] == [1e-3, 1.1e-3, 1.2e-3]
    two = Two()
    two.setup(cache, "a", 2)
    assert two.track_host(cache, "a", 2)["number"] == 1
    # asv's runner skips a track method (NaN) for SkipNotImplemented alone: any other error
    # raised there, NotImplementedError included, records the combination as failed
    from asv_runner.benchmarks.mark import SkipNotImplemented

    with pytest.raises(SkipNotImplemented, match="no device time here: one call could not"):
        two.track_even(cache, "a", 2)


def test_a_combination_over_its_time_limit_fails_alone(suite, monkeypatch):
    monkeypatch.setattr(suite, "COMBINATION_TIMEOUT_S", 0.2)

    def measure(x, n):
        if (x, n) == ("a", 2):
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 120:  # a hung combination
                pass
        return {"track_even": 1.0}

    started = time.perf_counter()
    cache = toy_class(suite, measure)().setup_cache()
    assert time.perf_counter() - started < 60  # stopped at its limit, not run to its end
    assert cache[("a", 2)] == {"error": "timed out after 0.2 s"}
    assert cache[("b", 2)] == {"values": {"track_even": 1.0}}


def test_a_class_with_nothing_to_measure_imports_nothing(run_python):
    code = ("import sys, benchmarks.bench_copies as b\n"
            "assert b.PinMemory().setup_cache() == {}\n"
            "assert b.Overlap().setup_cache() == {}\n"
            "print('torch' in sys.modules)")
    proc = run_python("-c", code, env={"XFERBENCH_PROBE": CPU_PROBE})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_describe_counts_what_runs_here_and_why_the_rest_does_not(run_python):
    proc = run_python("-m", "benchmarks._asv", "bench_copies", "bench_sync",
                      env={"XFERBENCH_PROBE": CPU_PROBE, "XFERBENCH_SWEEP": "default"})
    assert proc.returncode == 0, proc.stderr
    found = {f"{c['file']}.{c['class']}": c for c in json.loads(proc.stdout)}
    assert list(found) == ["bench_copies.Copy", "bench_copies.PinMemory",
                           "bench_copies.PinThenCopy", "bench_copies.Overlap", "bench_sync.Loop"]
    copy = found["bench_copies.Copy"]
    assert (copy["measured"], copy["combinations"]) == (10, 120)  # h2d pageable blocking
    assert len(copy["skips"]["track_completion_s"]) == 110
    assert ["h2d", "pinned", "blocking", "one", "64MiB",
            "pinned host memory needs an accelerator"] in copy["skips"]["track_completion_s"]
    assert copy["methods"] == ["track_completion_s", "track_device_s", "track_enqueue_s"]
    assert len(copy["skips"]["track_enqueue_s"]) == copy["combinations"]  # no enqueue on a CPU
    # no device clock on a CPU: its copies are host copies, on the completion clock
    assert len(copy["skips"]["track_device_s"]) == copy["combinations"]
    assert ["h2d", "pageable", "blocking", "one", "64MiB",
            "the CPU has no device clock: its copy is timed on the host (track_completion_s)"
            ] in copy["skips"]["track_device_s"]
    # asv is handed the combinations that run, or one that is skipped so the method is there
    assert len(copy["select"]["track_completion_s"]) == 10
    assert copy["select"]["track_enqueue_s"] == [["'h2d'", "'pageable'", "'blocking'", "'one'",
                                                  "'4KiB'"]]
    assert found["bench_copies.PinMemory"]["measured"] == 0
    assert found["bench_copies.PinThenCopy"]["measured"] == 0
    loop_skips = found["bench_sync.Loop"]["skips"]
    assert [row[:2] for row in loop_skips["track_step_s"]] == [["lagged", "256"]]  # no device
    assert len(loop_skips["track_syncs_per_step"]) == 12  # every read


@pytest.mark.slow
def test_probe_without_a_hand_down_runs_in_a_child_and_is_cached(run_python, tmp_path):
    env = {"XFERBENCH_PROBE": "", "XFERBENCH_DEVICE": "cpu", "TMPDIR": str(tmp_path)}
    code = ("import sys, benchmarks._asv as a\n"
            "print(a.DEVICE, a.CAPS.pinned_memory, 'torch' in sys.modules)")
    proc = run_python("-c", code, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["cpu", "False", "False"]  # torch only in the child
    cached = list(tmp_path.glob("xferbench-*/probe-*.json"))
    assert len(cached) == 1
    # the cache is what the next process reads: planted, it is believed
    data = json.loads(cached[0].read_text())
    data["capabilities"]["reason"] = "planted"
    cached[0].write_text(json.dumps(data))
    proc = run_python("-c", "import benchmarks._asv as a; print(a.CAPS.reason)", env=env)
    assert proc.stdout.strip() == "planted"
    # another device asked for is another cache entry
    proc = run_python("-c", "import benchmarks._asv as a; print(a.CAPS.reason)",
                      env={**env, "XFERBENCH_DEVICE": "auto"})
    assert proc.returncode == 0 and proc.stdout.strip() != "planted"


def test_a_probe_that_fails_says_why(run_python, tmp_path):
    env = {"XFERBENCH_PROBE": "", "XFERBENCH_DEVICE": "cuda:7", "TMPDIR": str(tmp_path)}
    proc = run_python("-c", "import benchmarks._asv", env=env)
    assert proc.returncode != 0
    assert "the device probe failed: xferbench.errors.XferbenchError: device 'cuda:7'" \
        in proc.stderr


def test_a_batched_device_time_sample_is_filed_as_the_calls_it_averages(suite):
    """asv's "number" of a device-time value is the calls each sample spans: 40 for a
    batch of 40 short calls, one for the host clock's samples of the same measurement."""
    from xferbench.measurement import Measurement

    m = Measurement(device="cuda:0", completion_s=(3e-6,) * 3, device_s=(2e-6,) * 3,
                    extra={"device_clock": "held, batched", "calls_per_batch": 40,
                           "device_calls_per_sample": 40})
    assert suite.measured(m, "device_s")["number"] == 40
    assert suite.measured(m, "completion_s")["number"] == 1


def test_how_a_figure_was_read_goes_to_the_progress_line_not_to_asv(suite, tmp_path):
    from xferbench.measurement import Measurement

    m = Measurement(device="cuda:0", completion_s=(2e-3,) * 3, device_s=(1e-3,) * 3,
                    extra={"device_clock": "held", "held_batches": 3, "all_discarded": False,
                           "sm_mhz": (1980.0,) * 3})
    cache = toy_class(suite, lambda x, n: {"track_even": suite.measured(m, "device_s")})() \
        .setup_cache()
    entry = cache[("a", 2)]
    assert set(entry["values"]["track_even"]) == {"samples", "number"}  # what asv stores
    assert entry["diagnostics"]["track_even"]["device_clock"] == "held"
    lines = [json.loads(x) for x in (tmp_path / "progress.jsonl").read_text().splitlines()]
    assert lines[1]["diagnostics"]["track_even"]["sm_mhz"] == [1980.0] * 3
