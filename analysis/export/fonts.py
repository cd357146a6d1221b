"""Font embedding for SVG files: `@font-face` rules holding subsets of the fonts a figure draws with.

PDF needs nothing from here: Chromium's PDF backend (Skia) embeds every font it uses as a subset
(Liberation Sans and, for CJK, Droid Sans Fallback as TrueType CID fonts: `style.PDF_FONT_FAMILY`; a CFF
font such as Noto CJK would become Type 3 glyphs), so the PDF is self-contained vector. An SVG keeps its text as text (selectable, searchable, editable), so
`analysis.export.figures.finish_svg` puts a `<style>` element in it with these rules:

- Liberation Sans (fonts-liberation; regular, and bold when used) as a `data:font/ttf;base64,` subset
  holding only the glyphs the figure's text uses (glyph ids, metrics, kerning and hinting kept);
- Noto Sans CJK SC (fonts-noto-cjk, a CFF font) with just the CJK characters drawn, for the characters
  Liberation Sans lacks (Chinese, Korean), so the SVG renders the same on a machine without that font.

Both are cut by fontTools' subsetter (`fontTools.subset`); a font that is not installed is left out.
"""

from __future__ import annotations

import base64
import io
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fontTools.ttLib import TTFont

FONT_FILES = {
    "regular": (
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    ),
    "bold": (
        "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Bold.ttf",
    ),
}
CJK_FONT_FILES = {
    "regular": "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "bold": "/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc",
}
CJK_FAMILY = "Noto Sans CJK SC"
CJK_FROM = 0x2E80  # CJK radicals and beyond: what Liberation Sans lacks


@lru_cache(maxsize=4)
def font_data(weight: str) -> bytes | None:
    """The installed Liberation Sans file of a weight ("regular" or "bold"), or None."""
    for candidate in FONT_FILES[weight]:
        path = Path(candidate)
        if path.is_file():
            return path.read_bytes()
    return None


def _subset(font: TTFont, unicodes: set[int], *, retain_gids: bool = False) -> bytes:
    """`font` (changed in place) cut to the glyphs of `unicodes`, as file bytes.

    The name table, `.notdef`'s outline, hinting and kerning are kept; with `retain_gids` the glyph ids too.
    """
    from fontTools import subset

    options = subset.Options()
    options.name_IDs = ["*"]
    options.notdef_outline = True
    options.retain_gids = retain_gids
    options.drop_tables += ["FFTM"]  # FontForge's timestamp: fontTools cannot subset it and would warn
    subsetter = subset.Subsetter(options=options)
    subsetter.populate(unicodes=unicodes)
    subsetter.subset(font)
    buffer = io.BytesIO()
    font.save(buffer)
    return buffer.getvalue()


def subset_font(data: bytes, text: str) -> tuple[bytes, set[str]]:
    """A TrueType font (file bytes) cut to the glyphs `text` needs, and the characters of `text` it covers.

    Glyph ids stay those of the full font: unused glyphs before the last one used are kept empty, those
    after it dropped.

    >>> regular = font_data("regular")
    >>> if regular:
    ...     small, covered = subset_font(regular, "JGA 中")
    ...     assert covered == set("JGA ") and len(small) < len(regular) / 2
    """
    from fontTools.ttLib import TTFont

    font = TTFont(io.BytesIO(data))
    cmap = font.getBestCmap()
    covered = {ch for ch in set(text) if ord(ch) in cmap}
    return _subset(font, {ord(ch) for ch in covered}, retain_gids=True), covered


def _chars(text: str, start: int = 0) -> str:
    """The distinct characters of `text` from code point `start` on, sorted: the memo key of a subset."""
    return "".join(sorted({ch for ch in text if ord(ch) >= start}))


def font_face_css(regular: str, bold: str = "") -> str:
    """`@font-face` rules embedding subsets of Liberation Sans for the given characters ("" if not installed).

    Memoised on the characters: a report's figures share most of their text, and each subset costs ~0.1 s."""
    return _font_face_css(_chars(regular), _chars(bold))


@lru_cache(maxsize=256)
def _font_face_css(regular: str, bold: str) -> str:
    rules = []
    for weight, text, css_weight in (("regular", regular, "normal"), ("bold", bold, "bold")):
        data = font_data(weight) if text else None
        if data is None:
            continue
        small, covered = subset_font(data, text)
        if not covered:
            continue
        encoded = base64.b64encode(small).decode("ascii")
        rules.append(
            "@font-face{font-family:'Liberation Sans';font-style:normal;"
            f"font-weight:{css_weight};src:url(data:font/ttf;base64,{encoded}) format('truetype');}}"
        )
    return "".join(rules)


def cjk_font_face_css(regular: str, bold: str = "") -> str:
    """`@font-face` rules embedding subsets of Noto Sans CJK SC for the characters Liberation Sans lacks.

    Memoised on those characters: one subset of the CJK collection costs 1.5-3.5 s (its CFF outlines are
    read again each time), and a report's Chinese figures repeat the same domain and slot names."""
    return _cjk_font_face_css(_chars(regular, CJK_FROM), _chars(bold, CJK_FROM))


@lru_cache(maxsize=256)
def _cjk_font_face_css(regular: str, bold: str) -> str:
    from fontTools.ttLib import TTCollection

    rules = []
    for weight, text, css_weight in (("regular", regular, "normal"), ("bold", bold, "bold")):
        wanted = {ord(ch) for ch in text if ord(ch) >= CJK_FROM}
        path = Path(CJK_FONT_FILES[weight])
        if not wanted or not path.is_file():
            continue
        collection = TTCollection(str(path))
        font = next(f for f in collection.fonts if f["name"].getDebugName(1) == CJK_FAMILY)
        encoded = base64.b64encode(_subset(font, wanted)).decode("ascii")
        rules.append(
            f"@font-face{{font-family:'{CJK_FAMILY}';font-style:normal;font-weight:{css_weight};"
            f"src:url(data:font/otf;base64,{encoded}) format('opentype');}}"
        )
    return "".join(rules)
