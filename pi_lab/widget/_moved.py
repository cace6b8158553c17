"""The widget's old module names for what moved to :mod:`pi_lab.view` (the transport-free view
model), kept importable for code outside pi_lab for a while, with a ``DeprecationWarning``
naming the new home. pi_lab itself imports :mod:`pi_lab.view` directly.

The module object is aliased, not re-exported, so private names and monkeypatching through the
old name still reach the one module.
"""

from __future__ import annotations

import importlib
import sys
import warnings


def alias(old: str, new: str) -> None:
    """Make ``old`` (the module being imported) the module ``new``, with a warning."""
    warnings.warn(f"{old} is deprecated: import {new} instead", DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
