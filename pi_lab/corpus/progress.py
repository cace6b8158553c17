"""The progress bar of a scan that reads files (``pi-lab corpus`` and ``pi-lab usage`` on a
terminal)."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """A one-line bar on stderr (no dependency): files and bytes read, and the time left
    estimated from the bytes; silent when not asked for (the CLI asks on a terminal)."""

    def __init__(self, total: int, enabled: bool, total_bytes: int = 0):
        self.total, self.enabled, self.done = total, enabled and total > 0, 0
        self.total_bytes, self.done_bytes = total_bytes, 0
        self.last = 0.0
        self.started = time.monotonic()

    def advance(self, n: int, nbytes: int = 0) -> None:
        self.done += n
        self.done_bytes += nbytes
        if not self.enabled:
            return
        now = time.monotonic()
        if self.done < self.total and now - self.last < 0.1:
            return
        self.last = now
        sys.stderr.write("\r" + self.line(now))
        if self.done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def line(self, now: float) -> str:
        width = 30
        share = self.done_bytes / self.total_bytes if self.total_bytes else self.done / self.total
        filled = int(width * min(share, 1.0))
        text = f"reading sessions [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files"
        if self.total_bytes:
            text += f", {_mb(self.done_bytes)}/{_mb(self.total_bytes)}"
        if 0 < share < 1:
            left = (now - self.started) * (1 - share) / share
            text += f", {int(left) // 60}:{int(left) % 60:02d} left"
        return text + "   "  # (clears what a longer line left)


def _mb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"
