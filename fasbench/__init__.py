"""fasbench: a research workbench for fast agentic code search."""

__version__ = "0.1.0"
