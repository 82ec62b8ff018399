"""Layer 5, studies that build on evaluation: the search study, hand-off savings, the reward audit, the field table, reward plots, contamination."""
