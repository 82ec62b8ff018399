"""fasbench: a research workbench for fast agentic code search.

The three published systems it reproduces (with their formulas, numbers and where each is
implemented), the layers of the package and what may import what, and how to add a tool set, a
policy, a reward or a trajectory format: ``docs/design.md``. The map of the folders: ``README.md``; the modules: ``fasbench/README.md``.
"""

__version__ = "0.1.0"
