"""Checkpoint formats, one module each.

- :mod:`transfer.formats.mjlab`: the ONNX policies mjlab exports, which describe their task in ``metadata_props``.
"""
