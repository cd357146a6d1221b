"""Issue 42 req 5: the categorical palette has at least 12 colours that stay apart in normal and in
colour-deficient vision, a grayscale-safe option (markers and patterns), runs keep their colour, and review
tags never share one.

Colour-vision deficiency is simulated with Machado, Oliveira & Fernandes (2009), severity 1.0, on linear RGB;
distances are CIE76 in CIELAB (D65).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis import palette
from analysis.figures import run_colours
from analysis.review.figures import tag_counts_bar
from analysis.review.items import DEFAULT_TAGS

MACHADO = {
    "normal": np.eye(3),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}
MIN_DELTA_E = 12.0  # CIE76: colours this far apart are told apart side by side


def _lab(colour: str, vision: str) -> np.ndarray:
    srgb = np.array(palette.rgb(colour), dtype=float) / 255
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    linear = np.clip(MACHADO[vision] @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_at_least_12_distinct_colours_in_every_kind_of_vision() -> None:
    assert len(palette.DISTINCT) >= 12 and len(set(palette.DISTINCT)) == len(palette.DISTINCT)
    for vision in MACHADO:
        labs = [_lab(c, vision) for c in palette.DISTINCT]
        closest = min(
            (float(np.linalg.norm(a - b)), palette.DISTINCT[i], palette.DISTINCT[j])
            for (i, a), (j, b) in itertools.combinations(enumerate(labs), 2)
        )
        assert closest[0] >= MIN_DELTA_E, f"{vision}: {closest}"


def test_every_distinct_colour_has_its_own_marker_and_pattern() -> None:
    assert len(palette.MARKERS) >= len(palette.DISTINCT) and len(set(palette.MARKERS)) == len(palette.MARKERS)
    patterns = [palette.pattern(at) for at in range(len(palette.DISTINCT))]
    assert len(set(patterns)) == len(patterns)


def test_grayscale_safe_gives_bars_patterns_and_lines_markers() -> None:
    colours = run_colours([f"run{i}" for i in range(13)])
    bars = go.Figure([go.Bar(x=list(colours), y=[1] * 13, marker_color=list(colours.values()))])
    lines = go.Figure([go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line_color=c, marker={}) for c in colours.values()])
    palette.grayscale_safe(bars)
    palette.grayscale_safe(lines)
    shown = list(zip(bars.data[0].marker.pattern.shape, bars.data[0].marker.pattern.solidity, strict=True))
    assert len(set(shown)) == 13
    assert len({t.marker.symbol for t in lines.data}) == 13 and all("markers" in t.mode for t in lines.data)


def test_a_run_keeps_its_colour_and_the_first_13_runs_differ() -> None:
    runs = [f"run-{i}" for i in range(14)]
    colours = run_colours(runs)
    assert len(set(list(colours.values())[:13])) == 13
    assert run_colours(runs[:5]) == {r: colours[r] for r in runs[:5]}  # the same run order, the same colours


def test_review_tags_never_share_a_colour_and_keep_it_whatever_the_counts() -> None:
    colours = palette.tag_colours(list(DEFAULT_TAGS), DEFAULT_TAGS)
    assert len(set(colours.values())) == len(DEFAULT_TAGS)
    counts = pd.DataFrame(
        {
            "domain": ["hotel"] * len(DEFAULT_TAGS),
            "slot": ["area"] * len(DEFAULT_TAGS),
            "tag": list(DEFAULT_TAGS),
            "n": list(range(len(DEFAULT_TAGS), 0, -1)),
            "n_items": [1] * len(DEFAULT_TAGS),
        }
    )
    fig = tag_counts_bar(counts)
    drawn = {t.name: t.marker.color for t in fig.data}
    assert len(set(drawn.values())) == len(DEFAULT_TAGS)
    reversed_counts = counts.assign(n=counts["n"].to_numpy()[::-1])
    assert {t.name: t.marker.color for t in tag_counts_bar(reversed_counts).data} == drawn
