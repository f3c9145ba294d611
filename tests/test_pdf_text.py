"""PDF text extraction over the real fixture PDFs, and every way a PDF can be unreadable."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pypdf import PdfWriter

from generator.errors import PdfTextError
from generator.fetch.pdf_text import extract_text


def pdf(fixtures: Path, stem: str) -> bytes:
    (path,) = (fixtures / "pdfs").glob(f"*{stem}*.pdf")
    return path.read_bytes()


@pytest.mark.parametrize("stem", ["1111.2011v2", "2004.04906v3", "1708.05894v1", "1704.01689v1"])
def test_extracts_text_from_real_layouts(fixtures: Path, stem: str) -> None:
    text = extract_text(pdf(fixtures, stem), 5000)
    assert text.status == "ok"
    assert len(text.text) == 5000 or len(text.text) > 4000
    assert text.pages >= 1 and text.total_pages > text.pages
    assert "\x00" not in text.text


def test_stops_reading_pages_once_enough_text_is_in_hand(fixtures: Path) -> None:
    data = pdf(fixtures, "2004.04906v3")
    short = extract_text(data, 3000)
    assert short.total_pages == 13
    assert short.pages <= 2
    assert len(short.text) <= 3000


def test_owner_password_pdf_opens_with_an_empty_password(fixtures: Path) -> None:
    text = extract_text(pdf(fixtures, "owner-password-aes"), 100_000)
    assert text.status == "ok" and len(text.text) > 1000


def blank_pdf(password: str | None = None) -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    if password:
        writer.encrypt(user_password=password, owner_password=password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "damaged or truncated"),
        (b"<html><body>Not a PDF</body></html>", "damaged or truncated"),
        (blank_pdf(), "no extractable text (scanned or image-only)"),
        (blank_pdf("secret"), "encrypted with a password"),
    ],
    ids=["empty", "html", "image-only", "user-password"],
)
def test_unreadable_pdfs_raise_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(PdfTextError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        extract_text(data, 1000)


def test_truncated_pdf_raises_a_reason(fixtures: Path) -> None:
    data = pdf(fixtures, "1111.2011v2")
    with pytest.raises(PdfTextError):
        extract_text(data[: len(data) // 3], 1_000_000)


def test_ligatures_and_line_end_hyphens_are_undone() -> None:
    from generator.fetch.pdf_text import normalize

    text = "An eﬃcient ﬁne-tuning of ﬂash\nattention for exam-\n  ple inputs.\nState-of-the-\nArt stays."
    assert normalize(text) == ("An efficient fine-tuning of flash\nattention for example inputs.\n"
                               "State-of-the-\nArt stays.")
