"""lint's synchronise and clock rules on the shapes training code has them: a synchronise
under a device-type test or in a helper called sync(), a meter updated after a synchronise, a
setup timer, the advice of a timer on a device other than CUDA, and an explicit synchronise
every training step (XB109), reported unless a timer reads the clock after it."""

from __future__ import annotations

import textwrap

from xferbench.lint import lint_text


def lint(src: str, **kw) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.severity) for f in
            lint_text(textwrap.dedent(src), "t.py", **kw).findings]


def messages(src: str) -> list[str]:
    return [f.message for f in lint_text(textwrap.dedent(src), "t.py").findings]


def test_a_helper_named_sync_of_another_module_synchronises_before_the_clock():
    assert lint("""\
        import time
        from utils import timer
        def bench(model, x, device):
            x = x.to(device)
            t0 = time.time()
            y = model(x)
            timer.sync()
            print(time.time() - t0)
        """) == []


def test_an_alias_of_torch_cuda_synchronize_synchronises():
    assert lint("""\
        import time
        import torch
        def bench(model, x, device):
            sync = torch.cuda.synchronize
            x = x.to(device)
            t0 = time.time()
            y = model(x)
            sync()
            print(time.time() - t0)
        """) == []


def test_a_meter_updated_after_a_synchronise_is_no_unsynchronised_work():
    assert lint("""\
        import time
        import torch
        def train(model, loader, opt, device, losses, batch_time):
            end = time.time()
            for x in loader:
                x = x.to(device)
                loss = model(x).mean()
                loss.backward()
                opt.step()
                torch.cuda.synchronize()
                losses.update(loss.detach(), x.size(0))
                batch_time.update(time.time() - end)
                end = time.time()
        """) == []


def test_a_setup_timer_around_a_move_and_a_fill_is_not_reported():
    assert lint("""\
        import time
        import torch
        def main(device):
            t0 = time.time()
            model = torch.nn.Linear(4, 4).to(device)
            w = torch.zeros(4, device=device)
            print("setup", time.time() - t0)
        """) == []


def test_a_single_timed_forward_is_still_reported():
    assert lint("""\
        import time
        def bench(model, x, device):
            x = x.to(device)
            t0 = time.time()
            y = model(x)
            print(time.time() - t0)
        """) == [(6, "XB107", "warning")]


def test_a_timer_on_an_mps_branch_advises_the_mps_synchronise():
    found = messages("""\
        import time
        def bench(model, x, device):
            x = x.to(device)
            t0 = time.time()
            y = model(x)
            if device == "mps":
                print(time.time() - t0)
        """)
    assert len(found) == 1 and "torch.mps.synchronize()" in found[0]
    assert "torch.cuda" not in found[0]


def test_a_timer_off_the_cuda_branch_advises_the_device_s_own_synchronise():
    found = messages("""\
        import time
        def bench(model, x, device):
            x = x.to(device)
            t0 = time.time()
            y = model(x)
            if device.type != "cuda":
                print(time.time() - t0)
        """)
    assert len(found) == 1 and "torch.accelerator.synchronize()" in found[0]
    assert "torch.cuda" not in found[0]


STEP_SYNC = """\
    import time
    import torch
    def train(model, loader, opt, device):
        for x in loader:
            x = x.to(device)
            loss = model(x).mean()
            loss.backward()
            opt.step()
            {sync}
    """


def test_an_explicit_synchronise_every_step_is_reported():
    for sync in ("torch.cuda.synchronize()", "torch.accelerator.synchronize()",
                 "torch.xpu.synchronize()", "torch.cuda.current_stream().synchronize()"):
        assert lint(STEP_SYNC.format(sync=sync)) == [(9, "XB109", "warning")], sync


def test_a_side_stream_s_or_an_event_s_synchronise_is_not_a_drain():
    for sync in ("stream.synchronize()", "done.synchronize()"):
        assert lint(STEP_SYNC.format(sync=sync)) == [], sync


def test_a_synchronise_a_timer_reads_after_is_not_reported():
    assert lint("""\
        import time
        import torch
        def train(model, loader, opt, device, batch_time):
            end = time.time()
            for x in loader:
                x = x.to(device)
                loss = model(x).mean()
                loss.backward()
                opt.step()
                torch.cuda.synchronize()
                batch_time.update(time.time() - end)
                end = time.time()
        """) == []


def test_a_synchronise_before_event_timing_is_not_reported():
    assert lint("""\
        import torch
        def train(model, loader, opt, device, start, end):
            for x in loader:
                start.record()
                loss = model(x.to(device)).mean()
                loss.backward()
                opt.step()
                end.record()
                torch.cuda.synchronize()
                print(start.elapsed_time(end))
        """) == []


def test_a_synchronise_in_a_step_function_or_under_a_step_guard():
    assert lint("""\
        import torch
        def step(model, x, opt):
            loss = model(x).mean()
            loss.backward()
            opt.step()
            torch.cuda.synchronize()

        def train(model, loader, opt, device):
            for i, x in enumerate(loader):
                step(model, x.to(device), opt)
                if i % 100 == 0:
                    torch.cuda.synchronize()
        """) == [(6, "XB109", "warning"), (12, "XB109", "info")]


def test_a_synchronise_outside_training_is_not_reported():
    assert lint("""\
        import torch
        def evaluate(model, loader, device):
            for x in loader:
                out = model(x.to(device))
                torch.cuda.synchronize()
        def main(model, device):
            model.to(device)
            torch.cuda.synchronize()
        """) == []


def test_a_synchronise_inside_a_measurement_is_not_reported():
    assert lint("""\
        import torch
        from utils import timeit
        def train(model, loader, opt, device, profiling_enabled):
            for x in loader:
                with timeit("train/sample"):
                    x = x.to(device)
                    if profiling_enabled:
                        torch.cuda.synchronize()
                loss = model(x).mean()
                loss.backward()
                opt.step()
                with torch.profiler.record_function("step"):
                    torch.cuda.synchronize()
        """) == []


def test_a_data_loading_timer_is_no_measurement_of_device_work():
    assert lint("""\
        import time
        import torch
        def train(model, loader, opt, device, meters, num_classes):
            start_data_loading = time.time()
            for x, target in loader:
                x = x.to(device, non_blocking=True)
                onehot = torch.zeros(target.size(0), num_classes, device=device)
                onehot.scatter_(1, target.to(device).unsqueeze(1), 1)
                meters.data_time.update(time.time() - start_data_loading)
                loss = model(x).mean()
                loss.backward()
                opt.step()
                start_data_loading = time.time()
        """) == []
