"""The slow mark: a slow fixture marks its users, -m "not slow" leaves them out, and a test
that took SLOW_S or more without the mark is named in the summary."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest
from slowmark import mark_slow_and_order, report_unmarked_slow, slow_fixture

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    mark_slow_and_order(config, items)

def pytest_terminal_summary(terminalreporter):
    report_unmarked_slow(terminalreporter)

@pytest.fixture(scope="module")
@slow_fixture
def built():
    return 1
"""

TESTS = """
import time, pytest

def test_uses_it(built):
    assert built == 1

def test_fast():
    pass

def test_sleeps_unmarked():
    time.sleep(0.3)

@pytest.mark.slow
def test_sleeps_marked():
    time.sleep(0.3)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_some=TESTS)
    monkeypatch.setattr("slowmark.SLOW_S", 0.2)
    return pytester


def test_a_slow_fixture_marks_its_users_and_not_slow_leaves_them_out(suite):
    result = suite.runpytest("-m", "not slow", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["*test_fast PASSED*", "*test_sleeps_unmarked PASSED*"])
    assert "test_uses_it" not in result.stdout.str()


def test_a_test_over_the_threshold_without_the_mark_is_named(suite):
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["took 0.* s without the slow mark (tests/slowmark.py SLOW_S = "
                                 "0.2): test_some.py::test_sleeps_unmarked"])
    # not the marked one, nor the fast ones
    assert result.stdout.str().count("without the slow mark") == 1
