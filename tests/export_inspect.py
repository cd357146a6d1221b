"""Readers of exported files, for the tests: what a PNG, SVG or PDF holds, and whether LaTeX environments close.

They parse the files with the standard library only (no poppler, no image library), so a test can
check a written figure or table without another tool. The dashboard and the command line never read
their own files back, so these live with the tests, not in `analysis.export`.
"""

from __future__ import annotations

import contextlib
import re
import struct
import xml.etree.ElementTree as ET
import zlib
from typing import Any

_SVG = "{http://www.w3.org/2000/svg}"


# --- PNG -----------------------------------------------------------------------------------------


def png_info(data: bytes) -> dict[str, Any]:
    """Width and height (IHDR) and declared dpi (pHYs, None when absent) of a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    dpi = None
    at = data.find(b"pHYs")
    if at > 0:
        x, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
        dpi = round(x * 0.0254) if unit == 1 else None
    return {"width": width, "height": height, "dpi": dpi}


# --- SVG -----------------------------------------------------------------------------------------


def svg_info(data: bytes) -> dict[str, Any]:
    """What an SVG holds: size attributes, texts, fill colours, embedded font faces (parses it)."""
    root = ET.fromstring(data.decode("utf-8"))
    texts = ["".join(e.itertext()) for e in root.iter(f"{_SVG}text")]
    fills = set(re.findall(r"fill:\s*(rgb\([^)]*\)|#[0-9a-fA-F]{3,6})", data.decode("utf-8")))
    faces = re.findall(r"@font-face\{[^}]*\}", data.decode("utf-8"))
    return {"width": root.get("width"), "height": root.get("height"), "texts": texts, "fills": fills, "fonts": faces}


# --- PDF inspection (no poppler needed) ----------------------------------------------------------


def _pdf_objects(data: bytes) -> dict[int, bytes]:
    objects = {}
    for match in re.finditer(rb"(\d+)\s+0\s+obj\b(.*?)endobj", data, flags=re.S):
        objects[int(match.group(1))] = match.group(2)
    return objects


def _stream(body: bytes) -> bytes:
    match = re.search(rb"stream\r?\n(.*?)\r?\nendstream", body, flags=re.S)
    if not match:
        return b""
    raw = match.group(1)
    if b"/FlateDecode" in body.split(b"stream", 1)[0]:
        with contextlib.suppress(zlib.error):
            return zlib.decompressobj().decompress(raw)
    return raw


def _to_unicode(cmap: bytes) -> dict[int, str]:
    mapping: dict[int, str] = {}

    def chars(hexa: bytes) -> str:
        return bytes.fromhex(hexa.decode()).decode("utf-16-be", errors="replace")

    for block in re.findall(rb"beginbfchar(.*?)endbfchar", cmap, flags=re.S):
        for src, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            mapping[int(src, 16)] = chars(dst)
    for block in re.findall(rb"beginbfrange(.*?)endbfrange", cmap, flags=re.S):
        for lo, hi, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            base = chars(dst)
            for k, code in enumerate(range(int(lo, 16), int(hi, 16) + 1)):
                mapping[code] = base[:-1] + chr(ord(base[-1]) + k)
    return mapping


def pdf_info(data: bytes) -> dict[str, Any]:
    """Pages, fonts (base names and whether each is embedded), raster images, and the text drawn.

    Text comes from the content streams' show-text operators decoded with each font's ToUnicode map.
    """
    objects = _pdf_objects(data)
    pages = [o for o in objects.values() if re.search(rb"/Type\s*/Page(?![a-zA-Z])", o)]
    fonts: dict[int, dict[str, Any]] = {}
    for number, body in objects.items():
        if not re.search(rb"/Type\s*/Font\b", body):
            continue
        name = re.search(rb"/BaseFont\s*/([^\s/<>\[\]]+)", body)
        subtype = re.search(rb"/Subtype\s*/(\w+)", body)
        unicode_ref = re.search(rb"/ToUnicode\s+(\d+)\s+0\s+R", body)
        fonts[number] = {
            "name": name.group(1).decode() if name else "",
            "subtype": subtype.group(1).decode() if subtype else "",
            "to_unicode": _to_unicode(_stream(objects.get(int(unicode_ref.group(1)), b""))) if unicode_ref else {},
            "bytes_per_code": 2 if subtype and subtype.group(1) == b"Type0" else 1,
        }
    embedded = []
    for body in objects.values():
        subtype = re.search(rb"/Subtype\s*/(\w+)", body)
        if not re.search(rb"/Type\s*/Font\b", body) or not subtype or subtype.group(1) in (b"Type0", b"Type3"):
            continue  # a Type 0 font's glyphs live in its descendant; a Type 3 font's glyphs are PDF drawings
        descriptor = re.search(rb"/FontDescriptor\s+(\d+)\s+0\s+R", body)
        held = objects.get(int(descriptor.group(1)), b"") if descriptor else b""
        embedded.append(bool(re.search(rb"/FontFile[23]?\s", held)))
    texts: list[str] = []
    for page in pages:
        resources = dict(re.findall(rb"/(F\d+)\s+(\d+)\s+0\s+R", page))
        contents = re.search(rb"/Contents\s+(\d+)\s+0\s+R", page)
        if not contents:
            continue
        stream = _stream(objects.get(int(contents.group(1)), b""))
        current: dict[str, Any] = {}
        for op in re.finditer(rb"/(F\d+)\s+[\d.]+\s+Tf|\[(.*?)\]\s*TJ|<([0-9A-Fa-f]*)>\s*Tj", stream, flags=re.S):
            if op.group(1):
                current = fonts.get(int(resources.get(op.group(1), b"0")), {})
                continue
            hexes = re.findall(rb"<([0-9A-Fa-f]*)>", op.group(2)) if op.group(2) is not None else [op.group(3)]
            width = 2 * current.get("bytes_per_code", 1)
            table = current.get("to_unicode", {})
            texts.append(
                "".join(
                    table.get(int(h[i : i + width], 16), "") for h in hexes for i in range(0, len(h) - width + 1, width)
                )
            )
    media = re.search(rb"/MediaBox\s*\[\s*([\d.\s-]+)\]", data)
    box = [float(v) for v in media.group(1).split()] if media else []
    return {
        "pages": len(pages),
        "fonts": sorted({f["name"] for f in fonts.values() if f["name"]}),
        "font_subtypes": sorted({f["subtype"] for f in fonts.values()}),
        "fonts_embedded": bool(embedded) and all(embedded),
        "images": len(re.findall(rb"/Subtype\s*/Image\b", data)),
        "text": "".join(texts),
        "size_in": ((box[2] - box[0]) / 72, (box[3] - box[1]) / 72) if len(box) == 4 else None,
    }


# --- LaTeX ---------------------------------------------------------------------------------------


def latex_environments_balanced(text: str) -> bool:
    r"""Every \begin{env} closed by a matching \end{env} in order.

    >>> latex_environments_balanced("\\begin{table}\\begin{tabular}{l}\\end{tabular}\\end{table}")
    True
    """
    stack: list[str] = []
    for kind, env in re.findall(r"\\(begin|end)\{([^}]*)\}", text):
        if kind == "begin":
            stack.append(env)
        elif not stack or stack.pop() != env:
            return False
    return not stack
