"""The pytest plugin: xfer_benchmark's samples become pytest-benchmark results, and its options
(JSON, autosave, compare-fail, skip/only/disable) and bad input behave as the issue asks.

Each test writes a user's test file with pytester and runs pytest on it; runs that need a fresh
interpreter (what is imported at load, the installed quick suite) use a subprocess.
"""

from __future__ import annotations

import json
import statistics

import pytest

# the plugin stands on pytest-benchmark: an interpreter without it (a minimal GPU image) skips
pytest.importorskip("pytest_benchmark", reason="xfer_benchmark needs pytest-benchmark")

from xferbench.devices import is_emulated  # noqa: E402
from xferbench.measurement import Measurement  # noqa: E402
from xferbench.pytest_plugin import result_info  # noqa: E402
from xferbench.spec import MeasureSpec  # noqa: E402

pytest_plugins = ["pytester"]

#: Short budgets for the inner runs; every inner run times on the CPU unless it says otherwise.
FAST = ("--xfer-device", "cpu", "--xfer-min-time", "0.05", "--xfer-max-time", "0.2",
        "-p", "no:cacheprovider")

COPY_TEST = """
import json

import pytest
import torch


def test_copy(xfer_benchmark):
    src = torch.arange(2**20, dtype=torch.float32)  # 4 MiB
    dst = torch.empty_like(src)
    xfer_benchmark.nbytes = src.nbytes
    out = xfer_benchmark(dst.copy_, src)
    assert out is dst and torch.equal(dst, src)
    with open("measurement.json", "w") as fh:
        json.dump(xfer_benchmark.measurement.to_dict(), fh)


@pytest.mark.xfer_benchmark(nbytes=1000)
def test_marked(xfer_benchmark):
    assert xfer_benchmark(sum, range(10)) == 45
"""


def _benchmarks(path) -> dict[str, dict]:
    """pytest-benchmark's JSON at ``path``, by test name."""
    return {b["name"]: b for b in json.loads(path.read_text())["benchmarks"]}


def test_json_holds_our_per_call_samples_and_names_the_host_clock_on_cpu(pytester):
    import torch

    pytester.makepyfile(test_user=COPY_TEST)
    result = pytester.runpytest(*FAST, "--strict-markers", "--benchmark-json", "out.json")
    result.assert_outcomes(passed=2)

    m = Measurement.from_dict(json.loads((pytester.path / "measurement.json").read_text()))
    bench = _benchmarks(pytester.path / "out.json")
    copy = bench["test_copy"]
    stats = copy["stats"]
    # The data are measure()'s samples, seconds per call: a sample of a block of N calls is
    # stored once, with N as pytest-benchmark's iterations.
    assert stats["data"] == list(m.completion_s)
    assert stats["rounds"] == len(m.completion_s)
    assert stats["iterations"] == m.calls_per_sample == copy["extra_info"]["calls_per_sample"]
    assert stats["median"] == pytest.approx(statistics.median(m.completion_s), rel=1e-12)
    assert stats["ops"] == pytest.approx(len(m.completion_s) / sum(m.completion_s))
    info = copy["extra_info"]
    assert info["clock"] == "host"
    assert info["clock_field"] == "completion_s"
    assert info["device"] == "cpu"
    assert info["nbytes"] == 4 * 2**20
    assert info["gbps"] == pytest.approx(4 * 2**20 / stats["median"] / 1e9)
    assert info["torch"] == torch.__version__
    assert info["cuda"] == torch.version.cuda
    assert info["warnings"] == list(m.warnings)
    assert copy["options"]["timer"] == "xferbench.measure:completion_s"
    # The marker declares the bytes too.
    assert bench["test_marked"]["extra_info"]["nbytes"] == 1000
    assert "host clock" in result.stdout.str()


@pytest.mark.slow
def test_planted_slowdown_fails_compare_and_unchanged_rerun_passes(pytester, monkeypatch):
    # A sleep holds its duration on a busy machine (a preempted sleeper still wakes at its
    # deadline), so 30% slower is far outside the run-to-run noise of the median.
    pytester.makepyfile(test_work="""
        import os
        import time


        def test_work(xfer_benchmark):
            xfer_benchmark(time.sleep, float(os.environ["WORK_S"]))
    """)
    budget = ("--xfer-min-time", "0.1", "--xfer-max-time", "0.3")
    compare = ("--benchmark-compare", "--benchmark-compare-fail=median:10%")

    monkeypatch.setenv("WORK_S", "0.010")
    base = pytester.runpytest(*FAST, *budget, "--benchmark-autosave", "--benchmark-json", "a.json")
    base.assert_outcomes(passed=1)
    assert len(list((pytester.path / ".benchmarks").rglob("*.json"))) == 1

    monkeypatch.setenv("WORK_S", "0.013")
    # In a subprocess: pytest-benchmark raises its PerformanceRegression out of the terminal
    # summary, which an in-process run would hand to this test.
    slow = pytester.runpytest_subprocess(*FAST, *budget, *compare, "--benchmark-json", "b.json")
    ratio = (_benchmarks(pytester.path / "b.json")["test_work"]["stats"]["median"]
             / _benchmarks(pytester.path / "a.json")["test_work"]["stats"]["median"])
    assert ratio > 1.2, ratio
    assert slow.ret == pytest.ExitCode.TESTS_FAILED
    slow.stderr.fnmatch_lines([
        "Performance has regressed:",
        "*test_work (0001_*) - Field 'median' has failed PercentageRegressionCheck: *> 10.0*",
    ])

    monkeypatch.setenv("WORK_S", "0.010")
    same = pytester.runpytest(*FAST, *budget, *compare)
    assert same.ret == 0, same.stdout.str()
    same.assert_outcomes(passed=1)


def test_absent_device_is_one_sentence_and_a_usage_error(pytester):
    pytester.makepyfile(test_x="def test_x(xfer_benchmark):\n    xfer_benchmark(int)\n")
    result = pytester.runpytest("--xfer-device", "cuda:99", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == [errors[0]] and errors[0].startswith(
        "ERROR: --xfer-device: device 'cuda:99' not found: "), result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()

    result = pytester.runpytest("--xfer-device", "tpu", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --xfer-device: device 'tpu' is not a device type*"])


def test_bad_budgets_are_usage_errors(pytester):
    result = pytester.runpytest("--xfer-min-time", "0", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--xfer-min-time: '0' is not a time*"])
    result = pytester.runpytest("--xfer-min-time", "2", "--xfer-max-time", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --xfer-min-time 2.0 is above --xfer-max-time 1.0*"])


def test_fixture_used_twice_is_pytest_benchmarks_own_error(pytester):
    pytester.makepyfile(test_twice="""
        def test_twice(xfer_benchmark):
            xfer_benchmark(int)
            xfer_benchmark(int)


        def test_after_benchmark(benchmark, xfer_benchmark):
            benchmark(int)
            xfer_benchmark(int)
    """)
    result = pytester.runpytest(*FAST, "--benchmark-json", "out.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*FixtureAlreadyUsed: Fixture can only be used once. "
        "Previously it was used in xfer_benchmark(...) mode.",
        "*FixtureAlreadyUsed: Fixture can only be used once. "
        "Previously it was used in benchmark(...) mode.",
    ])
    assert _benchmarks(pytester.path / "out.json") == {}


def test_raising_call_fails_its_test_and_saves_nothing_for_it(pytester):
    pytester.makepyfile(test_raise="""
        def boom():
            raise ValueError("boom: the workload broke")


        def test_raises(xfer_benchmark):
            xfer_benchmark(boom)


        def test_wrong_after_timing(xfer_benchmark):
            assert xfer_benchmark(int) == 1


        def test_fine(xfer_benchmark):
            xfer_benchmark(int)
    """)
    result = pytester.runpytest(*FAST, "--benchmark-json", "out.json", "--benchmark-autosave")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*ValueError: boom: the workload broke"])
    assert set(_benchmarks(pytester.path / "out.json")) == {"test_fine"}
    (saved,) = (pytester.path / ".benchmarks").rglob("*.json")
    assert [b["name"] for b in json.loads(saved.read_text())["benchmarks"]] == ["test_fine"]


SKIP_ONLY_DISABLE = """
calls = []


def test_timed(xfer_benchmark):
    assert xfer_benchmark(calls.append, 1) is None
    with open("calls.txt", "w") as fh:
        fh.write(str(len(calls)))


def test_plain():
    pass
"""


def test_disable_runs_the_call_once_and_stores_nothing(pytester):
    pytester.makepyfile(test_opts=SKIP_ONLY_DISABLE)
    result = pytester.runpytest(*FAST, "--benchmark-disable", "--benchmark-json", "out.json")
    result.assert_outcomes(passed=2)
    assert (pytester.path / "calls.txt").read_text() == "1"
    assert not (pytester.path / "out.json").exists()


def test_skip_and_only_select_tests_as_for_benchmark(pytester):
    pytester.makepyfile(test_opts=SKIP_ONLY_DISABLE)
    skip = pytester.runpytest(*FAST, "--benchmark-skip", "-rs")
    skip.assert_outcomes(passed=1, skipped=1)
    skip.stdout.fnmatch_lines(["*test_opts.py*--benchmark-skip*"])
    only = pytester.runpytest(*FAST, "--benchmark-only", "-rs")
    only.assert_outcomes(passed=1, skipped=1)
    only.stdout.fnmatch_lines(["*--benchmark-only active*"])
    assert int((pytester.path / "calls.txt").read_text()) > 1


def test_unknown_marker_option_is_named(pytester):
    pytester.makepyfile(test_marker="""
        import pytest


        @pytest.mark.xfer_benchmark(bytes=10)
        def test_marked(xfer_benchmark):
            xfer_benchmark(int)
    """)
    result = pytester.runpytest(*FAST)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*xfer_benchmark marker has no option 'bytes': use nbytes, clock, min_time, max_time*"])


def test_plugin_loads_without_torch_and_stays_out_of_runs_without_the_fixture(pytester):
    pytester.makepyfile(test_plain="""
        import sys


        def test_plain(request):
            assert request.config.pluginmanager.hasplugin("xferbench")
            assert "torch" not in sys.modules
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=1)
    assert "xfer_benchmark on" not in result.stdout.str()  # no summary of ours


def test_the_old_quick_suite_path_says_where_it_moved(pytester):
    result = pytester.runpytest_subprocess("--pyargs", "xferbench.quick", "-p",
                                           "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*xferbench.quick moved to xferbench.practice_tests*"])


@pytest.mark.slow
def test_quick_suite_runs_from_any_folder_and_skips_what_needs_an_accelerator(pytester):
    result = pytester.runpytest_subprocess(
        "--pyargs", "xferbench.practice_tests", *FAST, "-rs", "--benchmark-json", "quick.json")
    result.assert_outcomes(passed=6, skipped=4)
    result.stdout.fnmatch_lines_random([
        "*test_copies.py*pinned host memory needs an accelerator",
        "*test_pipeline.py*pinned host memory needs an accelerator",
    ])
    bench = json.loads((pytester.path / "quick.json").read_text())["benchmarks"]
    assert {b["group"].split(":")[0] for b in bench} == {
        "pinned vs pageable",
        "created on the device vs on the host then copied",
        ".item() every batch vs once per epoch",
        "DataLoader pipeline, 2 workers, small model",
    }
    assert {b["extra_info"]["clock"] for b in bench} == {"host"}
    # a CPU's copy group names the host clock it was read on, never "device time"
    assert "pinned vs pageable: one 16MiB tensor, h2d, host clock (no device)" in {
        b["group"] for b in bench}
    assert not any("device time" in b["group"] or "{clock}" in b["group"] for b in bench)


def _measurement(**kw) -> Measurement:
    base = dict(device="cuda:0", completion_s=(3e-3, 3e-3, 3e-3),
                device_s=(1e-3, 2e-3, 2e-3), enqueue_s=(1e-5, 1e-5, 1e-5), nbytes=2 * 10**6,
                extra={"stream_hold": True})
    kw = {**base, **kw}
    spec = {k: kw.pop(k) for k in ("nbytes", "clock", "label") if k in kw}
    return Measurement(**kw, spec=MeasureSpec(**spec))


def test_accelerator_result_reads_device_events_and_keeps_every_clocks_median():
    info = result_info(_measurement(), {"torch": "2.13.0", "cuda": "13.0"})
    assert info["clock"] == "device_events" and info["clock_field"] == "device_s"
    assert info["gbps"] == pytest.approx(1.0)  # 2e6 bytes over the device median of 2 ms
    assert info["medians_s"] == {"device_s": 2e-3, "completion_s": 3e-3, "enqueue_s": 1e-5}
    assert info["stream_hold"] is True and info["cuda"] == "13.0"
    info = result_info(_measurement(clock="completion_s"), {})
    assert info["clock"] == "host_completion"
    assert info["gbps"] == pytest.approx(2e6 / 3e-3 / 1e9)


def test_cpu_result_is_named_the_host_clock():
    m = Measurement(device="cpu", completion_s=(1e-3, 1e-3), calls_per_sample=10)
    info = result_info(m, {})
    assert info["clock"] == "host" and info["calls_per_sample"] == 10
    assert info["gbps"] is None and "medians_s" not in info


@pytest.mark.gpu
def test_on_an_accelerator_the_json_holds_device_event_samples(pytester, gpu_device):
    pytester.makepyfile(test_user="""
        import torch


        def test_h2d(xfer_benchmark):
            x = torch.arange(2**22, dtype=torch.float32)
            xfer_benchmark.nbytes = x.nbytes
            y = xfer_benchmark(x.to, xfer_benchmark.device)
            assert torch.equal(y.cpu(), x)
    """)
    result = pytester.runpytest(
        "--xfer-device", gpu_device.name, "--xfer-min-time", "0.05", "--xfer-max-time", "0.3",
        "-p", "no:cacheprovider", "--benchmark-json", "out.json")
    result.assert_outcomes(passed=1)
    info = _benchmarks(pytester.path / "out.json")["test_h2d"]["extra_info"]
    assert info["clock"] == "device_events" and info["device"] == gpu_device.name
    assert info["emulated"] is is_emulated(gpu_device)  # an emulated run's figures say so
    assert info["calls_per_sample"] == 1
    assert set(info["medians_s"]) == {"device_s", "completion_s", "enqueue_s"}
    assert info["gbps"] > 0
