"""Extract a PDF's text with pypdf, page by page, stopping once enough is in hand.

Every way a PDF can be unreadable ends in a PdfTextError whose message a reader can understand;
the paper then keeps its abstract and the edition goes on.
"""

from __future__ import annotations

import io
import logging
import re

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PyPdfError

from ..errors import PdfTextError
from ..papers import FullText
from ..text.safe_text import clean

log = logging.getLogger(__name__)

_SPACES_RE = re.compile(r"[ \t\f\v]+")
_BLANK_LINES_RE = re.compile(r"\n{3,}")
# Typographic ligatures that PDFs keep as one glyph: "eﬃcient" reads as a different word to a
# model (and to the evidence and figure checks) than "efficient".
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi",
                            "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"})
# A word broken across lines by a hyphen: joined when lowercase letters stand on both sides
# ("exam-\nple"), so "state-of-the-\nart" keeps the hyphens it had in the middle of the line.
_HYPHENATED_RE = re.compile(r"(?<=[a-z])-\n(?=[a-z])")


def normalize(text: str) -> str:
    """Tidy extracted text: no control characters, single spaces, at most one blank line."""
    # Control characters (other than newline and tab), lone surrogates and bidi overrides
    # that some PDFs emit break JSON and XML readers, or reorder the text around them.
    text = clean(text).translate(_LIGATURES)
    text = _SPACES_RE.sub(" ", text)
    text = "\n".join(line.strip() for line in text.splitlines())
    text = _HYPHENATED_RE.sub("", text)
    return _BLANK_LINES_RE.sub("\n\n", text).strip()


def extract_text(data: bytes, max_chars: int) -> FullText:
    """Read pages in order until `max_chars` characters are in hand; cut the text there."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many arXiv-era PDFs carry only an owner password: an empty user password opens them.
            try:
                opened = reader.decrypt("")
            except DependencyError as err:
                raise PdfTextError(
                    "the PDF is AES-encrypted and the 'cryptography' package is not installed"
                ) from err
            if not opened:
                raise PdfTextError("the PDF is encrypted with a password")
        total = len(reader.pages)
        parts: list[str] = []
        have = 0
        read = 0
        for page in reader.pages:
            if have >= max_chars:
                break
            page_text = normalize(page.extract_text() or "")
            read += 1
            if page_text:
                parts.append(page_text)
                have += len(page_text) + 2
    except PdfTextError:
        raise
    except FileNotDecryptedError as err:
        raise PdfTextError("the PDF is encrypted with a password") from err
    except DependencyError as err:
        raise PdfTextError(f"a library pypdf needs for this PDF is missing: {err}") from err
    except (PdfReadError, PyPdfError) as err:
        raise PdfTextError(f"the PDF is damaged or truncated: {err}") from err
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError,
            UnicodeDecodeError, AssertionError, OverflowError, ZeroDivisionError) as err:
        # pypdf raises plain exceptions on some malformed files; none may sink the edition.
        raise PdfTextError(f"the PDF could not be parsed ({type(err).__name__}: {err})") from err
    text = "\n\n".join(parts)[:max_chars].strip()
    if not text and max_chars > 0:
        raise PdfTextError("the PDF has no extractable text (scanned or image-only)")
    return FullText(status="ok", text=text, pages=read, total_pages=total)
