# Stands in for a missing matplotlib (knot_plot.no_matplotlib puts this folder first on PYTHONPATH).
raise ImportError("No module named 'matplotlib' (blocked by tests/tools/plot/no_matplotlib)")
