"""The version of xferbench (also in pyproject.toml)."""

__version__ = "0.1.0"
