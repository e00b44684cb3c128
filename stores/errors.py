"""Errors raised by the stores: each names the input at fault and what to do about it."""

from __future__ import annotations


class HopgraphError(Exception):
    """Base of every error hopgraph reports to a user as a message rather than a traceback."""


class CorpusError(HopgraphError):
    """A corpus path that cannot be read as documents (missing, empty, malformed)."""


class IndexNotFoundError(HopgraphError, ValueError):
    """A query names an index that was never built: a bad value of a run's `index` (a ValueError, which
    the Studio server shows its caller, where it hides other errors behind "An internal error occurred")."""


class IndexMismatchError(HopgraphError):
    """An index was built with a different embedding model than the one configured now."""


class IndexDamagedError(HopgraphError):
    """An index folder whose `current` link or manifest names something other than one of its own builds."""
