"""Hostile documents for the extraction bounds (issue 26, findings 2 and 4), made in the test so
that nothing large is committed: a PDF whose one page inflates to megabytes of text, tag-dense
and deeply nested HTML."""

from __future__ import annotations

import io
import zlib


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1, the catalog first) with a correct xref."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out.getvalue()


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def surrogate_pdf() -> bytes:
    """A PDF whose font map (ToUnicode) turns "A" into the lone surrogate U+D800: pypdf hands
    it out as such, and Postgres cannot store it."""
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def\n"
        b"1 begincodespacerange <00> <FF> endcodespacerange\n"
        b"2 beginbfchar <41> <D800> <42> <0042> endbfchar\n"
        b"endcmap CMapName currentdict /CMap defineresource pop end end"
    )
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
            _stream(b"BT /F1 12 Tf 72 720 Td (ABAB) Tj ET"),
            _stream(cmap),
        ]
    )


def pdf_bomb(text_bytes: int, pages: int = 1) -> bytes:
    """A valid PDF whose every page's compressed content stream inflates to about ``text_bytes``
    of shown text (a few KB on disk: repeated text compresses well)."""
    line = b"(" + b"lorem ipsum dolor sit amet " * 4 + b") Tj T*\n"
    body = b"BT /F1 12 Tf 72 720 Td 14 TL\n" + line * (text_bytes // len(line) + 1) + b"ET"
    stream = _stream(zlib.compress(body, 9), b" /Filter /FlateDecode")
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(pages))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i in range(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(stream)
    return _pdf(objects)


def dense_html(size: int) -> bytes:
    """``<p><b>a</b><i>b</i></p>`` repeated to ``size`` bytes: flat, but many tags a byte."""
    unit = b"<p><b>a</b><i>b</i></p>"
    return b"<html><body>" + unit * (size // len(unit)) + b"</body></html>"


def nested_html(depth: int, open_tags: str = "<div>") -> bytes:
    """``open_tags`` nested ``depth`` times, never closed, with a word at the bottom."""
    return (open_tags * depth + "deep").encode()
