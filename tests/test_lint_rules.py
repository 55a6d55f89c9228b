"""lint's rules on the project's corpus (tests/lint/corpus): every line marked ``# expect:
XB10n`` is reported at that line with that severity, and nothing else is (the look-alikes:
model.to(dev), BatchEncoding.to(), a clock read after a synchronise, logging every N steps,
.item() outside a training loop, .cpu() of a host tensor, numpy's .tolist()...). Then rules'
edges, one behaviour each."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from xferbench.lint import CODES, lint_text

sys.path.insert(0, str(Path(__file__).resolve().parent / "lint"))
from score import CORPUS, expectations, score, table  # noqa: E402

FILES = sorted(CORPUS.glob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_file_reports_exactly_its_expected_lines(path):
    text = path.read_text(encoding="utf-8")
    result = lint_text(text, str(path))
    assert result.problem is None
    found = {(f.line, f.code): f.severity for f in result.findings}
    assert found == expectations(text)


def test_every_rule_has_positives_in_the_corpus():
    scores = score()
    for code in CODES:
        assert scores[code].tp >= 2, f"{code} has fewer than two positives in the corpus"


def test_score_table_says_precision_and_recall_per_rule():
    lines = table(score())
    assert lines[0].startswith("| rule | name | expected | reported |")
    assert len(lines) == 2 + len(CODES)
    assert all(line.endswith("| 100% | 100% |") for line in lines[2:])


def test_score_counts_a_false_alarm_and_a_miss(tmp_path):
    (tmp_path / "f.py").write_text(textwrap.dedent("""\
        import torch
        def f(n, device):
            a = torch.zeros(n).to(device)
            x = torch.ones(3)  # expect: XB103
            return a, x
        """))
    s = score(tmp_path)
    assert (s["XB102"].tp, s["XB102"].fp) == (0, 1)
    assert (s["XB103"].tp, s["XB103"].fn) == (0, 1)
    assert s["XB102"].precision == 0.0 and s["XB103"].recall == 0.0


def lint(src: str, **kw):
    return [(f.line, f.code, f.severity) for f in
            lint_text(textwrap.dedent(src), "t.py", **kw).findings]


def test_a_read_in_an_epoch_loop_around_the_batch_loop_is_not_per_batch():
    assert lint("""\
        def train(model, loader, opt, device):
            for epoch in range(3):
                for x in loader:
                    loss = model(x.to(device)).sum()
                    loss.backward()
                    opt.step()
                print(loss.item())
        """) == []


def test_a_loop_that_calls_a_training_function_of_the_module_is_a_batch_loop():
    assert lint("""\
        def step(model, x, opt):
            model(x).sum().backward()
            opt.step()

        def train(model, xs, opt, device):
            for x in xs:
                x = x.to(device)
                step(model, x, opt)
                print(x.norm().item())
        """) == [(9, "XB101", "warning")]


def test_a_function_whose_step_is_in_its_own_loop_does_not_make_its_caller_a_batch_loop():
    assert lint("""\
        def one_epoch(model, loader, opt):
            for x in loader:
                model(x).sum().backward()
                opt.step()

        def train(model, loader, opt, device, w):
            w = w.to(device)
            for epoch in range(3):
                one_epoch(model, loader, opt)
                print(w.sum().item())
        """) == []


def test_a_step_guard_by_counter_equality_is_info():
    assert lint("""\
        def train(model, xs, opt, device):
            for i in range(10):
                loss = model(xs.to(device)).sum()
                loss.backward()
                opt.step()
                if i == 9:
                    print(loss.item())
        """) == [(7, "XB101", "info")]


def test_an_if_branch_does_not_leak_into_its_else():
    assert lint("""\
        import torch
        def f(t, on_device):
            if on_device:
                t = t.to("cpu", non_blocking=True)
            else:
                print(t)
            return 0
        """) == []


def test_a_synchronise_on_one_path_only_silences_read_before_sync():
    assert lint("""\
        import torch
        def f(x, wait):
            y = x.to("cpu", non_blocking=True)
            if wait:
                torch.cuda.synchronize()
            return y.numpy()
        """) == []


def test_noqa_silences_the_named_code_only():
    src = """\
        import torch
        def f(n, device):
            a = torch.zeros(n).to(device)  # noqa: XB102
            b = torch.ones(n).to(device)  # noqa: XB103
            c = torch.eye(n).to(device)  # noqa
            return a, b, c
        """
    assert lint(src) == [(4, "XB102", "warning")]


def test_noqa_with_an_unknown_xb_code_warns_and_silences_nothing():
    result = lint_text("import torch\nx = torch.zeros(2).cuda()  # noqa: XB999, E501\n", "t.py")
    assert [(f.line, f.code) for f in result.findings] == [(2, "XB102")]
    assert result.warnings == ["t.py:2: `# noqa: XB999` names no xferbench rule (the rules "
                               "are XB101 to XB110): it silences nothing"]


def test_only_chosen_codes_are_reported():
    src = """\
        import torch
        def f(n, device):
            t = torch.ones(n)
            t.to(device)
            return torch.zeros(n).to(device)
        """
    assert lint(src) == [(4, "XB103", "error"), (5, "XB102", "warning")]
    assert lint(src, codes=frozenset({"XB103"})) == [(4, "XB103", "error")]


def test_columns_count_characters_not_bytes():
    result = lint_text('import torch\nπ = "é"; t = torch.zeros(2).cuda()\n', "t.py")
    assert [(f.line, f.col) for f in result.findings] == [(2, 13)]


def test_a_syntax_error_is_one_sentence_naming_the_line():
    result = lint_text("def f(:\n    pass\n", "bad.py")
    assert result.findings == []
    assert result.problem.startswith("bad.py:1:6: cannot parse: ")
    assert result.problem.endswith("(not linted)")


def test_a_file_no_rule_can_match_is_parsed_but_not_analysed():
    from xferbench.lint.engine import may_match

    assert not may_match(b"import os\nprint(os.getcwd())\n")
    assert may_match(b"x.to (dev)")  # odd spacing still counts
    assert lint_text("x = (\n", "t.py").problem is not None  # still parsed


def test_deep_nesting_does_not_crash():
    src = "import torch\nx = " + " + ".join(["torch.zeros(1).to('cuda')"] * 3000) + "\n"
    result = lint_text(src, "deep.py")
    assert result.problem is None and len(result.findings) == 3000


def test_docs_quote_the_corpus_table_as_it_is():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "lint.md").read_text()
    for line in table(score()):
        assert line in docs.splitlines(), f"docs/lint.md lacks: {line}"
