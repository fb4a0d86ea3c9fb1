"""The package's release, the one place it is written (the wheel's metadata reads it here).

A module of its own, below every layer: the CLI, ``init`` and the component's schema for other
languages all name the release, and none of them should import the package root (which sits on
top of the Pulumi layer) to learn it.
"""

from __future__ import annotations

__version__ = "0.1.0"
