"""``python -m transfer.cli``: the console script's own supervision (:func:`transfer.cli.entry`: a native crash
named in one line, a ``TMPDIR`` of the run's own removed afterwards), the child running :func:`transfer.cli.main`."""

from transfer.cli import entry, finish

finish(entry())
