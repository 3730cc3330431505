"""Sweeps: a suite run under a matrix of configurations, planned and budgeted with one estimator.

`estimate.py` estimates a unit's time and cost (also for `run --dry-run`), `spec.py` reads a
sweep file (each cell is a RunSpec), `plan.py` lists its cells and units with their estimates,
`scheduler.py` runs the cells' units interleaved, under budgets, resumably (docs/sweeps.md).
"""
