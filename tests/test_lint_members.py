"""lint's trainer classes: what `self.<name>` holds across the class's methods (a model moved
in `__init__`, a device buffer), the outputs of a model the class holds, and the optimiser a
class keeps (never a tensor)."""

from __future__ import annotations

import textwrap

from xferbench.lint import lint_text


def lint(src: str, **kw) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.severity) for f in
            lint_text(textwrap.dedent(src), "t.py", **kw).findings]


def test_the_outputs_of_a_model_held_in_self_and_moved_in_init_are_on_the_device():
    assert lint("""\
        import torch
        from models import Net

        class Trainer:
            def __init__(self, args, device):
                self.model = Net(args).to(device)
                self.optimizer = torch.optim.Adam(self.model.parameters())

            def train_epoch(self, loader):
                for images, labels in loader:
                    logits = self.model(images)
                    loss = torch.nn.functional.cross_entropy(logits, labels)
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                    print((logits.argmax(1) == labels).float().mean().item())
        """) == [(16, "XB101", "warning")]


def test_a_model_moved_by_a_statement_in_another_method_gives_device_outputs():
    assert lint("""\
        class Trainer:
            def __init__(self, model, device):
                self.model = model
                self.device = device
                self._to_device()

            def _to_device(self):
                self.model.to(self.device)

            def step(self, batch, optimizer):
                out = self.model(batch)
                loss = out.mean()
                loss.backward()
                optimizer.step()
                return out.max().item()
        """) == [(15, "XB101", "warning")]


def test_a_device_buffer_of_the_class_read_every_step_is_reported():
    assert lint("""\
        import torch
        from torch import nn

        class Trainer(nn.Module):
            def __init__(self, model, device):
                super().__init__()
                self.model = model
                self.steps = torch.zeros(1, device=device)

            def train_step(self, batch, optimizer):
                steps = int(self.steps.item())
                loss = self.model(batch).mean()
                loss.backward()
                optimizer.step()
                self.steps.add_(1)

            def train(self, loader, optimizer):
                for batch in loader:
                    self.train_step(batch, optimizer)
        """) == [(11, "XB101", "warning")]


def test_an_optimiser_the_class_keeps_is_no_tensor():
    assert lint("""\
        import optimizers

        class Model:
            def compile(self, params, device):
                self.params = [p.to(device) for p in params]
                self.opt = optimizers.get(self.params, "lbfgs")

            def train(self, loader):
                prev = 0
                for x in loader:
                    loss = self.net(x).mean()
                    loss.backward()
                    self.opt.step()
                    n_iter = self.opt.state_dict()["state"][0]["n_iter"]
                    if prev == n_iter - 1:
                        break
                    prev = n_iter
        """) == []


def test_a_cpu_default_device_kept_by_the_class_still_names_the_device():
    assert lint("""\
        class Epoch:
            def __init__(self, model, loss, device="cpu"):
                self.model = model
                self.loss = loss
                self.device = device

            def run(self, loader, optimizer):
                for x, y in loader:
                    x, y = x.to(self.device), y.to(self.device)
                    loss = self.loss(self.model(x), y)
                    loss.backward()
                    optimizer.step()
                    print(loss.cpu().detach().numpy())
        """) == [(13, "XB101", "warning")]


def test_a_method_bound_to_an_attribute_is_followed_when_called_through_it():
    assert lint("""\
        import torch

        class Impl:
            def __init__(self, model, optim, compiled, device):
                self.model = model.to(device)
                self.optim = optim
                self._grad = torch.compile(self.compute_grad) if compiled else self.compute_grad

            def compute_grad(self, batch):
                self.optim.zero_grad()
                loss = self.model(batch).mean()
                loss.backward()
                return {"loss": loss}

            def update(self, batch):
                loss = self._grad(batch)
                self.optim.step()
                return {"loss": float(loss["loss"].cpu().numpy())}
        """) == [(18, "XB101", "warning")]


def test_a_dict_of_the_class_filled_with_device_values_in_one_method_holds_them_in_another():
    assert lint("""\
        class Trainer:
            def __init__(self, model, optim, device):
                self.model = model.to(device)
                self.optim = optim
                self.stats = {}

            def forward_backward(self, batch):
                self.optim.zero_grad()
                loss = self.model(batch).mean()
                loss.backward()
                self.optim.step()
                self.stats["loss"] = loss.detach()

            def train(self, loader):
                for batch in loader:
                    self.forward_backward(batch)
                    print(self.stats["loss"].item())
        """) == [(17, "XB101", "warning")]


def test_losses_the_class_backpropagates_from_a_dict_are_device_values_in_every_method():
    assert lint("""\
        class Trainer:
            def __init__(self, tracker, model, device):
                self.losses = tracker.losses
                self.model = model.to(device)

            def train(self, steps):
                for it in range(steps):
                    self.forward_and_backward()
                    print("total_loss=%.5f" % self.losses["total_loss"])

            def forward_and_backward(self):
                self.optimizer.zero_grad()
                self.calculate_loss(self.get_batch())
                self.backward()
                self.optimizer.step()

            def backward(self):
                self.losses["total_loss"].backward()
        """) == [(9, "XB101", "warning")]


def test_a_dict_whose_value_is_backpropagated_holds_a_device_loss():
    assert lint("""\
        class Impl:
            def __init__(self, model, optim, device):
                self.model = model.to(device)
                self.optim = optim

            def compute_grad(self, batch):
                self.optim.zero_grad()
                loss = self.compute_loss(batch)
                loss["loss"].backward()
                return loss

            def update(self, batch):
                loss = self.compute_grad(batch)
                self.optim.step()
                return {"loss": float(loss["loss"].cpu().numpy())}

            def compute_loss(self, batch):
                loss = {}
                loss["loss"] = self.policy(batch).mean()
                return loss
        """) == [(15, "XB101", "warning")]


def test_a_tensor_a_model_holds_read_with_item_every_step_is_reported():
    assert lint("""\
        import numpy as np

        def train(net, loader, optimizer, device):
            net.train()
            for x, diams in loader:
                scale = diams / net.diam_mean.item()
                loss = net(x.to(device) * scale).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """) == [(6, "XB101", "warning")]


def test_a_number_a_host_model_holds_is_read_for_free():
    assert lint("""\
        def train(net, loader, optimizer, device):
            net = net.cpu()
            for x, diams in loader:
                scale = diams / net.diam_mean.item()
                loss = net(x * scale).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """) == []


def test_a_step_method_handed_to_the_epoch_loop_is_followed_where_it_is_called():
    assert lint("""\
        class Net:
            def __init__(self, module, optimizer, device):
                self.module = module.to(device)
                self.optimizer = optimizer

            def fit_loop(self, loader, epochs):
                for _ in range(epochs):
                    self.run_single_epoch(loader, step_fn=self.train_step)

            def run_single_epoch(self, loader, step_fn):
                for batch in loader:
                    step = step_fn(batch)
                    print(step["loss"].item())

            def train_step(self, batch):
                self.optimizer.zero_grad()
                loss = self.module(batch).mean()
                loss.backward()
                self.optimizer.step()
                return {"loss": loss}
        """) == [(13, "XB101", "warning")]
