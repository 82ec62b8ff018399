"""Layer 1, the read-only bash tool and its walls: the command table, option parsing, path and glob confinement, the git wall, the confined pipeline runner, what a command showed."""
