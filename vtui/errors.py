"""Errors that reach the user as one clear line."""

import errno

DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})  # errno of a write to a full disk (or quota)


class TraceLoadError(Exception):
    """A trace could not be loaded at all; the message is shown as is."""


class UsageError(Exception):
    """A bad command-line argument (a range outside the trace, an invalid regex…); shown as one line."""
