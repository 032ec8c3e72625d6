"""The bases of every ``--json`` output's Struct (`vtui.present.schema` registers them)."""

from __future__ import annotations

import msgspec


class Strict(msgspec.Struct, forbid_unknown_fields=True):
    """A part of an output: every key known, every key typed."""


class Out(Strict):
    """A whole output: the version of its shape comes first in the printed JSON (a positional
    field of the base, so msgspec encodes it before the subclass's fields)."""

    schema_version: int
