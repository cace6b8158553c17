"""Moved to :mod:`pi_lab.view.actions` (the transport-free view model); this name stays importable.

The module object itself is aliased, not re-exported, so private names and monkeypatching
through the old name reach the one module.
"""

import sys

from pi_lab.view import actions as _moved

sys.modules[__name__] = _moved
