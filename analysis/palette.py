"""The one colour palette of every chart: dashboard, figure exports and the report alike.

Categorical colours (runs, systems, tags, metrics, outcomes) are Okabe & Ito's eight colours
(Okabe & Ito 2008, "Color Universal Design"; Wong 2011, Nature Methods 8:441), distinguishable under
protanopia, deuteranopia and tritanopia. Beyond eight runs the same hues repeat as lighter tints
(`TINTS`, each the Okabe-Ito colour mixed half with white), and the traces then differ by dash or
marker as well. Neutral elements (error bars, seed dots, reference lines) are greys (`GREYS`).

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

import plotly.colors

# Okabe & Ito (2008): blue, orange, bluish green, reddish purple, sky blue, vermillion, yellow, black.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
# Beyond eight runs, the Okabe-Ito hues repeat in a lighter tint (and traces differ by dash/marker).
TINTS = ("#7FB8D8", "#F2CF7F", "#7FCEB9", "#E5BCD3", "#AAD9F4", "#EAAF7F", "#F7F1A0", "#7F7F7F")
CATEGORICAL = OKABE_ITO + TINTS
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
