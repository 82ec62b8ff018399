"""Layer 0, numbers for papers: metrics and their intervals, the one findings builder, LaTeX tables, the figure template and export."""
