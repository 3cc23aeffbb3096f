"""Comparisons and reports of result documents: text tables, overlay plots, one-page HTML."""

from .compare import Run, differences, format_comparison, load_runs, runs_from_docs

__all__ = ["Run", "load_runs", "runs_from_docs", "format_comparison", "differences"]
