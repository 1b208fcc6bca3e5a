"""matplotlib, set up once for every figure: the Agg backend, a fixed style, reproducible files.

Figures are matplotlib.figure.Figure objects made without pyplot (no global figure list, no
display). save() writes each one as PNG (100 dpi) and SVG. The SVG is reproducible: no date in
its metadata, svg.hashsalt fixed (the ids of clip paths and markers are hashes), text kept as
<text> elements (svg.fonttype none: no embedded glyphs, small files, titles readable by a
parser). The Creator metadata keeps matplotlib's version, which the tests read: only the same
version is expected to write the same bytes.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, List

import matplotlib

matplotlib.use("Agg")  # before anything imports a backend; a display is never needed

from matplotlib.figure import Figure  # noqa: E402

DPI = 100
HASH_SALT = "cuda-course-plots"

RC = {
    "svg.hashsalt": HASH_SALT,
    "svg.fonttype": "none",
    # DejaVu Sans ships with matplotlib: the same metrics, so the same layout, everywhere. The
    # SVG names the others after it, for a viewer without DejaVu Sans.
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Bitstream Vera Sans", "Verdana", "Arial", "Helvetica"],
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "legend.fontsize": 8.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "savefig.facecolor": "white",
    "path.simplify": False,
    "axes.formatter.useoffset": False,
    "axes.unicode_minus": False,
    "mathtext.default": "regular",
    "lines.markersize": 5.0,
}

# One colour and one marker per lab, the same in every figure (colour-blind-safe Okabe-Ito).
LAB_COLORS = {"d01": "#0072B2", "d02": "#E69F00", "d03": "#009E73", "d04": "#CC79A7",
              "d05": "#D55E00", "d06": "#56B4E9"}
LAB_MARKERS = {"d01": "o", "d02": "s", "d03": "^", "d04": "D", "d05": "v", "d06": "P"}
SERIES_COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9",
                 "#F0E442", "#000000", "#999999", "#882255"]
SERIES_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*"]
CEILING_COLOR = "#444444"
NOT_GRADED_COLOR = "#C0392B"


def lab_color(lab: str, fallback: int = 0) -> str:
    return LAB_COLORS.get(lab, SERIES_COLORS[fallback % len(SERIES_COLORS)])


def lab_marker(lab: str, fallback: int = 0) -> str:
    return LAB_MARKERS.get(lab, SERIES_MARKERS[fallback % len(SERIES_MARKERS)])


@contextlib.contextmanager
def style() -> Iterator[None]:
    """The course's rcParams for everything made and saved inside."""
    with matplotlib.rc_context(RC):
        yield


def new_figure(width: float, height: float) -> Figure:
    """A figure of a fixed size in inches, laid out by matplotlib's constrained layout."""
    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def mark_title(text_artist, n: int = 0) -> None:
    """Give a title an id, so that its <text> can be found in the SVG (tests compare them)."""
    text_artist.set_gid(f"course-title-{n}")


def save(fig: Figure, out_dir: str, stem: str) -> List[str]:
    """Write fig as out_dir/stem.png and .svg; returns the two paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for ext, metadata in (("png", {"Software": None}),
                          ("svg", {"Date": None, "Creator": f"Matplotlib v{matplotlib.__version__}"
                                   ", https://matplotlib.org/"})):
        path = os.path.join(out_dir, f"{stem}.{ext}")
        fig.savefig(path, format=ext, dpi=DPI, metadata=metadata)
        paths.append(path)
    return paths
