"""Main-agent trajectory analysis: ``parsers`` (five formats), ``classify`` (the action rubric),
``analysis`` (polars frames and metrics), ``cli`` (``fasbench classify``, ``fasbench trajectories``)."""
