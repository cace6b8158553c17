"""Deprecated: moved to :mod:`pi_lab.view.columns` (the transport-free view model); this name warns."""

from pi_lab.widget._moved import alias

alias(__name__, "pi_lab.view.columns")
