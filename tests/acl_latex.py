r"""Compiling exported LaTeX as an author would paste it into an ACL paper, for the tests.

`acl_document` builds a minimal ACL-like document (acl.sty itself is not installed here: its geometry,
`\documentclass[11pt,twocolumn]{article}` on A4 with 2.5 cm margins and 0.6 cm between the columns) that
loads only the packages a snippet's header comment names (`\usepackage{booktabs}`, `graphicx`; for
CJK text `CJKutf8` under pdflatex and `xeCJK` with Noto Serif CJK SC under XeLaTeX) and `\input`s it.
`compile_tex` runs pdflatex or XeLaTeX and reads the log: errors, overfull boxes (by how much), and the
font types of the PDF (`pdffonts`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ENGINES = ("pdflatex", "xelatex")
HAVE_TEX = all(shutil.which(e) for e in ENGINES) and shutil.which("pdffonts") is not None
_PACKAGE = re.compile(r"\\usepackage\{([^}]+)\}")
_OVERFULL = re.compile(r"^Overfull \\[hv]box \(([\d.]+)pt too (?:wide|high)\)", re.M)
_ERROR = re.compile(r"^(?:! |\S+:\d+: )", re.M)


def header_packages(snippet: str) -> list[str]:
    """The packages the snippet's leading comment lines name (`\\usepackage{...}` in a `%` line)."""
    names: list[str] = []
    for line in snippet.splitlines():
        if not line.startswith("%"):
            if line.strip():
                break
            continue
        for found in _PACKAGE.findall(line):
            names += [n.strip() for n in found.split(",")]
    return list(dict.fromkeys(names))


def acl_document(inputs: list[str], packages: list[str], engine: str) -> str:
    """The ACL-like document `\\input`ting the files, with only `packages` (CJK ones per engine)."""
    lines = [
        r"\documentclass[11pt,twocolumn]{article}",
        r"\usepackage[a4paper,margin=2.5cm,columnsep=0.6cm]{geometry}",
    ]
    for name in packages:
        if name in ("CJKutf8", "xeCJK"):
            if engine == "pdflatex" and name == "CJKutf8":
                lines.append(r"\usepackage{CJKutf8}")
            elif engine == "xelatex" and name == "xeCJK":
                lines += [r"\usepackage{xeCJK}", r"\setCJKmainfont{Noto Serif CJK SC}"]
            continue
        lines.append(f"\\usepackage{{{name}}}")
    lines += [
        r"\begin{document}",
        "Text of the paper.",
        *[f"\\input{{{name}}}\\clearpage" for name in inputs],
        r"\end{document}",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class Compiled:
    engine: str
    returncode: int
    errors: list[str]
    overfull_pt: list[float]
    font_types: list[str] = field(default_factory=list)
    log: str = ""

    def problems(self, *, tolerance_pt: float = 1.0) -> list[str]:
        """What is wrong: a failed run, errors, overfull boxes over `tolerance_pt`, Type 3 fonts."""
        found = []
        if self.returncode != 0:
            found.append(f"{self.engine} exited {self.returncode}")
        found += [f"error: {e}" for e in self.errors]
        found += [f"overfull box {w}pt" for w in self.overfull_pt if w > tolerance_pt]
        found += ["Type 3 font" for t in self.font_types if t == "Type 3"]
        return found


def pdf_font_types(pdf: Path) -> list[str]:
    """The type of every font `pdffonts` lists in the PDF (e.g. "Type 1", "CID TrueType", "Type 3")."""
    out = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    types = []
    for line in out.splitlines()[2:]:
        match = re.search(r"(Type 1C|Type 1|Type 3|TrueType|CID Type 0C|CID Type 0|CID TrueType)\s", line)
        types.append(match.group(1) if match else line)
    return types


def compile_tex(folder: Path, main: str, engine: str, *, build: Path | None = None, timeout: float = 240) -> Compiled:
    """Compile `folder/main` with `engine` (once: no cross-references are checked) and read the log; the
    log and PDF go to `build` (default: `folder`)."""
    build = build or folder
    build.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            engine,
            "-interaction=nonstopmode",
            "-halt-on-error",
            "-file-line-error",
            "-no-shell-escape",
            f"-output-directory={build}",
            main,
        ],
        cwd=folder,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )
    stem = main.rsplit(".", 1)[0]
    log = (build / f"{stem}.log").read_text(encoding="utf-8", errors="replace")
    errors = [line for line in log.splitlines() if _ERROR.match(line)]
    overfull = [float(w) for w in _OVERFULL.findall(log)]
    pdf = build / f"{stem}.pdf"
    fonts = pdf_font_types(pdf) if pdf.exists() else []
    return Compiled(engine, done.returncode, errors, overfull, fonts, log)


def compile_snippets(folder: Path, snippets: list[str], engine: str, *, name: str = "paper") -> Compiled:
    """Compile an ACL-like document `\\input`ting these snippet files of `folder` (each file's header
    names its packages) with `engine`."""
    packages: list[str] = []
    for snippet in snippets:
        packages += header_packages((folder / snippet).read_text(encoding="utf-8"))
    document = acl_document(snippets, list(dict.fromkeys(packages)), engine)
    (folder / f"{name}-{engine}.tex").write_text(document, encoding="utf-8")
    return compile_tex(folder, f"{name}-{engine}.tex", engine)
