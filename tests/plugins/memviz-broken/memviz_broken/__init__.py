"""Broken memviz plugins, for memviz's tests (see pyproject.toml)."""
