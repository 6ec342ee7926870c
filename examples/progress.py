"""Progress of long work on stderr: a bar redrawn in place on a terminal, one plain line per step otherwise.

Shared by the examples and ``benchmarks/run.py``. Results go to stdout
through :meth:`Progress.print`, which keeps the bar out of the way.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TextIO

BAR_WIDTH = 20


class Progress:
    """Report ``total`` steps of work named ``label``: call :meth:`step` as each one starts."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.current = ""
        self.on_terminal = self.stream.isatty()

    def step(self, name: str) -> None:
        """Start the next step, ``name``: steps started before it count as done."""
        if self.current:
            self.done += 1
        self.current = name
        if self.on_terminal:
            self._draw()
        else:
            self.stream.write(f"[{self.label} {self.done + 1}/{self.total}] {name}\n")
            self.stream.flush()

    def print(self, text: str) -> None:
        """Print a result line on stdout, then redraw the bar below it."""
        self._clear()
        print(text, flush=True)
        if self.current:
            self._draw()

    def close(self) -> None:
        """Take the bar off the terminal once the work is done."""
        self._clear()
        self.current = ""

    def _draw(self) -> None:
        if not self.on_terminal:
            return
        filled = BAR_WIDTH * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        self.stream.write(f"\r\033[K{self.label} [{bar}] {self.done}/{self.total} {self.current}")
        self.stream.flush()

    def _clear(self) -> None:
        if self.on_terminal:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
