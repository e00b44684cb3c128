"""Errors raised by the stores: each names the input at fault and what to do about it."""

from __future__ import annotations


class HopgraphError(Exception):
    """Base of every error hopgraph reports to a user as a message rather than a traceback."""


class CorpusError(HopgraphError):
    """A corpus path that cannot be read as documents (missing, empty, malformed)."""


class IndexNotFoundError(HopgraphError):
    """A query names an index that was never built."""


class IndexMismatchError(HopgraphError):
    """An index was built with a different embedding model than the one configured now."""


class IndexDamagedError(HopgraphError):
    """An index folder whose `current` link or manifest names something other than one of its own builds."""
