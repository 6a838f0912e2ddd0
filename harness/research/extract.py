"""A document's bytes as text: HTML by trafilatura, PDF by pypdf, text as it is.

The same functions make what ``fetch_url`` shows the agent and what the citation check reads,
so a quote is checked against the text the agent was given, derived afresh from the archived
bytes. HTML has two renditions: Markdown (links and emphasis kept, what the agent reads) and
plain text (what a quote copied without the Markdown marks matches).

Requires the ``web`` extra (``pip install 'harness[web]'``).
"""

from __future__ import annotations

import io

from harness.core.errors import MissingExtra, ToolError

HTML_TYPES = ("text/html", "application/xhtml+xml")
PDF_TYPES = ("application/pdf", "application/x-pdf")
TEXT_TYPES = ("text/plain", "text/markdown", "application/json", "text/csv", "text/xml")


def media_type(content_type: str | None) -> str:
    """``text/html; charset=utf-8`` as ``text/html``; a missing type is taken as HTML."""
    return (content_type or "text/html").split(";")[0].strip().lower()


def is_readable(kind: str) -> bool:
    """Whether a body of media type ``kind`` can be turned into text."""
    return kind in HTML_TYPES or kind in PDF_TYPES or kind in TEXT_TYPES or kind.startswith("text/")


def renditions(body: bytes, kind: str, encoding: str | None = None) -> tuple[str, ...]:
    """The texts a body of media type ``kind`` reads as, :func:`shown_text` first; an HTML page
    also as plain text (a quote copied without Markdown's marks matches it)."""
    shown = shown_text(body, kind, encoding)
    if kind in HTML_TYPES:
        return shown, _extract(body.decode(encoding or "utf-8", errors="replace"), "txt")
    return (shown,)


def shown_text(body: bytes, kind: str, encoding: str | None = None) -> str:
    """What the agent is shown of a body of media type ``kind``: an HTML page's Markdown, a
    PDF's pages' text, text itself. A :class:`ToolError` names a type that is not text."""
    if not is_readable(kind):
        raise ToolError(f"{kind} is not text; only pages, PDFs and text files can be read")
    if kind in PDF_TYPES:
        return pdf_text(body)
    text = body.decode(encoding or "utf-8", errors="replace")
    return _extract(text, "markdown") if kind in HTML_TYPES else text


def _extract(html: str, output_format: str) -> str:
    """The page's main content (navigation, footers and scripts left out) as ``markdown`` or
    plain text (``txt``)."""
    try:
        import trafilatura
        from trafilatura.settings import use_config
    except ImportError as exc:
        raise MissingExtra("web", str(exc.name), "web") from exc
    settings = use_config()
    settings.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")  # short pages are pages too
    settings.set("DEFAULT", "MAX_FILE_SIZE", str(len(html) + 1))  # our own limit was applied
    settings.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # its timeout uses signals: main thread only
    markdown = output_format == "markdown"
    extracted = trafilatura.extract(
        html, output_format=output_format, include_links=markdown, include_formatting=markdown,
        include_tables=True, favor_recall=True, config=settings,
    )  # fmt: skip
    return extracted if extracted else str(trafilatura.html2txt(html))


def pdf_text(body: bytes) -> str:
    """The text of every page of a PDF, pages separated by a blank line."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as exc:
        raise MissingExtra("web", str(exc.name), "web") from exc
    try:
        reader = PdfReader(io.BytesIO(body))
        return "\n\n".join(page.extract_text() or "" for page in reader.pages)
    except PyPdfError as exc:
        raise ToolError(f"the PDF cannot be read: {exc}") from None
    except Exception as exc:  # pypdf meets malformed objects with whatever they raise
        raise ToolError(f"the PDF cannot be read: {type(exc).__name__}: {exc}") from None
