"""PNG figures for the examples and the benchmark chart, drawn with matplotlib's Agg backend.

matplotlib is optional (``pip install '.[examples]'``): without it every
function here prints how to get the picture and returns ``None``.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

INSTALL_HINT = "pip install '.[examples]'"


STYLES = {
    "line": {"lw": 2.2},
    "dots": {"ls": "none", "marker": ".", "ms": 4, "zorder": 3},
    "faint": {"lw": 0.6, "alpha": 0.5, "color": "tab:blue"},
    "dashed": {"lw": 1.2, "ls": "--", "color": "black"},
    "cloud": {"ls": "none", "marker": ".", "ms": 3, "alpha": 0.35},
}


@dataclass
class Series:
    """One labelled set of lines in a style of ``STYLES``: ``y`` is 1-D, or 2-D with one line per column."""

    label: str
    y: np.ndarray
    x: np.ndarray | None = None
    style: str = "line"


def agg_figure(size: tuple[float, float]) -> Any | None:
    """A matplotlib ``Figure`` drawn by the Agg backend (pyplot untouched), or ``None`` without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(figure)
    return figure


def small_png(png: io.BytesIO, target: Path) -> None:
    """Write ``png`` to ``target`` with a palette of 256 colours: a fraction of the size, no visible change."""
    from PIL import Image  # a dependency of matplotlib

    Image.open(png).convert("RGB").quantize(colors=256).save(target, format="png", optimize=True)


def save(
    path: str | Path, title: str, draw: Callable[[Any], None], size: tuple[float, float] = (6.4, 3.6)
) -> Path | None:
    """Draw on one pair of axes with ``draw(axes)``, save a PNG at ``path`` (relative to the working directory).

    Prints the PNG's full path, or how to get the picture when matplotlib is missing.
    """
    fig = agg_figure(size)
    if fig is None:
        print(f"figure {Path(path).name} not written: matplotlib is not installed ({INSTALL_HINT} for the pictures)")
        return None
    axes = fig.subplots()
    draw(axes)
    axes.set_title(title, fontsize=11)
    axes.grid(alpha=0.3)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    target = Path(path).resolve()
    small_png(png, target)
    print(f"figure: {target}")
    return target


def lines(
    path: str | Path,
    title: str,
    series: Sequence[Series],
    xlabel: str,
    ylabel: str,
    log_y: bool = False,
    size: tuple[float, float] = (6.4, 3.6),
) -> Path | None:
    """A line chart of ``series``, each drawn in its style (``"cloud"`` for a scatter of points)."""

    def draw(axes: Any) -> None:
        for one in series:
            x = np.arange(len(one.y)) if one.x is None else one.x
            axes.plot(x, one.y, **STYLES[one.style])[0].set_label(one.label)
        axes.set(xlabel=xlabel, ylabel=ylabel, yscale="log" if log_y else "linear")
        axes.legend(fontsize=8)

    return save(path, title, draw, size)


def ratio_bars(path: str | Path, title: str, names: Sequence[str], ratios: dict[str, Sequence[float]]) -> Path | None:
    """Horizontal bars on a log scale: for each of ``names``, one bar per system of ``ratios``."""

    def draw(axes: Any) -> None:
        height = 0.8 / len(ratios)
        rows = np.arange(len(names))
        for k, (system, values) in enumerate(ratios.items()):
            bars = axes.barh(rows + k * height, values, height, label=system)
            axes.bar_label(bars, labels=[f"{v:.2f}" if v < 10 else f"{v:.0f}" for v in values], padding=2, fontsize=7)
        axes.axvline(1.0, color="black", lw=0.8)
        axes.set_yticks(rows + height * (len(ratios) - 1) / 2, names, fontsize=8)
        axes.invert_yaxis()
        axes.set_xscale("log")
        axes.tick_params(axis="x", which="minor", labelbottom=False)
        axes.set_xlabel("time per call / hand-written JAX's (log scale; 1 = as fast)")
        axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=len(ratios))

    return save(path, title, draw, size=(7.0, 0.45 * len(names) + 1.4))
