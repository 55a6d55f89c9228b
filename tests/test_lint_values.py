"""lint's analysis of the values a training step hands on: what a function of the module
returns (a tuple of host floats, a method's `loss.item()`, a count beside a loss), what
another module's function gives (a size, a string), and a loss's host weight."""

from __future__ import annotations

import textwrap

from xferbench.lint import lint_text


def lint(src: str, **kw) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.severity) for f in
            lint_text(textwrap.dedent(src), "t.py", **kw).findings]


def test_a_tuple_of_item_reads_returned_by_a_step_is_host_floats_for_the_caller():
    assert lint("""\
        def train_step(model, x, y, opt, crit):
            out = model(x)
            loss = crit(out, y)
            loss.backward()
            opt.step()
            acc = (out.argmax(1) == y).float().mean()
            return loss.item(), acc.item()

        def train(model, loader, opt, crit, device):
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                l, a = train_step(model, x, y, opt, crit)
                print(l, a)
        """) == [(7, "XB101", "warning"), (7, "XB101", "warning")]


def test_a_method_returning_loss_item_gives_its_caller_a_float_even_defined_below():
    assert lint("""\
        class Trainer:
            def __init__(self, model, device):
                self.model = model.to(device)
                self.device = device

            def fit(self, loader):
                for x, y in loader:
                    x = x.to(self.device)
                    l = self.step(x, y)
                    print(f"{l:.3f}")

            def step(self, x, y):
                loss = self.crit(self.model(x), y)
                loss.backward()
                self.opt.step()
                return loss.item()
        """) == [(16, "XB101", "warning")]


def test_a_count_returned_beside_a_loss_stays_a_host_int_when_unpacked():
    assert lint("""\
        def helper(model, x):
            out = model(x)
            return out.mean(), 3

        def train(model, loader, opt, device, start):
            for x, y in loader:
                x = x.to(device)
                loss, i = helper(model, x)
                loss.backward()
                opt.step()
                if i == start:
                    print("first")
        """) == []


def test_a_dict_of_host_floats_returned_is_read_for_free():
    assert lint("""\
        def step(model, x, opt):
            loss = model(x).mean()
            loss.backward()
            opt.step()
            return {"loss": loss.item()}

        def train(model, loader, opt, device):
            for x in loader:
                stats = step(model, x.to(device), opt)
                print(stats["loss"])
        """) == [(5, "XB101", "warning")]


def test_a_size_or_text_from_another_module_s_function_is_a_host_value():
    assert lint("""\
        import utils
        def train(model, loader, opt, device):
            for x, y in loader:
                x = x.to(device)
                out = model(x)
                loss = out.mean()
                loss.backward()
                opt.step()
                n = utils.get_batch_size(out)
                s = utils.format_loss(loss)
                print(n, s)
        """) == []


def test_a_host_weight_multiplied_into_the_loss_is_no_loss():
    assert lint("""\
        def train(model, loader, opt, device, step):
            for x, y in loader:
                x = x.to(device)
                warm_up = min(1.0, step / 1000)
                loss = model(x).mean()
                loss = loss * warm_up
                loss.backward()
                opt.step()
                print(loss.item(), warm_up)
        """) == [(9, "XB101", "warning")]


def test_a_function_s_device_tuple_still_gives_device_values():
    assert lint("""\
        def step(model, x, opt):
            out = model(x)
            loss = out.mean()
            loss.backward()
            opt.step()
            return loss, out

        def train(model, loader, opt, device):
            for x in loader:
                loss, out = step(model, x.to(device), opt)
                print(loss.item())
        """) == [(11, "XB101", "warning")]
