"""xferbench run's progress: each combination's line as it comes, with done/total and the time
left, and the skips and failures found while measuring kept for the sidecar."""

from __future__ import annotations

import io
import json
import time

from xferbench.commands.run.plan import Group, group_classes
from xferbench.commands.run.progress import Progress
from xferbench.commands.run.suite import SuiteClass
from xferbench.commands.run.transaction import outcomes
from xferbench.results.runrecords import Outcome
from xferbench.units import format_value

COPY = SuiteClass("bench_copies", "Copy", ("track_device_s",),
                  ("direction", "host_memory", "sync", "layout", "size"), 2, 4,
                  {"track_device_s": [["h2d", "pinned", "blocking", "one", "4KiB",
                                       "pinned host memory needs an accelerator"]]},
                  {"track_device_s": [["'h2d'", "'pageable'", "'blocking'", "'one'", "'4KiB'"],
                                      ["'h2d'", "'pageable'", "'blocking'", "'one'", "'64MiB'"]]})
PIN = SuiteClass("bench_copies", "PinMemory", ("track_host_s",), ("size",), 0, 1,
                 {"track_host_s": [["4KiB", "no pinned memory"]]},
                 {"track_host_s": [["'4KiB'"]]})
LOOP = SuiteClass("bench_sync", "Loop", ("track_step_s",), ("read", "width"), 1, 1,
                  {"track_step_s": []}, {"track_step_s": [["'cpu'", "'256'"]]})


def _follow(tmp_path, records):
    path = tmp_path / "progress.jsonl"
    out = io.StringIO()
    progress = Progress(str(path), 2, out).start({"bench_copies.Copy": list(COPY.param_names)})
    with open(path, "a") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
            fh.flush()
    time.sleep(0.4)
    progress.stop()
    return progress, out.getvalue().splitlines()


def test_progress_prints_each_combination_with_done_total_and_time_left(tmp_path):
    base = {"class": "bench_copies.Copy", "total": 2}
    progress, lines = _follow(tmp_path, [
        {**base, "event": "start", "done": 0},
        {**base, "event": "combination", "done": 1, "params": ["h2d", "pageable", "blocking",
         "one", "64MiB"], "status": "measured", "seconds": 0.8, "why": "",
         "values": {"track_device_s": 0.00681}},
        {**base, "event": "combination", "done": 2, "params": ["h2d", "pageable", "blocking",
         "one", "256MiB"], "status": "skipped", "seconds": 0.0,
         "why": "256 MiB x2 does not fit in the 0.4 GiB free on cpu", "values": {}},
    ])
    assert lines[1] == "  bench_copies.Copy: measuring 2 combinations in one process"
    assert lines[2].startswith("  [1/2 ") and ", ~" in lines[2] and " left]" in lines[2]
    assert lines[2].endswith("Copy(h2d, pageable, blocking, one, 64MiB): device_s 6.81 ms (0.8 s)")
    assert lines[3].startswith("  [2/2 ") and "left" not in lines[3]
    assert lines[3].endswith(": skipped: 256 MiB x2 does not fit in the 0.4 GiB free on cpu")
    assert progress.outcomes == {"bench_copies.Copy": [Outcome(
        (("direction", "h2d"), ("host_memory", "pageable"), ("sync", "blocking"),
         ("layout", "one"), ("size", "256MiB")),
        "skipped", "256 MiB x2 does not fit in the 0.4 GiB free on cpu")]}
    # the sidecar's outcomes: discovery skips per method, runtime ones per class
    out = outcomes([COPY], progress)
    assert [row.status for row in out["bench_copies.Copy.track_device_s"]] == [
        "skipped", "skipped"]
    assert out["bench_copies.Copy.track_device_s"][0].reason == (
        "pinned host memory needs an accelerator")


def test_a_method_skipped_and_a_capped_combination_reach_the_sidecar_apart(tmp_path):
    """A measured combination may lack one method's value (no device time here) and may be
    sampled under a budget cap: the first is an outcome of that method alone, the second a
    "capped" row of every method, and the line says both."""
    base = {"class": "bench_copies.Copy", "total": 2}
    params = ["h2d", "pinned", "non_blocking", "one", "64MiB"]
    progress, lines = _follow(tmp_path, [
        {**base, "event": "start", "done": 0},
        {**base, "event": "combination", "done": 1, "params": params, "status": "measured",
         "seconds": 0.8, "why": "", "values": {"track_completion_s": 0.0012},
         "skips": {"track_device_s": "no device time here: one call could not be held"},
         "capped": "sampled under a budget cap: max_time_s 0.17 s of its default 1 s"},
    ])
    assert lines[2].endswith("completion_s 1.2 ms; device_s skipped: no device time here: "
                             "one call could not be held (0.8 s) [sampled under a budget cap]")
    (tmp_path / "alone").mkdir()
    _, alone = _follow(tmp_path / "alone", [
        {**base, "event": "start", "done": 0},
        {**base, "event": "combination", "done": 1, "params": params, "status": "measured",
         "seconds": 0.1, "why": "", "values": {},
         "skips": {"track_device_s": "no device time here"}}])
    assert alone[2].endswith("): device_s skipped: no device time here (0.1 s)")  # no "; "
    copy = SuiteClass("bench_copies", "Copy", ("track_completion_s", "track_device_s"),
                      COPY.param_names, 1, 1, {}, {})
    out = outcomes([copy], progress)
    assert list(out) == ["bench_copies.Copy.track_device_s"]  # the method alone
    assert out["bench_copies.Copy.track_device_s"][0].reason.startswith("no device time here")
    from xferbench.commands.run.transaction import capped

    rows = capped([copy], progress)
    assert sorted(rows) == ["bench_copies.Copy.track_completion_s",
                            "bench_copies.Copy.track_device_s"]
    assert rows["bench_copies.Copy.track_device_s"][0].status == "capped"


def test_each_measuring_class_is_an_asv_call_selecting_what_runs():
    copy_select = (r"^bench_copies\.Copy\.track_device_s\((?:'h2d',\ 'pageable',\ "
                   r"'blocking',\ 'one',\ '4KiB'|'h2d',\ 'pageable',\ 'blocking',\ 'one',\ "
                   r"'64MiB')\)$")
    assert COPY.selection() == (copy_select,)
    import re

    assert re.search(copy_select, "bench_copies.Copy.track_device_s('h2d', 'pageable', "
                                  "'blocking', 'one', '64MiB')")
    assert not re.search(copy_select, "bench_copies.Copy.track_device_s('h2d', 'pinned', "
                                      "'blocking', 'one', '64MiB')")
    groups = group_classes([COPY, PIN, LOOP], None)
    # classes with nothing to measure ride along with the first call: they cost no process
    assert groups == [
        Group("bench_copies.Copy (and, with nothing to measure here, PinMemory)",
              (copy_select, *PIN.selection()), (COPY, PIN)),
        Group("bench_sync.Loop", LOOP.selection(), (LOOP,)),
    ]
    assert group_classes([COPY, PIN, LOOP], r"Copy\.") == [
        Group(r"--bench Copy\.", (r"Copy\.",), (COPY,))]


def test_a_fraction_above_one_is_flagged_in_the_progress_line(tmp_path):
    base = {"class": "bench_copies.Copy", "total": 1}
    _, lines = _follow(tmp_path, [
        {**base, "event": "start", "done": 0},
        {**base, "event": "combination", "done": 1, "params": ["pinned", "copy_first", "1MiB"],
         "status": "measured", "seconds": 0.7, "why": "",
         "values": {"track_serialised_fraction": 1.21}},
    ])
    assert "serialised_fraction 1.21 (outside 0 to 1: not a share) (0.7 s)" in lines[2]


def test_a_fraction_outside_zero_to_one_is_flagged_wherever_a_value_is_formatted():
    assert format_value(1.5, "fraction") == "1.5 fraction (outside 0 to 1: not a share)"
    assert format_value(-0.02, "fraction") == "-0.02 fraction (outside 0 to 1: not a share)"
    assert format_value(0.191, "fraction") == "0.191 fraction"
    assert format_value(1.0, "fraction") == "1 fraction"
