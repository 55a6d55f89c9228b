"""lint's step guards of other forms than `if step % N == 0`: a function that returns early
unless it should log, a loop that skips the step unless it is a logging one, a logging flag,
and a comparison of the time since the last log with an interval: reads under them run on
some steps only (info)."""

from __future__ import annotations

import textwrap

from xferbench.lint import lint_text


def lint(src: str, **kw) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.severity) for f in
            lint_text(textwrap.dedent(src), "t.py", **kw).findings]


def test_a_function_that_returns_unless_it_should_log_reads_on_some_steps():
    assert lint("""\
        def log_stats(loss, should_log):
            if not should_log:
                return
            print(loss.item())

        def train(model, loader, opt, device):
            for step, x in enumerate(loader):
                loss = model(x.to(device)).mean()
                loss.backward()
                opt.step()
                log_stats(loss, step % 10 == 0)
        """) == [(4, "XB101", "info")]


def test_a_loop_that_skips_all_but_every_nth_step_reads_on_some_steps():
    assert lint("""\
        def train(model, loader, opt, device, args):
            for step, x in enumerate(loader):
                loss = model(x.to(device)).mean()
                loss.backward()
                opt.step()
                if step % args.log_every != 0:
                    continue
                print(loss.item())
        """) == [(8, "XB101", "info")]


def test_the_guard_of_an_early_exit_ends_with_its_block():
    assert lint("""\
        def train(model, loader, opt, device, args):
            for step, x in enumerate(loader):
                loss = model(x.to(device)).mean()
                loss.backward()
                opt.step()
                if args.verbose:
                    if step % args.log_every != 0:
                        continue
                    print(loss.item())
                print(loss.item())
        """) == [(9, "XB101", "info"), (10, "XB101", "warning")]


def test_a_time_since_the_last_log_compared_with_an_interval_is_a_guard():
    assert lint("""\
        class Learner:
            def learn(self, batch, t_env):
                loss = self.model(batch.to(self.device)).mean()
                loss.backward()
                self.optimiser.step()
                if t_env - self.log_stats_t >= self.args.learner_log_interval:
                    print(loss.item())
                    self.log_stats_t = t_env
                print(loss.item())
        """) == [(7, "XB101", "info"), (9, "XB101", "warning")]


def test_a_flag_named_for_logging_guards_a_step_function_s_read():
    assert lint("""\
        def train_step(model, x, opt, should_log=False):
            loss = model(x).mean()
            loss.backward()
            opt.step()
            if should_log:
                print(loss.item())

        def train(model, loader, opt, device):
            for x in loader:
                train_step(model, x.to(device), opt)
        """) == [(6, "XB101", "info")]
