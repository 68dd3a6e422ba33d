"""Document fixtures for the ingestion tests: the committed folder ``tests/data/documents`` and a
tiny PDF writer (text in Helvetica, one content stream a page), so a test can make the PDF it
needs without any tool. ``python tests/documents_data.py`` rewrites the committed ``manual.pdf``.
"""

from __future__ import annotations

import io
from pathlib import Path

DOCUMENTS = Path(__file__).resolve().parent / "data" / "documents"
MANUAL_PAGES = [
    ["Storage appliance manual", "Replacing a failed quorum disk takes ten minutes."],
    ["Firmware rollback", "Hold the reset button for thirty seconds to roll back firmware."],
]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def tiny_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A valid PDF 1.4 whose pages hold these lines of text (ASCII), with a correct xref."""
    objects: list[bytes] = []
    n_pages = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, lines in enumerate(pages):
        content = "BT /F1 12 Tf 72 720 Td 16 TL " + " ".join(
            f"({_escape(line)}) Tj T*" for line in lines
        )
        content += " ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        data = content.encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")
    info = None
    if title:
        objects.append(f"<< /Title ({_escape(title)}) >>".encode())
        info = len(objects)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R"
    trailer += f" /Info {info} 0 R >>" if info else " >>"
    out.write(f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def encrypted(pdf: bytes, password: str = "secret") -> bytes:
    """The same PDF, encrypted with a user password (pypdf's writer)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


if __name__ == "__main__":
    (DOCUMENTS / "manual.pdf").write_bytes(tiny_pdf(MANUAL_PAGES, title="Storage appliance"))
