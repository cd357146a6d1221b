"""The one colour palette of every chart: dashboard, figure exports and the report alike.

Categorical colours (runs, systems, tags, metrics, outcomes) are `CATEGORICAL`: Okabe & Ito's eight colours
(Okabe & Ito 2008, "Color Universal Design"; Wong 2011, Nature Methods 8:441) and five of Paul Tol's
colour-blind-safe "muted" colours (indigo, wine, green, olive, brown; Tol 2021, "Colour schemes", SRON):
13 colours, every pair at least 13 CIELAB units apart under simulated protanopia, deuteranopia and
tritanopia (Machado et al. 2009) and 22 in normal vision (`tests/test_palette.py` checks it). Beyond 13 runs
the Okabe-Ito hues repeat as lighter tints (`TINTS`, each mixed half with white). Neutral elements
(error bars, seed dots, reference lines) are greys (`GREYS`).

Grayscale-safe: the i-th categorical colour also has the i-th marker symbol (`MARKERS`) and bar pattern
(`PATTERNS`), so traces stay apart printed in grey; `grayscale_safe(figure)` gives every trace of a
figure the marker or pattern of its colour (`python -m analysis report --grayscale`).

A run keeps its colour everywhere: `analysis.figures.run_colours` over the runs in workspace order, for
every page and export; a review tag has the colour of its place in the tag vocabulary (`tag_colours`),
so no two of the default tags share one.

Continuous colour scales, also colour-blind safe and readable in grey:

* `COUNT_SCALE`: counts and shares from 0 (ColorBrewer "Blues", whose low end is already a visible
  blue, so a cell of one never looks like an empty cell, which is left blank);
* `SCORE_SCALE`: scores in [0, 1] (Viridis, perceptually uniform);
* `DIVERGING_SCALE`: signed differences around 0 (ColorBrewer "RdBu", red below, blue above).

`check_colour` says whether a colour string is one of these; the paper-figure tests use it on every
figure kind.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import plotly.colors

# Okabe & Ito (2008): blue, orange, bluish green, reddish purple, sky blue, vermillion, yellow, black.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
# Beyond eight runs, the Okabe-Ito hues repeat in a lighter tint (and traces differ by dash/marker).
TINTS = ("#7FB8D8", "#F2CF7F", "#7FCEB9", "#E5BCD3", "#AAD9F4", "#EAAF7F", "#F7F1A0", "#7F7F7F")
# Paul Tol's muted scheme: the five of its colours farthest from Okabe-Ito's under colour-vision deficiency.
TOL_MUTED = ("#332288", "#882255", "#117733", "#999933", "#661100")
DISTINCT = OKABE_ITO + TOL_MUTED  # 13 colours, distinct in normal and colour-deficient vision
CATEGORICAL = DISTINCT + TINTS
# One marker symbol and one bar pattern per distinct colour: apart in grey too.
MARKERS = (
    "circle",
    "square",
    "diamond",
    "triangle-up",
    "cross",
    "x",
    "triangle-down",
    "star",
    "hexagon",
    "pentagon",
    "triangle-left",
    "hourglass",
    "triangle-right",
)
PATTERNS = ("", "/", "\\", "x", "-", "|", "+", ".")  # Plotly's bar patterns: the 9th colour on repeats them denser


def pattern(at: int) -> tuple[str, float]:
    """The bar pattern (shape, solidity) of the `at`-th categorical colour: Plotly's eight shapes, then the
    seven visible ones again at twice the density.

    >>> pattern(0), pattern(1), pattern(8), pattern(12)
    (('', 0.3), ('/', 0.3), ('/', 0.6), ('|', 0.6))
    """
    if at < len(PATTERNS):
        return PATTERNS[at], 0.3
    return PATTERNS[1 + (at - len(PATTERNS)) % (len(PATTERNS) - 1)], 0.6


GREYS = ("#222222", "#333333", "#444444", "#666666", "#999999", "#e5e5e5", "#ffffff")
MUTED_OPACITY = 0.45  # runs other than the highlighted one (thin lines, pale bars)

COUNT_SCALE: list[list[float | str]] = [[0.0, "#b3d1ea"], [0.5, "#4292c6"], [1.0, "#08306b"]]
SCORE_SCALE = "Viridis"
DIVERGING_SCALE = "RdBu"
SCALES: dict[str, str | Sequence[Sequence[float | str]]] = {
    "count": COUNT_SCALE,
    "score": SCORE_SCALE,
    "diverging": DIVERGING_SCALE,
}


def rgb(colour: str) -> tuple[int, int, int] | None:
    """The (red, green, blue) of '#rrggbb', '#rgb', 'rgb(...)' or 'rgba(...)'; None for anything else.

    >>> rgb("#0072B2"), rgb("rgba(0,114,178,0.15)"), rgb("#fff"), rgb("red")
    ((0, 114, 178), (0, 114, 178), (255, 255, 255), None)
    """
    text = colour.strip()
    if re.fullmatch(r"#[0-9a-fA-F]{6}", text):
        return int(text[1:3], 16), int(text[3:5], 16), int(text[5:7], 16)
    if re.fullmatch(r"#[0-9a-fA-F]{3}", text):
        return int(text[1] * 2, 16), int(text[2] * 2, 16), int(text[3] * 2, 16)
    match = re.fullmatch(r"rgba?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*(?:,\s*[\d.]+\s*)?\)", text)
    if match:
        return int(match.group(1)), int(match.group(2)), int(match.group(3))
    return None


def rgba(colour: str, alpha: float) -> str:
    """A palette colour with transparency, for interval bands and shaded areas.

    >>> rgba("#0072B2", 0.15)
    'rgba(0,114,178,0.15)'
    """
    red, green, blue = rgb(colour) or (0, 0, 0)
    return f"rgba({red},{green},{blue},{alpha:g})"


def is_grey(colour: str) -> bool:
    """True for a neutral colour (red = green = blue), black and white included."""
    value = rgb(colour)
    return value is not None and value[0] == value[1] == value[2]


_ALLOWED = {rgb(c) for c in CATEGORICAL}


def check_colour(colour: str) -> bool:
    """True when `colour` is a palette colour (categorical or tint, any transparency) or a grey.

    >>> check_colour("#0072b2"), check_colour("rgba(230,159,0,0.2)"), check_colour("#636efa")
    (True, True, False)
    """
    return is_grey(colour) or rgb(colour) in _ALLOWED


def scale_colours(scale: str | Sequence[Sequence[float | str]]) -> list[str]:
    """The colours of a continuous scale (a Plotly name or a list of [position, colour])."""
    resolved = plotly.colors.get_colorscale(scale) if isinstance(scale, str) else scale
    return [str(c) for _, c in resolved]


def check_scale(scale: object) -> bool:
    """True when a heatmap's resolved colour scale is one of `SCALES`."""
    if scale is None:
        return False
    colours = [str(c).replace(" ", "").lower() for _, c in scale]  # type: ignore[attr-defined]
    return any(colours == [c.replace(" ", "").lower() for c in scale_colours(known)] for known in SCALES.values())


def category_index(colour: str) -> int | None:
    """The position of a colour in `DISTINCT` (then `TINTS`, as a repeat of the hue), or None.

    >>> category_index("#0072b2"), category_index("#332288"), category_index("#7FB8D8"), category_index("#123456")
    (0, 8, 0, None)
    """
    value = rgb(colour)
    for palette in (DISTINCT, TINTS):
        for at, known in enumerate(palette):
            if rgb(known) == value:
                return at
    return None


def tag_colours(tags: Sequence[str], vocabulary: Sequence[str] = ()) -> dict[str, str]:
    """A colour per tag: the vocabulary's tags by their place in it, other tags after them in the order
    given; distinct for up to `len(DISTINCT)` tags (13), tints beyond.

    >>> colours = tag_colours(["other", "wrong value"], ["wrong value", "coreference", "other"])
    >>> colours["wrong value"], colours["other"]
    ('#0072B2', '#009E73')
    """
    order = list(dict.fromkeys([*vocabulary, *tags]))
    return {tag: CATEGORICAL[order.index(tag) % len(CATEGORICAL)] for tag in tags}


def grayscale_safe(fig: Any) -> Any:
    """Give every trace the marker symbol (lines, points) or bar pattern of its colour's place in the
    palette (`MARKERS`, `PATTERNS`), so the traces stay apart printed in grey. Changes `fig` and returns it."""
    for trace in fig.data:
        marker = getattr(trace, "marker", None)
        if marker is None:
            continue
        colour = marker.color if isinstance(marker.color, str) else getattr(getattr(trace, "line", None), "color", None)
        if trace.type == "bar" and isinstance(marker.color, (list, tuple)):  # a colour per bar (runs on the axis)
            places = [category_index(c) if isinstance(c, str) else None for c in marker.color]
            chosen = [("", 0.3) if at is None else pattern(at) for at in places]
            trace.marker.pattern = {
                "shape": [c[0] for c in chosen],
                "solidity": [c[1] for c in chosen],
                "fillmode": "overlay",
            }
            continue
        at = category_index(colour) if isinstance(colour, str) else None
        if at is None:
            continue
        if trace.type == "bar":
            shape, solidity = pattern(at)
            trace.marker.pattern = {"shape": shape, "fillmode": "overlay", "solidity": solidity}
        elif trace.type == "scatter":
            trace.marker.symbol = MARKERS[at % len(MARKERS)]
            if trace.mode and "markers" not in trace.mode:
                trace.mode = trace.mode + "+markers"
    return fig
