"""Errors shared by every floor: a package the work needs is not installed.

:class:`MissingPackageError` is an :class:`ImportError` whose message names the package, what needs it and the
command that installs it; the command line prints it as one line (never a traceback).
"""

from __future__ import annotations

__all__ = ["MissingPackageError"]


class MissingPackageError(ImportError):
    """``package`` is not installed; ``needed_for`` says what needs it, ``install`` the command that installs it."""

    def __init__(self, package: str, needed_for: str, install: str, message: str | None = None) -> None:
        self.package, self.needed_for, self.install = package, needed_for, install
        message = message or (
            f"{needed_for} needs the Python package {package!r}, which is not installed. Install it with: {install}"
        )
        super().__init__(message, name=package)
