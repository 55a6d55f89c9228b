"""The audit on an accelerator: in CI the emulated one (XFERBENCH_EMU=1, where
``scripts/test`` runs the gpu tests), on a GPU machine the real one.

The must-show: a training step with known faults (a pageable batch copied ``non_blocking``,
one ``.item()`` per step, a mask built on the host and moved, a tensor read back with
``.cpu()`` every fourth step) reported exactly, per step, with bytes, directions, pinned or
pageable and the user's line; the same step fixed reports none of them; a step that mixes
devices raises PyTorch's own error with the audit's note naming the line that made the mask;
the audit never changes what the step computes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import xferbench
from xferbench.auditing import CopyEvent, MoveEvent, PinEvent, SyncEvent

pytestmark = pytest.mark.gpu

HERE = Path(__file__)
SOURCE = HERE.read_text().splitlines()
B, F, OUT = 32, 16, 4  # batch, features, outputs
STEPS = 8


def line(marker: str) -> int:
    """The line of this file whose comment is ``# <marker>``."""
    hits = [i + 1 for i, text in enumerate(SOURCE) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def setup(dev: torch.device) -> tuple[torch.nn.Module, torch.optim.Optimizer, list, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Linear(F, OUT).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    batches = [torch.randn(B, F) for _ in range(STEPS)]  # pageable host memory
    target = torch.randn(B, OUT, device=dev)
    return model, opt, batches, target


def faulty_step(i, model, opt, batch, target, dev) -> float:
    x = batch.to(dev, non_blocking=True)  # fault-copy
    mask = (torch.rand(B) > 0.1).to(dev)  # fault-mask
    out = model(x) * mask[:, None]
    loss = ((out - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    value = loss.item()  # fault-item
    if i % 4 == 0:
        out.detach().cpu()  # fault-cpu
    return value


def fixed_step(i, model, opt, batch, target, dev, total) -> torch.Tensor:
    x = batch.to(dev, non_blocking=True)  # fixed-copy: the batch is pinned
    mask = torch.rand(B, device=dev) > 0.1
    out = model(x) * mask[:, None]
    loss = ((out - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return total + loss.detach()  # read once, after the loop


def test_a_faulty_step_is_reported_exactly(gpu_device):
    dev = gpu_device.torch()
    model, opt, batches, target = setup(dev)
    with xferbench.audit() as a:
        for i, batch in enumerate(batches):
            faulty_step(i, model, opt, batch, target, dev)
    assert a.segments.boundary == "optimizer" and len(a.steps) == STEPS
    batch_bytes, mask_bytes, out_bytes = B * F * 4, B, B * OUT * 4
    for i, s in enumerate(a.steps):
        read = i % 4 == 0
        assert (s.h2d, s.h2d_bytes, s.h2d_pageable, s.h2d_pinned) == (
            2, batch_bytes + mask_bytes, 2, 0), i
        assert (s.non_blocking, s.non_blocking_refused) == (1, 1), i
        assert (s.d2h, s.d2h_bytes, s.d2h_pageable) == (read, read * out_bytes, read), i
        assert s.syncs == s.syncs_paid == 1 + read, i
        assert s.sync_kinds == ({"cpu": 1, "item": 1} if read else {"item": 1}), i
        assert (s.created_then_moved, s.created_then_moved_bytes) == (1, mask_bytes), i
    assert a.per_step.syncs == 1.25 and a.max_per_step.syncs == 2
    copies = [e for e in a.events if isinstance(e, CopyEvent) and e.direction == "h2d"]
    batch_copies = [e for e in copies if e.site.line == line("fault-copy")]
    assert len(batch_copies) == STEPS and all(
        (e.host_memory, e.non_blocking, e.asynchronous, e.nbytes, e.call)
        == ("pageable", True, False, batch_bytes, ".to()") for e in batch_copies)
    assert all(e.dst == str(gpu_device) and e.src == "cpu" for e in copies)
    moves = [e for e in a.events if isinstance(e, MoveEvent)]
    assert {(e.factory, e.factory_site.line, e.site.line, e.paid) for e in moves} == {
        ("torch.rand", line("fault-mask"), line("fault-mask"), True)}
    waits = [(e.kind, e.site.line) for e in a.events if isinstance(e, SyncEvent)]
    assert waits.count(("item", line("fault-item"))) == STEPS
    assert waits.count(("cpu", line("fault-cpu"))) == 2 and len(waits) == STEPS + 2
    findings = {(f["lint"], f["site"]["line"], f["count"])
                for f in a.report().to_dict()["findings"]}
    assert findings == {("XB105", line("fault-copy"), STEPS), ("XB101", line("fault-item"), STEPS),
                        ("XB101", line("fault-cpu"), 2), ("XB102", line("fault-mask"), STEPS)}


def test_the_same_step_fixed_reports_none_of_them(gpu_device):
    dev = gpu_device.torch()
    model, opt, batches, target = setup(dev)
    pinned = [b.pin_memory() for b in batches]  # pinned once, outside the step
    with xferbench.audit() as a:
        total = torch.zeros((), device=dev)
        for i, batch in enumerate(pinned):
            total = fixed_step(i, model, opt, batch, target, dev, total)
    assert len(a.steps) == STEPS
    per = a.per_step
    assert (per.h2d, per.h2d_pinned, per.h2d_pageable, per.non_blocking_refused) == (1, 1, 0, 0)
    assert (per.syncs, per.d2h, per.created_then_moved, per.pinned_in_step) == (0, 0, 0, 0)
    assert all(e.asynchronous for e in a.events if isinstance(e, CopyEvent))
    assert a.report().to_dict()["findings"] == []
    assert "findings: none" in str(a)
    total.item()  # the one read, after the audit


class HostMask(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(F, OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keep = torch.rand(x.shape[0]) > 0.5  # host-mask
        return self.fc(x) * keep[:, None]


def test_a_step_that_mixes_devices_raises_torchs_error_with_the_note(gpu_device):
    dev = gpu_device.torch()
    model = HostMask().to(dev)
    x = torch.randn(B, F, device=dev)
    with xferbench.audit() as a, pytest.raises(RuntimeError) as caught:
        model(x)
    assert str(caught.value).startswith("Expected all tensors to be on the same device")
    note = "\n".join(caught.value.__notes__)
    assert f"{HERE.name}:{line('host-mask')} by torch.rand(...)" in note
    assert "never moved" in note and f"on {gpu_device}" in note
    assert a.notes == [note]


def test_a_dropped_to_is_named_in_the_note(gpu_device):
    dev = gpu_device.torch()
    layer = torch.nn.Linear(F, OUT).to(dev)
    batch = torch.randn(B, F)
    with xferbench.audit(), pytest.raises(RuntimeError) as caught:
        batch.to(dev)  # dropped
        layer(batch)
    note = "\n".join(caught.value.__notes__)
    assert "`.to()` at " in note and f"{HERE.name}:{line('dropped')} made a copy" in note
    assert "[XB103]" in note


def test_the_audit_never_changes_what_the_step_computes(gpu_device):
    dev = gpu_device.torch()

    def train() -> tuple[list[float], list[torch.Tensor]]:
        model, opt, batches, target = setup(dev)
        torch.manual_seed(1)  # the masks' draws
        values = [faulty_step(i, model, opt, b, target, dev) for i, b in enumerate(batches)]
        return values, [p.detach().cpu() for p in model.parameters()]

    plain = train()
    with xferbench.audit() as a:
        audited = train()
    assert a.total.syncs > 0
    assert audited[0] == plain[0]
    assert all(torch.equal(p, q) for p, q in zip(plain[1], audited[1]))


def test_host_side_memory_decides_whether_a_copy_can_be_asynchronous(gpu_device):
    dev = gpu_device.torch()
    y = torch.randn(B, OUT, device=dev)
    pageable = torch.empty(B, OUT)
    with xferbench.audit() as a:
        y.to("cpu", non_blocking=True)  # into a pinned buffer torch makes
        pageable.copy_(y, non_blocking=True)  # into-pageable
    d2h = [e for e in a.events if isinstance(e, CopyEvent)]
    assert [(e.direction, e.host_memory, e.non_blocking, e.asynchronous) for e in d2h] == [
        ("d2h", "pinned", True, True), ("d2h", "pageable", True, False)]
    waits = [e for e in a.events if isinstance(e, SyncEvent)]
    assert [(e.kind, e.site.line) for e in waits] == [("to_host", line("into-pageable"))]
    assert a.total.non_blocking_refused == 1 and a.total.d2h_pinned_bytes == B * OUT * 4


def test_explicit_synchronize_counts_once_per_call(gpu_device):
    with xferbench.audit() as a:
        torch.accelerator.synchronize()  # generic
        getattr(torch, gpu_device.type).synchronize()  # backend
    waits = [(e.kind, e.site.line) for e in a.events if isinstance(e, SyncEvent)]
    assert waits == [("synchronize", line("generic")), ("synchronize", line("backend"))]


def test_pinning_in_the_step_data_from_python_and_module_moves(gpu_device):
    dev = gpu_device.torch()
    data = torch.utils.data.TensorDataset(torch.randn(3 * B, F))
    model = torch.nn.Linear(F, OUT)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(data, batch_size=B, pin_memory=True)
    with xferbench.audit() as a:
        for (batch,) in loader:  # pins-here
            x = batch.to(dev, non_blocking=True)
            model.to(dev)  # module-move
            labels = torch.tensor([1.0] * B, device=dev)  # from-data
            (model(x).sum() + labels.sum()).backward()
            opt.step()
            model.to("cpu")
    pins = [e for e in a.events if isinstance(e, PinEvent)]
    assert [(e.site.line, e.nbytes) for e in pins] == [(line("pins-here"), B * F * 4)] * 3
    data_copies = [e for e in a.events if isinstance(e, CopyEvent) and e.call == "torch.tensor()"]
    assert [(e.site.line, e.host_memory, e.nbytes) for e in data_copies] == [
        (line("from-data"), "pageable", B * 4)] * 3
    kinds = {f["kind"]: f for f in a.report().to_dict()["findings"]}
    assert kinds["module_move"]["lint"] == "XB104" and kinds["module_move"]["steps_seen"] == 3
    assert kinds["module_move"]["site"]["line"] == line("module-move")
    assert kinds["pinned_in_step"]["lint"] == "XB108"
    assert a.per_step.pinned_in_step == 1
    # there: 2 parameters (then their 2 gradients too), back: 2 parameters and 2 gradients
    assert a.total.module_moves == 2 + 4 + 4 + 4 + 4 + 4


@pytest.mark.cuda_only("torch.cuda.set_sync_debug_mode")
def test_torchs_sync_debug_count_is_reported_beside_the_audits(gpu_device):
    dev = gpu_device.torch()
    model, opt, batches, target = setup(dev)
    with xferbench.audit() as a:
        for i, batch in enumerate(batches):
            faulty_step(i, model, opt, batch, target, dev)
    debug = a.report().to_dict()["sync_debug"]
    assert debug["reason"] is None and debug["count"] >= STEPS  # every .item() at least
    assert "cross-check: torch's sync debug mode counted" in str(a)


def test_a_strided_pinned_source_cannot_be_asynchronous(gpu_device):
    dev = gpu_device.torch()
    pinned = torch.randn(B, 2 * F).pin_memory()
    with xferbench.audit() as a:
        pinned[:, :F].to(dev, non_blocking=True)  # strided
        pinned[:B // 2].to(dev, non_blocking=True)  # contiguous rows: asynchronous
    copies = [e for e in a.events if isinstance(e, CopyEvent)]
    assert [(e.host_memory, e.asynchronous) for e in copies] == [("pinned", False),
                                                                  ("pinned", True)]
    (finding,) = a.report().to_dict()["findings"]
    assert finding["site"]["line"] == line("strided") and "not contiguous" in finding["what"]


def test_a_model_built_on_the_host_and_moved_is_a_module_move_not_a_create_then_move(
        gpu_device):
    dev = gpu_device.torch()
    with xferbench.audit() as a:
        model = torch.nn.Sequential(torch.nn.Linear(F, OUT), torch.nn.BatchNorm1d(OUT))
        model.to(dev)  # built-then-moved
    assert a.total.created_then_moved == 0  # the BatchNorm's buffers are zeros/ones
    assert a.total.module_moves == 2 + 2 + 3  # weight, bias; BN weight, bias; 3 buffers
    (finding,) = a.report().to_dict()["findings"]
    assert (finding["kind"], finding["severity"], finding["lint"]) == ("module_move", "info",
                                                                      None)
    assert finding["site"]["line"] == line("built-then-moved")
