"""``pytest --pyargs xferbench.quick`` says where the suite went, instead of collecting
nothing."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    raise pytest.UsageError(
        "xferbench.quick moved to xferbench.practice_tests: "
        "run pytest --pyargs xferbench.practice_tests")
