"""Moved: the practices as pytest tests are ``xferbench.practice_tests`` now (``quick`` also
named the ``--quick`` run, which they are not): ``pytest --pyargs xferbench.practice_tests``."""
