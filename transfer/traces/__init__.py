"""Recorded traces and the metrics read from them: what each joint was asked and did, per policy step and env.

:class:`~transfer.traces.record.Recorder` samples a run; :func:`~transfer.traces.metrics.metrics` turns the
recording into control and gait metrics (every replay reports them); :func:`~transfer.traces.parquet.write_trace`
writes it as one Parquet schema on every engine (``transfer replay --record``), :func:`~transfer.traces.parquet.read_trace`
reads one back and :mod:`transfer.traces.compare` lines two up (``transfer traces A B``).
"""

from transfer.traces.metrics import METRICS, metrics
from transfer.traces.parquet import SCHEMA, TraceError, read_trace, trace_paths, write_trace
from transfer.traces.record import Recorder, Recording

__all__ = [
    "METRICS",
    "SCHEMA",
    "Recorder",
    "Recording",
    "TraceError",
    "metrics",
    "read_trace",
    "trace_paths",
    "write_trace",
]
