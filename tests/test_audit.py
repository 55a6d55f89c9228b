"""The audit on the CPU: what a CPU-only run counts (the waits an accelerator would
pay, marked not paid), create-then-move, step boundaries, the device-mismatch note (on the
meta device, which raises the same kind of error), the report and its JSON schema, and that
the audit never changes what a step computes.

Every audit here names ``device="cpu"``: on a machine with a GPU these tests still test the
CPU-only semantics (tests/test_audit_device.py tests the accelerator's).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import torch
from conftest import committed_results

import xferbench
from xferbench.auditing import Counts, MoveEvent, SyncEvent
from xferbench.auditing.modes import Watch
from xferbench.auditing.recorder import Recorder

HERE = Path(__file__)
SOURCE = HERE.read_text().splitlines()


def line(marker: str) -> int:
    """The line of this file whose comment starts ``# <marker>`` (then ends, or says more
    after a colon)."""
    hits = [i + 1 for i, text in enumerate(SOURCE)
            if text.rstrip().endswith(f"# {marker}") or f"# {marker}: " in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def schema() -> dict:
    text = resources.files("xferbench").joinpath("data", "audit.schema.json").read_text()
    return json.loads(text)


def model_and_optimizer(kind: type = torch.optim.SGD) -> tuple:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    return model, kind(model.parameters(), lr=0.05)


def step(model, opt, x, y) -> torch.Tensor:
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def batches(n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(4, 8, generator=g), torch.randn(4, 2, generator=g)) for _ in range(n)]


def waits(a) -> list[SyncEvent]:
    return [e for e in a.events if isinstance(e, SyncEvent)]


# -- a CPU-only run ---------------------------------------------------------------------------

def test_cpu_run_counts_each_read_a_gpu_would_wait_for_once_marked_not_paid(capsys):
    model, opt = model_and_optimizer()
    with xferbench.audit(device="cpu") as a:
        for i, (x, y) in enumerate(batches(4)):
            loss = step(model, opt, x, y)
            loss.item()  # item
            if loss > 100:  # bool
                pass
            out = model(x).detach()
            host = out.cpu()  # cpu: one read; what it returned is a host tensor
            host.numpy()
            host.tolist()
            if i % 2 == 1:
                (out * 2).tolist()  # tolist
                print(loss)  # print
    assert a.segments.boundary == "optimizer"
    assert [s.syncs for s in a.steps] == [3, 5, 3, 5]
    assert a.per_step.syncs == 4 and a.per_step.syncs_paid == 0 and a.total.syncs == 16
    assert a.per_step.sync_kinds == {"item": 1, "bool": 1, "cpu": 1, "tolist": 0.5, "print": 0.5}
    sites = {(e.kind, e.site.line) for e in waits(a)}
    assert sites == {("item", line("item")), ("bool", line("bool")),
                     ("cpu", line("cpu")), ("tolist", line("tolist")),
                     ("print", line("print"))}
    assert all(not e.paid and e.device == "cpu" for e in waits(a))
    assert all(e.site.file == str(HERE) for e in waits(a))
    assert a.total.copies == 0  # nothing crosses a link on the CPU


def test_cpu_run_leaves_out_host_tensors_and_pytorchs_own_reads():
    model, opt = model_and_optimizer(torch.optim.Adam)  # Adam reads its step count (a host
    with xferbench.audit(device="cpu") as a:          # tensor on a GPU too) with .item()
        for x, y in batches(3):
            step(model, opt, x, y)
            torch.arange(4).tolist()  # a host factory's tensor: host-resident on a GPU too
            (torch.ones(2) * 3).sum().item()  # computed from host factories alone
            kept = torch.tensor([1.0, 2.0], device="cpu")  # device= given: on the device
            kept.sum().item()  # device-given
    assert [e.site.line for e in waits(a)] == [line("device-given")] * 3
    assert a.per_step.syncs == 1


def test_create_then_move_names_the_factory_and_the_move():
    dev = torch.device("cpu")  # what `cuda if available else cpu` gives on this machine
    with xferbench.audit(device="cpu") as a:
        torch.zeros(4).to(dev)  # zeros-to
        torch.zeros(4, device=dev).to(dev)  # made there: not a move
        mask = torch.rand(4) > 0.5  # rand
        mask[:, None].to(dev)  # mask-to
        staging = torch.empty(4)
        staging.copy_(torch.from_numpy(torch.arange(4.0).numpy()))  # external data now
        staging.to(dev)
        torch.tensor([1.0, 2.0]).to(dev)  # from data: its bytes must cross anyway
    moves = [e for e in a.events if isinstance(e, MoveEvent)]
    assert [(m.factory, m.factory_site.line, m.site.line, m.nbytes, m.paid) for m in moves] == [
        ("torch.zeros", line("zeros-to"), line("zeros-to"), 16, False),
        ("torch.rand", line("rand"), line("mask-to"), 4, False)]
    assert a.total.created_then_moved == 2 and a.total.created_then_moved_bytes == 20


# -- steps ------------------------------------------------------------------------------------

def test_reads_after_the_optimizer_step_count_with_their_step_and_code_after_the_loop_does_not():
    model, opt = model_and_optimizer()
    with xferbench.audit(device="cpu") as a:
        for i, (x, y) in enumerate(batches(5)):
            loss = step(model, opt, x, y)
            loss.item()
            if i % 4 == 0:
                loss.cpu()
        model(x).sum().item()  # after the loop
    assert [s.syncs for s in a.steps] == [2, 1, 1, 1, 2]
    assert a.segments.after and a.total.syncs == 8
    assert a.per_step.syncs == 7 / 5


def test_no_step_boundary_counts_the_whole_run_as_one_step():
    with xferbench.audit(device="cpu") as a:
        t = torch.randn(3, device="cpu")
        t.sum().item()
        t.tolist()
    assert a.segments.boundary == "none" and len(a.steps) == 1
    assert a.per_step.syncs == 2
    assert "no step boundary was seen" in str(a)


def test_marked_steps_replace_the_optimizers():
    model, opt = model_and_optimizer()
    with xferbench.audit(device="cpu") as a:
        for x, y in batches(6):
            step(model, opt, x, y).item()
        a.step()
    assert a.segments.boundary == "manual" and len(a.steps) == 1 and a.per_step.syncs == 6


def test_two_optimizers_make_one_step_per_round():
    model, opt = model_and_optimizer()
    other = torch.nn.Linear(2, 2)
    opt2 = torch.optim.SGD(other.parameters(), lr=0.1)
    with xferbench.audit(device="cpu") as a:
        for x, y in batches(3):
            step(model, opt, x, y).item()
            loss2 = other(torch.randn(1, 2, device="cpu")).sum()
            opt2.zero_grad()
            loss2.backward()
            opt2.step()
            loss2.item()
    assert a.segments.optimizers == 2 and len(a.steps) == 3
    assert [s.syncs for s in a.steps] == [2, 2, 2]


def test_the_step_limit_stops_counting_and_lets_the_code_run_on():
    from torch.overrides import _get_current_function_mode

    model, opt = model_and_optimizer()
    with xferbench.audit(device="cpu", steps=2) as a:
        losses = [step(model, opt, x, y).item() for x, y in batches(6)]
        assert _get_current_function_mode() is None  # off: the rest runs at full speed
    assert len(losses) == 6 and a.stopped
    assert len(a.steps) == 2 and a.total.syncs == 2 and not a.segments.after
    with pytest.raises(xferbench.XferbenchError, match="steps 0 is not a number of steps"):
        xferbench.audit(steps=0)


# -- what the audit leaves as it found it -------------------------------------------------------

def test_the_audit_never_changes_what_a_step_computes():
    def train() -> tuple[list[float], list[torch.Tensor]]:
        model, opt = model_and_optimizer(torch.optim.Adam)
        losses = [step(model, opt, x, y).item() for x, y in batches(5)]
        return losses, [p.detach().clone() for p in model.parameters()]

    plain_losses, plain = train()
    with xferbench.audit(device="cpu") as a:
        audited_losses, audited = train()
    assert a.total.syncs == 5  # it did watch
    assert audited_losses == plain_losses
    assert all(torch.equal(p, q) for p, q in zip(plain, audited))


def test_everything_installed_is_removed_and_an_explicit_synchronize_counts_once(monkeypatch):
    import types

    calls = []
    fake = types.SimpleNamespace()
    fake.synchronize = lambda *args: calls.append(args)
    outer = types.SimpleNamespace()
    outer.synchronize = lambda: fake.synchronize()  # a device module calling a generic one
    original, outer_original = fake.synchronize, outer.synchronize
    monkeypatch.setattr("xferbench.auditing.modes.synchronize_calls", lambda: [
        (fake, "synchronize", "torch.fake.synchronize"),
        (outer, "synchronize", "torch.outer.synchronize")])
    recorder = Recorder(cpu_mode=True)
    watch = Watch(recorder)
    watch.start()
    try:
        fake.synchronize()  # sync-a
        outer.synchronize()  # sync-b
    finally:
        watch.stop()
    assert [(e.kind, e.call, e.site.line) for e in recorder.events] == [
        ("synchronize", "torch.fake.synchronize", line("sync-a")),
        ("synchronize", "torch.outer.synchronize", line("sync-b"))]
    assert len(calls) == 2 and fake.synchronize is original and outer.synchronize is outer_original
    from torch.optim.optimizer import _global_optimizer_post_hooks
    from torch.overrides import _get_current_function_mode

    assert not _global_optimizer_post_hooks and _get_current_function_mode() is None


# -- the device-mismatch note (meta raises the same error as a device) -----------------------

def test_mismatch_note_names_the_line_that_made_the_odd_tensor_and_the_error_propagates():
    layer = torch.nn.Linear(3, 2).to("meta")
    with xferbench.audit(device="cpu") as a, pytest.raises(RuntimeError) as caught:
        x = torch.ones(2, 3)  # made-on-host
        layer(x)
    message = str(caught.value)
    assert message.startswith("Tensor on device") and "is not on the expected device" in message
    note = "\n".join(caught.value.__notes__)
    assert f"test_audit.py:{line('made-on-host')} by torch.ones(...)" in note
    assert "aten::" in note and "on meta" in note and "on cpu" in note
    assert a.notes == [note]


def test_mismatch_note_names_a_module_that_was_never_moved():
    criterion = torch.nn.CrossEntropyLoss(weight=torch.ones(3))
    logits = torch.randn(2, 3).to("meta")
    with xferbench.audit(device="cpu"), pytest.raises(RuntimeError) as caught:
        criterion(logits, torch.zeros(2, dtype=torch.long).to("meta"))
    note = "\n".join(caught.value.__notes__)
    assert "weight (cpu): it is the buffer CrossEntropyLoss.weight" in note
    assert "was never moved to meta" in note


# -- the report ---------------------------------------------------------------------------------

def test_report_json_matches_its_schema_and_the_text_says_not_paid():
    model, opt = model_and_optimizer()
    # priced from the tests' CPU series: the shipped table may hold GPU prices
    with xferbench.audit(device="cpu", results=str(committed_results())) as a:
        for x, y in batches(3):
            step(model, opt, x, y).item()
            torch.zeros(2).to("cpu")
    data = a.report().to_dict()
    import jsonschema  # a test extra (not on an offline GPU check machine, which runs -m gpu)

    jsonschema.validate(data, schema())
    assert data["cpu_run"] and data["step_count"] == 3 and data["per_step"]["syncs"] == 1
    assert [f["kind"] for f in data["findings"]] == ["sync", "created_then_moved"]
    assert data["findings"][0]["lint"] == "XB101" and data["findings"][1]["lint"] == "XB102"
    text = str(a)
    assert "(CPU run: not paid here, an accelerator waits)" in text
    assert "no GPU price yet (the results hold only CPU runs" in text
    json.dumps(data)  # plain JSON


def test_schema_counts_are_the_counts_fields():
    from dataclasses import fields

    declared = schema()["$defs"]["counts"]["properties"]
    assert set(declared) == {f.name for f in fields(Counts)}
    assert set(schema()["required"]) == set(schema()["properties"]) - {"script"}


def test_schema_rejects_a_report_that_breaks_it():
    import jsonschema

    with xferbench.audit(device="cpu") as a:
        torch.ones(1).tolist()
    data = a.report().to_dict()
    jsonschema.validate(data, schema())
    for broken in ({**data, "schema_version": 2}, {**data, "per_step": {"syncs": 1}},
                   {**data, "boundary": "epoch"}, {k: v for k, v in data.items() if k != "steps"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema())


# -- prices (a fabricated GPU price book: test data, not a measurement) -------------------

def _gpu_book():
    from xferbench.analysis.prices import Price, PriceBook, Rate, Series

    h200 = Series("gpu-test", "2.5.0", "cuda:0", "NVIDIA H200")
    cpu = Series("cpu-box", "2.5.0", "cpu", None)
    item = Price("item_per_epoch", "per-batch `.item()`", "one read per epoch", "steps/s",
                 ratio=2.0, practice_s=0.001, baseline_s=0.002, noise=0.03, series=h200,
                 command="xferbench cite Loop.track_step_s --params read=item_every_batch")
    rates = (Rate("h2d", "pageable", "blocking", 1 << 20, 1e-4, 0.01, h200, "cite-pageable"),
             Rate("h2d", "pinned", "blocking", 1 << 20, 5e-5, 0.01, h200, "cite-pinned"),
             Rate("h2d", "pinned", "blocking", 64 << 20, 1.0, 0.01, cpu, "cpu-figure"))
    return PriceBook("test data", (item,), rates, ({"machine": "gpu-test", "torch": "2.5.0",
                                                    "quick": False, "device": "cuda:0",
                                                    "gpu": "NVIDIA H200"},))


def test_findings_are_priced_from_gpu_figures_the_costliest_first():
    from xferbench.auditing import CallSite, CopyEvent
    from xferbench.auditing.findings import findings

    here = CallSite("train.py", 10, "step", "x = batch.to(dev)")
    there = CallSite("train.py", 20, "step", "loss.item()")
    copy = CopyEvent("h2d", 1 << 20, "pageable", True, False, "cpu", "cuda:0", ".to()", here)
    wait = SyncEvent("item", "cuda:0", True, ".item()", "aten::_local_scalar_dense", there)
    steps = ((copy, wait), (copy, wait, wait))  # the second step reads twice
    found = findings(steps, (), _gpu_book())
    by_kind = {f.kind: f for f in found}
    sync, pageable = by_kind["sync"], by_kind["pageable_copy"]
    assert sync.per_step == 1.5 and sync.price.gpu and sync.price.cite.startswith("xferbench cite")
    assert sync.price.cost_s == pytest.approx(1.5 * 0.001)  # 1.5 waits x (2 ms - 1 ms)
    # 1 MiB a step at 1 MiB per 100 us, pinned at 50 us: the fix saves 50 us a step
    assert pageable.price.cost_s == pytest.approx(1e-4)
    assert pageable.price.saving_s == pytest.approx(5e-5)
    assert "NVIDIA H200" in pageable.price.text and "cpu-box" not in pageable.price.text
    assert [f.kind for f in found] == ["sync", "pageable_copy"]  # 1.5 ms before 0.1 ms
    assert pageable.lint == "XB105" and sync.lint == "XB101"


def test_a_cpu_only_price_table_is_never_quoted_as_a_gpu_figure():
    from xferbench.analysis.prices import PriceBook
    from xferbench.auditing import CallSite
    from xferbench.auditing.findings import findings

    book = PriceBook.load(None)  # the shipped table: CPU runs only, today
    wait = SyncEvent("item", "cuda:0", True, ".item()", "aten::_local_scalar_dense",
                     CallSite("t.py", 1, "f"))
    (sync,) = findings(((wait,),), (), book)
    if book.get("item_per_epoch") is None:
        assert not sync.price.gpu and sync.price.cost_s is None
        assert sync.price.text.startswith("no GPU price yet")
    else:  # a table made on a GPU: its figure, with the command that cites it
        assert sync.price.gpu and sync.price.cite.startswith("xferbench cite")


def test_the_overhead_measurement_runs_both_ways_and_counts_the_aten_calls():
    from xferbench.auditing.overhead import floor, format_overheads, measure

    results = measure(calls=20, repeats=2, step_calls=2)
    base = floor(calls=20, repeats=2)
    assert base.name == "floor" and len(base.audited_s) == 2
    by_name = {r.name: r for r in results}
    assert by_name["op"].aten_calls == 1 and by_name["read"].aten_calls == 1
    assert by_name["step"].aten_calls > 20  # forward, backward, the optimizer's update
    assert all(len(r.plain_s) == len(r.audited_s) == 2 and r.plain > 0 for r in results)
    lines = format_overheads(results)
    assert lines[0].split()[:3] == ["workload", "plain", "audited"] and len(lines) == 5


def test_the_sync_debug_count_counts_torchs_warnings_and_passes_the_others_on(monkeypatch):
    # the CUDA cross-check's plumbing, without CUDA: torch's warning is counted and hidden,
    # the user's own warnings reach whoever records them (pytest, here)
    import contextlib
    import warnings

    from xferbench import device_watch

    monkeypatch.setattr(device_watch, "sync_debug_warnings", lambda device:
                        contextlib.nullcontext())
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("error")  # as pytest -W error: the count must not raise
        with device_watch.sync_debug_count(None) as count:
            for _ in range(3):
                warnings.warn(f"x: {device_watch.SYNC_DEBUG_WARNING}", UserWarning, stacklevel=1)
            warnings.simplefilter("always", DeprecationWarning)
            warnings.warn("the user's own", DeprecationWarning, stacklevel=1)
    assert count == [3]
    assert [str(w.message) for w in log] == ["the user's own"]


def test_the_cross_check_compares_what_torchs_sync_debug_mode_can_see():
    import types

    from xferbench.auditing import CallSite, CopyEvent, segment
    from xferbench.auditing.events import Mark
    from xferbench.auditing.report import build_report
    from xferbench.devices import Device

    site = CallSite("t.py", 1, "f")

    def wait(kind: str, call: str) -> SyncEvent:
        return SyncEvent(kind, "cuda:0", True, call, "op", site)

    events = [
        wait("item", ".item()"),  # seen by the debug mode
        wait("synchronize", "torch.cuda.synchronize"),  # not: a device's
        wait("synchronize", "torch.cuda.Event.synchronize"),  # not: an event's
        wait("synchronize", "torch.cuda.Stream.synchronize"),  # seen: a stream's
        CopyEvent("h2d", 4, "pageable", False, False, "cpu", "cuda:0", ".to()", site),  # seen
        CopyEvent("h2d", 4, "pageable", True, False, "cpu", "cuda:0", ".to()", site),  # not
        CopyEvent("d2h", 4, "pageable", True, False, "cuda:0", "cpu", ".copy_()", site),
        wait("to_host", ".copy_()"),  # that copy's wait: not seen (no stream sync asked)
    ]
    audit = types.SimpleNamespace(  # an Audit's face, as on CUDA (test data)
        device=Device("cuda", 0), limit=None, stopped=False, aten_calls=0, results=None,
        notes=[], sync_debug_count=4, events=events, total=Counts.of(events),
        segments=segment(events, [Mark(len(events), "manual")]))
    debug = build_report(audit).to_dict()["sync_debug"]
    assert debug == {"count": 4, "audit_comparable": 3, "reason": None}
