"""Main-agent trajectories: the one reader (``raw``, ``parsers`` for every format, ``classify`` the
action rubric, ``first_edit``, ``tokens``, ``paths`` the agent-path normaliser, ``viewed``) that
data, SFT, e2e and the analysis build on; ``analysis`` (polars frames and metrics), ``cli``
(``fasbench classify``, ``fasbench trajectories``)."""
