"""The lessons' concept diagrams (lessons/diagrams/dNN_<what>.svg and .png), drawn by code.

A diagram draws what a student has to picture, not a measurement: which lane holds which element
of an mma.sync fragment, the bank grid before and after a swizzle, a pipeline over time. Each is
a function registered with @diagram("dNN_<what>") in this package's module for its day
(dNN.py) that returns a matplotlib Figure; draw_diagrams() saves every one of them through the
course's style (style.save: PNG and a reproducible SVG). Shared drawing primitives (cells,
grids, boxes, arrows, a lane colour map) are in draw.py.

    python3 tools/plots/course_plots.py diagrams [--out DIR] [--only STEM ...]

A lesson shows a diagram as ![alt](diagrams/<stem>.svg); tests/tools/test_plots.py checks that
every registered diagram is cited by its day's lesson, that every cited one is registered, and
that lessons/diagrams/ is what this command draws.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Callable, Dict, List, Optional, Sequence

from matplotlib.figure import Figure

from .. import style as S
from ..data import InputError

STEM = re.compile(r"^d(0[1-9]|1[0-4])_[a-z0-9_]+$")
REGISTRY: Dict[str, Callable[[], Figure]] = {}


def diagram(stem: str) -> Callable[[Callable[[], Figure]], Callable[[], Figure]]:
    """Register the decorated function as the diagram lessons/diagrams/<stem>.{svg,png}."""
    if not STEM.match(stem):
        raise ValueError(f"diagram {stem!r}: a stem is dNN_<lowercase words>")
    if stem in REGISTRY:
        raise ValueError(f"diagram {stem!r} is registered twice")

    def register(fn: Callable[[], Figure]) -> Callable[[], Figure]:
        REGISTRY[stem] = fn
        return fn
    return register


def _load_all() -> None:
    """Import every day's module (dNN.py) so that its diagrams register themselves."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if re.match(r"^d\d\d", info.name):
            importlib.import_module(f"{__name__}.{info.name}")


def stems() -> List[str]:
    """Every registered diagram, sorted."""
    _load_all()
    return sorted(REGISTRY)


def draw_diagrams(out: str, only: Optional[Sequence[str]] = None) -> List[str]:
    """Draw the registered diagrams (all, or those named in only) into out; the paths written."""
    names = stems()
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise InputError(f"no such diagram: {', '.join(unknown)} (there are: "
                             f"{', '.join(names) or 'none'})")
        names = [n for n in names if n in set(only)]
    paths: List[str] = []
    with S.style():
        for name in names:
            fig = REGISTRY[name]()
            S.mark_title(fig.axes[0].title if fig.axes else fig.suptitle(name))
            paths += S.save(fig, out, name)
    return paths
