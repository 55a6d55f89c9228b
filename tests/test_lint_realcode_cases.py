"""lint's analysis on the classes of false alarm and miss found on real training code,
one behaviour each, in the shape the real code has them: evaluation loops, epoch loops,
reads after a synchronise, models built by a class and moved, values of unknown functions,
formatting reads, helpers the loop calls, one-step functions, timers over a step."""

from __future__ import annotations

import textwrap

from xferbench.lint import lint_text


def lint(src: str, **kw) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.severity) for f in
            lint_text(textwrap.dedent(src), "t.py", **kw).findings]


# -- false alarms ---------------------------------------------------------------------------------

def test_an_evaluation_loop_is_no_training_loop():
    assert lint("""\
        import torch
        def evaluate(model, loader, device):
            model.eval()
            correct = 0
            with torch.no_grad():
                for x, y in loader:
                    out = model(x.to(device))
                    correct += (out.argmax(1) == y.to(device)).sum().item()
            return correct
        """) == []


def test_an_epoch_loop_holding_zero_grad_is_no_batch_loop():
    assert lint("""\
        def train(model, loader, opt, device, weights):
            w = weights.to(device)
            for epoch in range(10):
                cw = w.cpu().numpy()
                opt.zero_grad()
                for x in loader:
                    model(x.to(device)).sum().backward()
                    opt.step()
        """) == []


def test_a_scheduler_step_is_no_training_step():
    assert lint("""\
        import torch
        def train(model, loader, opt, device, w):
            scheduler = torch.optim.lr_scheduler.StepLR(opt, 10)
            w = w.to(device)
            for epoch in range(10):
                for x in loader:
                    model(x.to(device)).sum().backward()
                    opt.step()
                scheduler.step()
                print(w.sum().item())
        """) == []


def test_a_read_right_after_a_synchronise_waits_for_nothing():
    assert lint("""\
        import torch
        def train(model, loader, opt, device):
            for x in loader:
                loss = model(x.to(device)).sum()
                loss.backward()
                opt.step()
                torch.cuda.synchronize()
                print(loss.item())
        """) == [(7, "XB109", "warning")]  # the drain itself, not the read after it


def test_a_module_moved_to_the_host_is_no_read():
    assert lint("""\
        import torch
        from nets import Net
        def train(loader, opt, device):
            model = Net().to(device)
            for x in loader:
                model(x.to(device)).sum().backward()
                opt.step()
                torch.save(model.eval().cpu().state_dict(), "m.pt")
        """) == []


def test_the_action_an_environment_needs_is_no_training_read():
    assert lint("""\
        import torch
        from nets import QNetwork
        def run(envs, opt, device, steps, q_net):
            obs = envs.reset()
            for step in range(steps):
                actions = q_net(torch.as_tensor(obs).to(device)).argmax(1).cpu().numpy()
                obs, reward, done, info = envs.step(actions)
                loss = q_net(torch.as_tensor(obs).to(device)).sum()
                loss.backward()
                opt.step()
        """) == []


def test_a_read_on_a_path_that_ends_the_run_is_not_per_step():
    assert lint("""\
        import math, sys
        def train(model, loader, opt, device):
            for x in loader:
                losses = model(x.to(device))
                value = float(losses.sum().detach().cpu())
                if not math.isfinite(value):
                    print(losses)
                    sys.exit(1)
                losses.sum().backward()
                opt.step()
        """) == [(5, "XB101", "warning")]


def test_a_timer_after_a_blocking_copy_to_the_host_is_synchronised():
    assert lint("""\
        import time
        def evaluate(model, loader, device, cpu_device):
            for x in loader:
                start = time.time()
                out = model(x.to(device))
                out = out.to(cpu_device)
                elapsed = time.time() - start
        """) == []


def test_a_timer_after_a_synchronising_helper_is_synchronised():
    assert lint("""\
        import time
        from utils import synchronize_func
        def step(model, x, opt, device):
            start = time.time()
            model(x.to(device)).sum().backward()
            opt.step()
            synchronize_func()
            return time.time() - start
        """) == []


def test_an_epoch_long_timer_over_a_loop_that_reads_every_step_is_not_reported():
    assert lint("""\
        import time
        def train(model, loader, opt, device):
            start = time.time()
            for x in loader:
                loss = model(x.to(device)).sum()
                print(loss.item())
                loss.backward()
                opt.step()
            return time.time() - start
        """) == [(6, "XB101", "warning")]


def test_a_clock_read_that_starts_an_interval_is_no_end():
    assert lint("""\
        import time
        import torch
        def train(model, x, y, opt, device):
            begin = time.perf_counter()
            model(x.to(device)).sum().backward()
            opt.step()
            t0 = time.perf_counter()
            model(y.to(device)).sum().backward()
            opt.step()
            torch.cuda.synchronize()
            return time.perf_counter() - t0, begin
        """) == [] and lint("""\
        import time
        def train(model, x, y, opt, device):
            start = time.perf_counter()
            model(x.to(device)).sum().backward()
            opt.step()
            t0 = time.perf_counter()
            model(y.to(device)).sum()
            return t0 - start
        """) == [(6, "XB107", "warning")]


# -- misses ---------------------------------------------------------------------------------------

def test_a_model_built_from_any_class_and_moved_is_a_model_on_the_device():
    assert lint("""\
        from nets import Vgg16
        def train(loader, opt, device):
            vgg = Vgg16(requires_grad=False).to(device)
            for x in loader:
                loss = vgg(x.to(device)).sum()
                loss.backward()
                opt.step()
                print(loss.item())
        """) == [(8, "XB101", "warning")]


def test_a_class_of_the_module_with_a_forward_is_a_model():
    assert lint("""\
        from base import Base
        class Agent(Base):
            def forward(self, x):
                return x
        def train(envs, opt, device, batches):
            agent = Agent().cuda()
            for b in batches:
                value = agent(b.to(device))
                value.sum().backward()
                opt.step()
                print(value.mean().item())
        """) == [(11, "XB101", "warning")]


def test_a_loss_backward_is_called_on_is_on_the_device():
    assert lint("""\
        def train(trainer, loader, optimizer, device):
            trainer.model.to(device)
            for batch in loader:
                out = trainer.forward(batch)
                loss = trainer.criterion(out, batch)
                total = loss.item()
                loss.backward()
                optimizer.step()
        """) == [(6, "XB101", "warning")]


def test_values_of_unknown_functions_given_device_values_are_on_the_device():
    assert lint("""\
        from utils import reduce_dict
        def train(model, loader, opt, device, diffusion):
            for x, t in loader:
                losses = diffusion.training_losses(model, x.to(device), t.to(device))
                reduced = reduce_dict(losses)
                print(reduced["loss"].item(), losses["mse"].item())
                sum(losses.values()).backward()
                opt.step()
        """) == [(6, "XB101", "warning"), (6, "XB101", "warning")]


def test_a_device_value_on_one_branch_of_an_if_is_a_device_value_after_it():
    assert lint("""\
        def train(model, loader, opt, device, cuda):
            for x in loader:
                loss = None
                if cuda:
                    loss = model(x.cuda()).sum()
                loss.backward()
                opt.step()
                print(float(loss))
        """) == [(8, "XB101", "warning")]


def test_variable_is_its_tensor():
    assert lint("""\
        from torch.autograd import Variable
        def train(model, loader, opt):
            for x in loader:
                out = model(Variable(x.cuda()))
                out.sum().backward()
                opt.step()
                print(out.sum().item())
        """) == [(7, "XB101", "warning")]


def test_formatting_a_tensor_reads_it():
    assert lint("""\
        import math
        import torch
        def train(model, loader, opt, device, pbar):
            mloss = torch.zeros(3, device=device)
            for i, x in enumerate(loader):
                loss = model(x.to(device))
                loss.sum().backward()
                opt.step()
                mloss = (mloss * i + loss.detach()) / (i + 1)
                pbar.set_description(("%10s" * 2 + "%10.4g" * 3) % ("a", "b", *mloss))
                print("{:.6f}".format(loss.sum()))
                pbar.set_postfix(loss=loss.sum())
                if math.isnan(loss.sum()):
                    break
        """) == [(10, "XB101", "warning"), (11, "XB101", "warning"),
                 (12, "XB101", "warning"), (13, "XB101", "warning")]


def test_a_read_in_a_helper_the_training_loop_calls_is_per_step():
    assert lint("""\
        import torch
        class Trainer:
            def check_loss(self, loss):
                if not torch.isfinite(loss):
                    raise ValueError("loss is not finite")

            def fit(self, model, loader, opt, device):
                for x in loader:
                    loss = model(x.to(device)).sum()
                    self.check_loss(loss)
                    loss.backward()
                    opt.step()
        """) == [(4, "XB101", "warning")]


def test_a_read_in_a_function_that_runs_one_training_step_is_per_step():
    assert lint("""\
        class Agent:
            def update(self, batch):
                loss = self.model(batch.to(self.device)).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.loss_record.append(float(loss.detach().cpu().numpy()))
        """) == [(7, "XB101", "warning")]


def test_a_loop_over_data_whose_inner_loop_trains_is_the_batch_loop():
    assert lint("""\
        def train_epoch(model, batches, optimizers, device, stop):
            for batch in batches:
                if stop.to(device) > 0:
                    break
                for opt in optimizers:
                    model(batch.to(device)).sum().backward()
                    opt.step()
        """) == [(3, "XB101", "warning")]


def test_an_unsynchronised_timer_over_a_step_is_reported_past_a_helper_that_waits_for_nothing():
    assert lint("""\
        import time
        def repackage(hidden):
            return tuple(repackage(h) for h in hidden) if isinstance(hidden, tuple) else \\
                hidden.detach()

        def train(model, loader, optimizer, device, meter):
            end = time.time()
            hidden = None
            for x in loader:
                loss, hidden = model(x.to(device), hidden)
                loss.backward()
                optimizer.step()
                hidden = repackage(hidden)
                meter.update(time.time() - end)
                end = time.time()
        """) == [(14, "XB107", "warning")]


def test_a_discarded_move_of_a_batch_part_is_reported():
    assert lint("""\
        from torch.utils.data import DataLoader
        def train(model, data, opt, DEVICE):
            loader = DataLoader(data, batch_size=8)
            for images, labels in loader:
                images.to(DEVICE)
                model(images, labels).sum().backward()
                opt.step()
        """) == [(5, "XB103", "error")]


# -- saying a read is intended --------------------------------------------------------------------

INTENDED = """\
    class Trainer:
        def log_metrics(self, loss):
            print(loss.item())

        def fit(self, model, loader, opt, device):
            for x in loader:
                loss = model(x.to(device)).sum()
                self.log_metrics(loss)
                loss.backward()
                opt.step()
                print(loss.item())  # noqa: XB101
    """


def test_reads_in_a_function_named_intended_are_not_reported():
    assert lint(INTENDED) == [(3, "XB101", "warning")]
    assert lint(INTENDED, intended=("log_metrics",)) == []
    assert lint(INTENDED, intended=("Trainer.log_*",)) == []
    assert lint(INTENDED, intended=("Other.log_metrics",)) == [(3, "XB101", "warning")]


def test_intended_reads_in_pyproject_silences_those_functions(tmp_path, monkeypatch, capsys):
    from xferbench.cli import main

    (tmp_path / "train.py").write_text(textwrap.dedent(INTENDED))
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "train.py"]) == 1
    assert "train.py:3:" in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text(
        '[tool.xferbench.lint]\nintended-reads = ["Trainer.log_metrics"]\n')
    assert main(["lint", "train.py"]) == 0
    assert capsys.readouterr().out == ""


def test_an_intended_reads_entry_that_is_no_function_name_is_one_sentence(
        tmp_path, monkeypatch, capsys):
    from xferbench.cli import main

    (tmp_path / "train.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.xferbench.lint]\nintended-reads = ["train.py:40"]\n')
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "train.py"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "intended-reads 'train.py:40' is not a function name" in err


def test_a_discarded_move_of_a_value_named_as_only_a_tensor_is_reported():
    assert lint("""\
        def step(model, x, batch, DEVICE):
            x.to(DEVICE)
            batch.to(DEVICE)
            return model(x, batch)
        """) == [(2, "XB103", "error")]


def test_under_isinstance_of_a_class_that_is_no_tensor_a_move_is_in_place():
    assert lint("""\
        from graphs import Graph
        def move(batch, device):
            for i, x in enumerate(batch):
                if isinstance(x, Graph):
                    x.to(device)
                else:
                    x.to(device)
        """) == [(7, "XB103", "error")]


def test_a_loss_in_a_function_handed_a_device_is_on_the_device():
    assert lint("""\
        def train(model, batches, criterion, optimizer, device):
            for data, targets in batches(device):
                loss = criterion(model(data), targets)
                loss.backward()
                optimizer.step()
                print(loss.item())

        def host_only(model, batches, criterion, optimizer):  # no device here
            for data, targets in batches:
                loss = criterion(model(data), targets)
                loss.backward()
                optimizer.step()
                print(loss.item())

        def main(model, device):
            model.to(device)
        """) == [(6, "XB101", "warning")]


# -- classes the held-out set (tests/lint/realcode/heldout.toml) found --------------------------

def test_a_function_whose_loop_over_data_steps_the_optimiser_runs_an_epoch():
    # mace's train_one_epoch: a batch loop, and on another path a full-batch L-BFGS step; a
    # loop calling it is an epoch loop, and what it calls outside its loop runs once per call
    assert lint("""\
        import torch
        def take_step(model, batch, opt, device):
            loss = model(batch.to(device)).sum()
            loss.backward()
            opt.step()

        def lbfgs_step(model, loader, opt, device):
            def closure():
                for batch in loader:
                    model(batch.to(device)).sum().backward()
            opt.step(closure)
            return torch.zeros(1, device=device).item()

        def train_one_epoch(model, loader, opt, device, full_batch):
            if full_batch:
                lbfgs_step(model, loader, opt, device)
            else:
                for batch in loader:
                    take_step(model, batch, opt, device)

        def train(model, loader, opt, device):
            w = torch.ones(1, device=device)
            for epoch in range(10):
                train_one_epoch(model, loader, opt, device, False)
                print(w.item())
        """) == []


def test_a_loop_over_optimisers_is_no_loop_over_data():
    # audiolm's train_step steps each discriminator's optimiser in a loop over them: still
    # one whole step, its reads per step
    assert lint("""\
        class Trainer:
            def train_step(self):
                loss = self.model(next(self.dl).to(self.device))
                loss.backward()
                self.optim.step()
                for name, optim in self.discr_optim_iter():
                    optim.step()
                return loss.item()
        """) == [(8, "XB101", "warning")]


def test_two_functions_closures_are_two_functions():
    # mace: take_step's closure runs a step; take_step_lbfgs's, a pass over all the data
    # that the L-BFGS protocol's loop waits for: a read in that loop is not per step
    assert lint("""\
        import torch
        def take_step(model, x, opt, device):
            def closure():
                loss = model(x.to(device)).sum()
                loss.backward()
                return loss
            closure()
            opt.step()

        def take_step_lbfgs(model, loader, opt, device):
            def closure():
                for batch in loader:
                    model(batch.to(device)).sum().backward()
            signal = torch.zeros(1, device=device)
            while True:
                if signal.item() == 0:
                    break
                closure()
        """) == []


def test_a_to_numpy_helper_reads_its_tensor_and_waits():
    # mace's take_step returns to_numpy(loss) and the step's time: the copy to the host is a
    # per-step read, and the clock after it times finished work
    assert lint("""\
        import time
        from mace.tools import to_numpy
        def take_step(model, batch, opt, device):
            start = time.time()
            inputs = batch.to(device).to_dict()
            def closure():
                loss = model(inputs).sum()
                loss.backward()
                return loss
            loss = closure()
            opt.step()
            return {"loss": to_numpy(loss), "time": time.time() - start}

        def train(model, loader, opt, device):
            for batch in loader:
                take_step(model, batch, opt, device)
        """) == [(12, "XB101", "warning")]


def test_a_backward_no_optimiser_consumes_is_no_training_step():
    # LAVIS's Grad-CAM app: a backward for the attention's gradients, nothing steps an
    # optimiser anywhere in the module; the map copied to the host is the result
    assert lint("""\
        def gradcam(model, images, device):
            images = images.to(device)
            loss = model(images)[:, 1].sum()
            model.zero_grad()
            loss.backward()
            return (images.grad * images).mean(1).cpu()

        def app(model, batches, device):
            maps = []
            for images in batches:
                maps.append(gradcam(model, images, device))
            return maps
        """) == []


def test_a_device_s_methods_give_no_tensor():
    # nerfstudio: self.device.split(":")[0] compared with "mps" picks the autocast type
    assert lint("""\
        import torch
        class Trainer:
            def train_iteration(self, step):
                kind = self.device.split(":")[0]
                kind = "cpu" if kind == "mps" else kind
                with torch.autocast(device_type=kind):
                    loss = self.model(self.batch.to(self.device))
                loss.backward()
                self.optimizer.step()
                return loss
        """) == []


def test_a_method_of_the_module_s_class_that_reads_synchronises_when_called_on_an_object():
    # mace's evaluate: metrics.compute() (MACELoss, defined further down) reads its totals
    # with .item(); the clock after it times finished work
    assert lint("""\
        import time
        import torch
        def evaluate(model, loader, device):
            metrics = Meter().to(device)
            start = time.time()
            for batch in loader:
                metrics.update(model(batch.to(device)))
            loss = metrics.compute()
            return loss, time.time() - start

        class Meter(torch.nn.Module):
            def update(self, out):
                self.total = self.total + out.sum()

            def compute(self):
                return self.total.item()
        """) == []


def test_a_read_on_the_path_that_skips_the_batch_is_not_every_step():
    # OpenFlamingo: a NaN loss prints the batch and `continue`s; the isnan test is per step
    assert lint("""\
        import torch
        def train(model, loader, opt, device):
            for images, labels in loader:
                images = images.to(device)
                loss = model(images, labels.to(device))
                if torch.isnan(loss):
                    print("images: ", images)
                    continue
                loss.backward()
                opt.step()
        """) == [(6, "XB101", "warning")]


def test_a_legacy_constructor_given_sizes_is_a_host_factory():
    # YOPO, brevitas: torch.FloatTensor(*x.shape) and torch.Tensor(n, k) make host memory
    # that moves every batch; torch.FloatTensor([0.5, 1.0]) and torch.Tensor(space.shape)
    # copy data (a gym space's shape is a tuple)
    assert lint("""\
        import torch
        def train(model, loader, opt, device, eps, space):
            for x, target in loader:
                x, target = x.to(device), target.to(device)
                eta = torch.FloatTensor(*x.shape).uniform_(-eps, eps)
                eta = eta.to(target.device)
                onehot = torch.Tensor(target.size(0), 10).to(device, non_blocking=True)
                weights = torch.FloatTensor([0.5, 1.0]).to(device)
                dims = torch.Tensor(space.shape).to(device)
                loss = model(x + eta, onehot, weights, dims)
                loss.backward()
                opt.step()
        """) == [(5, "XB102", "warning"), (7, "XB102", "warning")]


def test_a_model_class_s_own_helpers_called_on_self_are_calls_of_the_module_s_functions():
    # Classy Vision's task defines compute_loss (so it counts as a model): train_step's
    # self.run_optimizer(loss) runs the backward and the step, self.update_meters(...) copies
    # the outputs every step; they were taken for forwards of the model
    assert lint("""\
        class Task:
            def compute_loss(self, output, sample):
                return self.loss(output, sample["target"])

            def train_step(self, sample, device):
                sample = {k: v.to(device) for k, v in sample.items()}
                output = self.model(sample["input"])
                loss = self.compute_loss(output, sample)
                self.run_optimizer(loss)
                self.update_meters(output)
                return loss.detach().cpu().item()

            def run_optimizer(self, loss):
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

            def update_meters(self, output):
                self.meter.update(output.detach().cpu())
        """) == [(11, "XB101", "warning"), (19, "XB101", "warning")]


def test_a_file_whose_moves_live_elsewhere_is_still_read():
    # LAVIS's base task: prepare_sample (another module) moves the batch; the file itself
    # has no .to( but trains under torch.cuda.amp.autocast and reads the loss every step
    assert lint("""\
        import torch
        from lavis.datasets.data_utils import prepare_sample
        def train_epoch(model, loader, optimizer, scaler, log):
            for samples in loader:
                samples = prepare_sample(samples, cuda_enabled=True)
                with torch.cuda.amp.autocast(enabled=scaler is not None):
                    loss = model(samples)["loss"]
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                log.update(loss=loss.item())
        """) == [(10, "XB101", "warning")]


def test_a_dict_of_device_values_handed_to_a_tracker_is_read():
    # llama-recipes: wandb_run.log({"train/loss": loss.detach().float()}) every step
    assert lint("""\
        import wandb
        def train(model, loader, opt, device, wandb_run, step):
            for batch in loader:
                loss = model(batch.to(device))
                loss.backward()
                opt.step()
                wandb_run.log({"train/step": step, "train/loss": loss.detach().float()})
                wandb.log({"loss": loss})
                wandb_run.log({"train/step": step})
        """) == [(7, "XB101", "warning"), (8, "XB101", "warning")]


def test_every_term_of_a_summed_loss_is_a_loss():
    # skrl's PPO: scaler.scale(policy_loss + entropy_loss + value_loss).backward(), then each
    # term read with .item() every minibatch; a weight multiplying one is no loss
    assert lint("""\
        def update(self, batches, device):
            for obs, returns in batches:
                policy_loss = self.policy_loss(obs.to(device))
                value_loss = self.value_loss(obs, returns)
                coef = self.coef
                self.scaler.scale(policy_loss + value_loss + coef * policy_loss).backward()
                self.scaler.step(self.optimizer)
                self.losses.append(value_loss.item())
                print(coef)
        """) == [(8, "XB101", "warning")]


def test_an_optimiser_named_for_its_model_is_an_optimiser():
    # torchgan's train_ops: optimizer_discriminator.step() ends in a model's word but steps
    # an optimiser: train_ops runs a whole step, its loss.item() every iteration
    assert lint("""\
        import torch
        class Penalty:
            def train_ops(self, generator, discriminator, optimizer_discriminator, real, device):
                noise = torch.randn(real.size(0), 100, device=device)
                optimizer_discriminator.zero_grad()
                loss = self.forward(discriminator(generator(noise)))
                loss.backward()
                optimizer_discriminator.step()
                return loss.item()
        """) == [(9, "XB101", "warning")]


def test_a_method_handed_device_values_queues_device_work():
    # brevitas' evaluation: self.criterion(output, target) between two clocks, nothing
    # synchronised: the second interval times the criterion's launch
    assert lint("""\
        import time
        class Trainer:
            def eval_model(self):
                for input, target in self.test_loader:
                    target = target.to(self.device)
                    output = self.model(input.to(self.device))
                    end = time.time()
                    loss = self.criterion(output, target)
                    self.loss_time.update(time.time() - end)
                    self.losses.update(loss.item())
        """) == [(9, "XB107", "warning")]


def test_a_function_that_returns_only_host_values_returns_a_host_value():
    # torch's fx numeric check: compare_grads returns a bool from torch.allclose, whatever
    # device tensors it was handed; logging it reads nothing (analysed since the file names
    # torch.cuda and runs a backward)
    assert lint("""\
        import logging
        import torch
        def compare_grads(a, b):
            same = True
            for x, y in zip(a, b):
                if not torch.allclose(x, y):
                    same = False
            return same

        logger = logging.getLogger(__name__)

        def run(model, inputs, opt):
            torch.cuda.synchronize()
            for i in range(10):
                model(*inputs).sum().backward()
                res = compare_grads(list(model.parameters()), list(model.parameters()))
                logger.info("grads: %s", res)
                opt.step()
        """) == []


def test_a_tensor_scaled_by_a_host_number_keeps_its_place():
    # lightweight-gan: gradients * inv_scale (a float from a helper) stays where the
    # gradients are; the penalty made from it is a loss, read each time it is applied
    assert lint("""\
        import torch
        def train(D, images, opt, device):
            for i in range(100):
                out = D(images.to(device))
                grads = torch.cat([torch.autograd.grad(out, images)[0]])
                inv_scale = 0.5
                gp = (grads * inv_scale).norm()
                loss = out.mean() + gp
                loss.backward()
                opt.step()
                print(gp.item())
        """) == [(11, "XB101", "warning")]


def test_an_object_moved_by_a_statement_is_on_the_device():
    # spikingjelly's TD3: ac = actor_critic(...); ac.to(device); the Q-values ac.q1(o, a)
    # gives are device tensors, copied to the host in every update's loss
    assert lint("""\
        def td3(actor_critic, env, buffer, device):
            ac = actor_critic(env.observation_space, env.action_space)
            ac.to(device)
            def loss_q(data):
                q1 = ac.q1(data["obs"], data["act"])
                info = dict(Q1Vals=q1.cpu().detach().numpy())
                return ((q1 - data["rew"]) ** 2).mean(), info
            def update(data):
                opt.zero_grad()
                loss, info = loss_q(data)
                loss.backward()
                opt.step()
            opt = make_opt(ac)
            for t in range(1000):
                update(buffer.sample(device))
        """) == [(6, "XB101", "warning")]


def test_a_dropped_move_of_a_name_ending_like_a_tensor_is_discarded():
    # LAVIS's search app: all_img_feats.to(device) alone on its line
    assert lint("""\
        import torch
        def search(load_feat, device):
            paths, all_img_feats = load_feat()
            all_img_feats.to(device)
            return torch.nn.functional.normalize(all_img_feats, dim=1)
        """) == [(4, "XB103", "error")]


def test_the_last_step_s_loss_formatted_at_the_top_of_the_loop_is_read():
    # FARM: the progress bar shows the loss the previous iteration bound (0 before the first)
    assert lint("""\
        from tqdm import tqdm
        def train(model, loader, opt, device):
            loss = 0
            bar = tqdm(loader)
            for batch in bar:
                bar.set_description(f"loss: {loss:.4f}")
                loss = model(batch.to(device)).mean()
                loss.backward()
                opt.step()
            print(f"{loss}")
        """) == [(6, "XB101", "warning")]
