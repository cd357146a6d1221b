r"""LaTeX text that compiles under pdflatex as well as XeLaTeX, and the width a table will take in an ACL column.

Shared by the table snippets (`analysis.export.tables`), the figure snippets and `main.tex`
(`analysis.export.report`):

- `latex_text`: special characters escaped, symbols pdflatex's fonts lack typed as commands (`λ` as
  `$\lambda$`, `−` as `$-$`, `Δ` as `$\Delta$`, ...), Chinese, Japanese and Korean runs wrapped in
  `\dstcjk{...}` (`CJK_PREAMBLE` defines it: `CJKutf8`'s CJK environment under pdflatex, the text as it is
  under XeLaTeX with `xeCJK`);
- `text_width_pt`: an upper estimate of the printed width of a cell (Computer Modern widths, which are
  wider than ACL's Times), so a table is laid out to fit `\columnwidth` or `\textwidth` (`ACL`) before it
  is written, without compiling it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# ACL's geometry (acl.sty): A4, 2.5 cm margins, 0.6 cm between the columns, 11 pt type.
PT_PER_CM = 72.27 / 2.54


@dataclass(frozen=True)
class Geometry:
    """A two-column page: its widths in points and the body type size."""

    textwidth_pt: float
    columnsep_pt: float
    font_pt: float

    @property
    def columnwidth_pt(self) -> float:
        return (self.textwidth_pt - self.columnsep_pt) / 2


ACL = Geometry(textwidth_pt=16.0 * PT_PER_CM, columnsep_pt=0.6 * PT_PER_CM, font_pt=10.95)
# The type sizes a table may use, relative to the body's 11 pt (article's 11pt sizes): never below 7 pt.
SIZES = {"": 10.95, "\\small": 10.0, "\\footnotesize": 9.0, "\\scriptsize": 8.0}
MIN_TYPE_PT = 7.0
TABCOLSEP_PT = 6.0  # LaTeX's default space on each side of a column

# Characters pdflatex's default fonts cannot print as they are, as the commands that print them.
SYMBOLS = {
    "\u2212": "$-$",  # minus sign
    "\u00b1": "$\\pm$",
    "\u0394": "$\\Delta$",
    "\u03b1": "$\\alpha$",
    "\u03b2": "$\\beta$",
    "\u03b3": "$\\gamma$",
    "\u03b4": "$\\delta$",
    "\u03b5": "$\\epsilon$",
    "\u03ba": "$\\kappa$",
    "\u03bb": "$\\lambda$",
    "\u03bc": "$\\mu$",
    "\u03c0": "$\\pi$",
    "\u03c1": "$\\rho$",
    "\u03c3": "$\\sigma$",
    "\u03c4": "$\\tau$",
    "\u03c7": "$\\chi$",
    "\u00d7": "$\\times$",
    "\u2264": "$\\leq$",
    "\u2265": "$\\geq$",
    "\u2260": "$\\neq$",
    "\u2192": "$\\rightarrow$",
    "\u2190": "$\\leftarrow$",
    "\u2248": "$\\approx$",
    "\u00b7": "$\\cdot$",
    "\u221e": "$\\infty$",
    "\u2205": "$\\emptyset$",
    "\u2208": "$\\in$",
    "\u2209": "$\\notin$",
    "\u2227": "$\\wedge$",
    "\u2228": "$\\vee$",
    "\u00ac": "$\\neg$",
    "\u222a": "$\\cup$",
    "\u2229": "$\\cap$",
    "\u2282": "$\\subset$",
    "\u2286": "$\\subseteq$",
    "\u221a": "$\\surd$",
    "\u2211": "$\\sum$",
    "\u2261": "$\\equiv$",
    "\u223c": "$\\sim$",
    "\u21d2": "$\\Rightarrow$",
    "\u2194": "$\\leftrightarrow$",
    "\u2191": "$\\uparrow$",
    "\u2193": "$\\downarrow$",
    "\u00b0": "$^{\\circ}$",
    "\u2032": "$'$",
    "\u2713": "$\\surd$",
    "\u2717": "$\\times$",
    "\u2026": "\\ldots{}",
    "\u2022": "\\textbullet{}",
    "\u2013": "--",
    "\u2014": "---",
    "\u2018": "`",
    "\u2019": "'",
    "\u201c": "``",
    "\u201d": "''",
    "\u00a0": "~",
    "\u2009": "\\,",
}
# Chinese, Japanese and Korean characters (CJK radicals and beyond, Hangul, compatibility and full-width forms).
CJK_RANGES = (
    (0x2E80, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFE30, 0xFE4F),
    (0xFF00, 0xFFEF),
    (0x20000, 0x2FA1F),
)
_CJK_CLASS = "".join(f"\\U{low:08X}-\\U{high:08X}" for low, high in CJK_RANGES)
CJK_RUN = re.compile(f"[{_CJK_CLASS}]+(?:[ \u3000]*[{_CJK_CLASS}]+)*")
# `\dstcjk{...}`: a run of CJK text, in CJKutf8's CJK environment under pdflatex (Arphic's gbsn), as it is
# under XeLaTeX and LuaLaTeX (xeCJK, luatexja or a CJK main font set it). Robust: safe in a caption.
CJK_PREAMBLE = (
    "\\ProvideDocumentCommand{\\dstcjk}{m}{\\ifdefined\\XeTeXversion#1\\else\\ifdefined\\directlua#1"
    "\\else\\begin{CJK}{UTF8}{gbsn}#1\\end{CJK}\\fi\\fi}"
)
# `\dstchar{c}{XXXX}`: a character pdflatex's fonts lack, printed by XeLaTeX and LuaLaTeX, as [U+XXXX] by
# pdflatex (never dropped; the snippet's header says to compile with XeLaTeX).
CHAR_PREAMBLE = (
    "\\ProvideDocumentCommand{\\dstchar}{mm}{\\ifdefined\\XeTeXversion#1\\else\\ifdefined\\directlua#1"
    "\\else\\texttt{[U+#2]}\\fi\\fi}"
)
CJK_NEEDS = (
    "Chinese/Japanese/Korean text: pdflatex needs \\usepackage{CJKutf8} (texlive-lang-chinese); "
    "XeLaTeX needs \\usepackage{xeCJK} and a CJK font (e.g. \\setCJKmainfont{Noto Serif CJK SC})."
)

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # OT1 (pdflatex's default font encoding) has no < > |: they would print as an inverted !, ? and a dash.
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    # A cell opening a row right after \\ (or the header after \toprule) must not be read as their
    # optional argument: `[2pt]` there is a length, `[x]` an error.
    "[": "{[}",
    "]": "{]}",
}


def is_cjk(char: str) -> bool:
    """True for a Chinese, Japanese or Korean character.

    >>> is_cjk("餐"), is_cjk("é"), is_cjk("Δ")
    (True, False, False)
    """
    code = ord(char)
    return any(low <= code <= high for low, high in CJK_RANGES)


def has_cjk(text: str) -> bool:
    """True when `text` holds a CJK character."""
    return CJK_RUN.search(text) is not None


def _char(ch: str) -> str:
    if ch in _SPECIAL:
        return _SPECIAL[ch]
    if ch in SYMBOLS:
        return SYMBOLS[ch]
    if unicodedata.category(ch) == "Cc":  # NUL, tab, line breaks: a blank line ends a paragraph in a tabular
        return " "
    if ord(ch) > 0x17F and not is_cjk(ch):  # beyond pdflatex's fonts: printed by XeLaTeX, [U+XXXX] by pdflatex
        return f"\\dstchar{{{ch}}}{{{ord(ch):04X}}}"
    return ch


def latex_text(text: object) -> str:
    r"""Text safe anywhere in a table, caption or note under pdflatex and XeLaTeX: the ten special
    characters and `< > | [ ]` escaped, symbols as commands (`SYMBOLS`), CJK runs in `\dstcjk{}`, control
    characters as spaces, and a leading `*` braced so it is not read as `\*`.

    >>> latex_text("taxi-leaveAt_100% & #1")
    'taxi-leaveAt\\_100\\% \\& \\#1'
    >>> latex_text("*a<b>|[c]\n\n")
    '{*}a\\textless{}b\\textgreater{}\\textbar{}{[}c{]}  '
    >>> latex_text("b − a: Δ λ, 餐厅 名称")
    'b $-$ a: $\\Delta$ $\\lambda$, \\dstcjk{餐厅 名称}'
    """
    source = str(text)
    parts = []
    at = 0
    for match in CJK_RUN.finditer(source):
        parts.append("".join(_char(ch) for ch in source[at : match.start()]))
        parts.append("\\dstcjk{" + "".join(_char(ch) for ch in match.group()) + "}")
        at = match.end()
    parts.append("".join(_char(ch) for ch in source[at:]))
    escaped = "".join(parts)
    return "{*}" + escaped[1:] if escaped.startswith("*") else escaped


def beyond_pdflatex(text: str) -> set[str]:
    """Characters of `text` that neither `latex_text` types as commands nor LaTeX's UTF-8 input prints with its
    default fonts (Latin-1 and Latin Extended-A are printed): they need XeLaTeX.

    >>> sorted(beyond_pdflatex("é Δ 餐 ф"))
    ['ф']
    """
    return {ch for ch in text if ord(ch) > 0x17F and ch not in SYMBOLS and not is_cjk(ch)}


# Widths of Computer Modern Roman at 10 pt, in points (cmr10's metrics, rounded up); ACL's Times is narrower,
# so a table estimated to fit in Computer Modern fits in both.
_WIDTHS_10PT = {
    **dict.fromkeys("0123456789", 5.0),
    **dict(
        zip(
            "abcdefghijklmnopqrstuvwxyz",
            [
                5.0,
                5.56,
                4.44,
                5.56,
                4.44,
                3.06,
                5.0,
                5.56,
                2.78,
                3.06,
                5.28,
                2.78,
                8.33,
                5.56,
                5.0,
                5.56,
                5.28,
                3.92,
                3.95,
                3.89,
                5.56,
                5.28,
                7.23,
                5.28,
                5.28,
                4.44,
            ],
            strict=True,
        )
    ),
    **dict(
        zip(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            [
                7.5,
                7.09,
                7.23,
                7.64,
                6.81,
                6.53,
                7.85,
                7.5,
                3.61,
                5.14,
                7.78,
                6.25,
                9.17,
                7.5,
                7.78,
                6.81,
                7.78,
                7.36,
                5.56,
                7.23,
                7.5,
                7.5,
                10.28,
                7.5,
                7.5,
                6.11,
            ],
            strict=True,
        )
    ),
    " ": 3.34,
    ".": 2.78,
    ",": 2.78,
    ":": 2.78,
    ";": 2.78,
    "-": 3.34,
    "[": 2.78,
    "]": 2.78,
    "(": 3.89,
    ")": 3.89,
    "/": 5.0,
    "'": 2.78,
    "!": 2.78,
    "?": 4.73,
    "*": 5.0,
    "+": 7.78,
    "=": 7.78,
    "%": 8.34,
    "&": 7.78,
    "#": 8.34,
    "_": 5.0,
    "|": 5.0,
    "<": 7.78,
    ">": 7.78,
    "±": 7.78,
    "−": 7.78,
    "Δ": 8.34,
    "–": 5.0,
    "—": 10.0,
}
_DEFAULT_10PT = 7.5  # any other character: as wide as a capital
_CJK_10PT = 10.0  # a CJK character is one em


def text_width_pt(text: str, size_pt: float, *, bold: bool = False) -> float:
    """An upper estimate of the width of `text` set at `size_pt` (bold: 15% wider).

    >>> round(text_width_pt("0.519", 10), 2), round(text_width_pt("餐厅", 8), 2)
    (22.78, 16.0)
    """
    total = 0.0
    for ch in text:
        total += _CJK_10PT if is_cjk(ch) else _WIDTHS_10PT.get(ch, _DEFAULT_10PT)
    return total * size_pt / 10.0 * (1.15 if bold else 1.0)
