"""lint's training steps run by helpers: a loop whose backward and optimiser step run inside
another module's helper (timm's `loss_scaler(loss, optimizer)`, a `train_step_fn`) trains; a
helper that builds an optimiser, schedules it or runs a whole epoch does not make a loop one."""

from __future__ import annotations

import textwrap

from xferbench.lint import lint_text


def lint(src: str, **kw) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.severity) for f in
            lint_text(textwrap.dedent(src), "t.py", **kw).findings]


def test_a_loss_scaler_handed_the_loss_and_the_optimiser_runs_the_step():
    assert lint("""\
        import torch
        def train_one_epoch(model, criterion, data_loader, optimizer, device, loss_scaler):
            for samples, targets in data_loader:
                samples = samples.to(device, non_blocking=True)
                targets = targets.to(device, non_blocking=True)
                with torch.cuda.amp.autocast():
                    loss = criterion(model(samples), targets)
                loss_value = loss.item()
                optimizer.zero_grad()
                loss_scaler(loss, optimizer, parameters=model.parameters())
        """) == [(8, "XB101", "warning")]


def test_a_step_function_handed_the_optimiser_runs_the_step():
    assert lint("""\
        def fit(model, loader, optimizer, device, train_step_fn):
            for batch in loader:
                out = train_step_fn(model, batch.to(device), optimizer)
                print(out.item())
        """) == [(4, "XB101", "warning")]


def test_helpers_that_build_schedule_or_run_an_epoch_are_no_step():
    assert lint("""\
        from utils import build_optimizer, adjust_learning_rate, train_epoch, smart_optimizer
        def main(model, loader, device, args, opt):
            optimizer = smart_optimizer(model, opt.optimizer, args.lr)
            w = model.weights.to(device)
            for epoch in range(10):
                adjust_learning_rate(optimizer, epoch)
                train_epoch(model, loader, optimizer, device)
                print(w.sum().item())
        """) == []


def test_the_options_named_opt_are_no_optimiser():
    assert lint("""\
        from utils import train_model
        def main(model, device, opt):
            w = model.weights.to(device)
            for stage in range(3):
                train_model(model, opt, w)
                print(w.sum().item())
        """) == []


def test_a_step_function_whose_models_the_caller_moved_trains_on_the_device():
    assert lint("""\
        import torch

        def train_step(G, D, x, opt_g, opt_d, criterion):
            fake = G(torch.randn(x.size(0), 100))
            d_loss = criterion(D(x), 1) + criterion(D(fake.detach()), 0)
            d_loss.backward()
            opt_d.step()
            g_loss = criterion(D(fake), 1)
            g_loss.backward()
            opt_g.step()
            return d_loss.item(), g_loss.item()

        def main(loader, device):
            G = Generator().to(device)
            D = Discriminator().to(device)
            opt_g = torch.optim.Adam(G.parameters())
            opt_d = torch.optim.Adam(D.parameters())
            for x, _ in loader:
                d, g = train_step(G, D, x, opt_g, opt_d, torch.nn.BCELoss())
                print(d, g)
        """) == [(11, "XB101", "warning"), (11, "XB101", "warning")]


def test_a_step_function_nothing_moves_for_still_trains_on_the_cpu():
    assert lint("""\
        import torch

        def train_step(G, D, x, opt_d, criterion):
            d_loss = criterion(D(x), 1)
            d_loss.backward()
            opt_d.step()
            return d_loss.item()

        def main(loader):
            G, D = Generator(), Discriminator()
            opt_d = torch.optim.Adam(D.parameters())
            for x, _ in loader:
                print(train_step(G, D, x, opt_d, torch.nn.BCELoss()))
        """) == []


def test_a_batch_moved_by_map_of_a_lambda_is_on_the_device():
    assert lint("""\
        def train(model, loader, opt, device):
            for batch in loader:
                x, y = map(lambda t: t.to(device), batch)
                loss = model(x, y).mean()
                loss.backward()
                opt.step()
                print(y.float().mean().item())
        """) == [(7, "XB101", "warning")]


def test_a_batch_moved_by_a_project_helper_handed_the_device_is_on_the_device():
    assert lint("""\
        from utils import to_torch
        def train(model, loader, opt, device):
            for batch in loader:
                batch = to_torch(batch, device=device)
                loss = model(batch["x"]).mean()
                loss.backward()
                opt.step()
                print(batch["y"].sum().item())
        """) == [(8, "XB101", "warning")]


def test_helpers_handed_a_device_that_build_or_evaluate_move_no_batch():
    assert lint("""\
        from utils import build_model, evaluate, intermediate_name, calculate_fid
        def train(loader, opt, device, args):
            model = build_model(args, device)
            for batch in loader:
                loss = model(batch).mean()
                loss.backward()
                opt.step()
                name = intermediate_name(args.out, 3, args.dev_eval_scoring)
                fid = calculate_fid([str(args.real), str(args.fake)], 256, device)
                acc = evaluate(batch, device)
                print(name, fid, acc)
        """) == []
