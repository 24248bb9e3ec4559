"""Runs on the one environment (:class:`transfer.env.PolicyEnv`): :mod:`~transfer.runs.replay` (and, as they come,
verify, train, validate). ``transfer.replay(...)``, ``transfer.compare(...)`` are the top-level names."""
