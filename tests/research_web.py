"""A small web for research tests, made in memory and served on 127.0.0.1 (port 0).

Three sites (a gazette, an archive, a survey office), each its own server and so its own host
for the independence of sources: 59 pages in all, HTML and PDF, with redirects (within a site
and across sites), a page served twice byte for byte, near-duplicate sentences (the opening
day given as 14 and as 15 May) and numbers that contradict (the main span as 142 and as 148
metres, the opening year as 1887 and 1888). The PDFs are written here, a page of Helvetica
text each.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Page = tuple[int, dict[str, str], bytes]


def make_pdf(lines: list[str]) -> bytes:
    """A one-page PDF showing ``lines`` (ASCII) in Helvetica, one text line each."""
    shown = "".join(
        "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") Tj T*\n"
        for line in lines
    )
    stream = f"BT /F1 11 Tf 14 TL 50 780 Td\n{shown}ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def html(title: str, *paragraphs: str) -> bytes:
    """A page with navigation and a footer around an article of ``paragraphs``."""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        f"<nav><a href='/'>Home</a> | <a href='/about'>About the site</a></nav>"
        f"<article><h1>{title}</h1>{body}</article>"
        f"<footer>Copyright the publishers. All rights reserved.</footer></body></html>"
    ).encode()


HISTORY = html(
    "The Harran Bridge",
    "The Harran Bridge was opened on 14 May 1887 by the county engineer, Ellen Marsh.",
    "Its main span is 142&nbsp;metres long and carries two lanes of traffic.",
    "Work began in 1883. The piers were sunk by hand.",
    "Marsh wrote: \u201cthe piers are sound \u2014 for now\u2026\u201d in her last report.",
)
REPORT = make_pdf(
    [
        "Harran Bridge: the engineer's final report",
        "The bridge opened to traffic in 1887 after four years of work.",
        "The main span measures 142 metres between the piers.",
        "The cost was 41,250 pounds, some 6,000 over the estimate.",
    ]
)


@dataclass
class Site:
    """One server: its pages by path, and its address once started."""

    pages: dict[str, Page] = field(default_factory=dict)
    url: str = ""

    def page(self, path: str, body: bytes, kind: str = "text/html; charset=utf-8") -> None:
        self.pages[path] = (200, {"Content-Type": kind}, body)

    def redirect(self, path: str, target: str, status: int = 301) -> None:
        self.pages[path] = (status, {"Location": target}, b"")


@dataclass
class Web:
    """The three sites: ``gazette`` (A), ``archive`` (B) and ``survey`` (C)."""

    gazette: Site
    archive: Site
    survey: Site

    @property
    def page_count(self) -> int:
        """Pages with a body (redirects not counted)."""
        sites = (self.gazette, self.archive, self.survey)
        return sum(1 for s in sites for status, _, _ in s.pages.values() if status == 200)


def _fill(web: Web) -> None:
    a, b, c = web.gazette, web.archive, web.survey
    a.page("/history.html", HISTORY)
    a.redirect("/old/history", "/history.html")
    a.page(
        "/tolls.html",
        html("Tolls", "In 1901 the toll was abolished after a vote of 31 to 12."),
    )
    for i in range(20):
        a.page(
            f"/bridge/{i}.html",
            html(f"Note {i}", f"Note {i}: the toll in {1890 + i} was {i + 2} pence a cart."),
        )
    b.page("/report.pdf", REPORT, "application/pdf")
    b.redirect("/go/report", "/report.pdf", 302)
    b.page("/mirror/history.html", HISTORY)  # the gazette's page, byte for byte
    b.redirect("/cross", f"{a.url}/tolls.html", 302)
    for i in range(10):
        b.page(
            f"/doc/{i}.pdf",
            make_pdf([f"Ledger page {i}", f"{100 + 7 * i} carts crossed on market day {i + 1}."]),
            "application/pdf",
        )
        b.page(f"/notes/{i}.html", html(f"Archive note {i}", f"Box {i} holds {i * 3} letters."))
    c.page(
        "/span-survey.html",
        html("Span survey", "The 1990 survey measured the main span at 148 metres."),
    )
    c.page(
        "/history-draft.html",
        html(
            "Draft history",
            "The Harran Bridge was opened on 15 May 1887 by the county engineer, Ellen Marsh.",
        ),
    )
    c.page(
        "/opening.html",
        html("Opening day", "Crowds watched as the bridge opened in 1888, a year late."),
    )
    for i in range(10):
        c.page(f"/page/{i}.html", html(f"Survey sheet {i}", f"Pier {i} settled {i + 1} mm."))


class _Handler(BaseHTTPRequestHandler):
    site: Site

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        status, headers, body = self.site.pages.get(self.path, (404, {}, b"not found"))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve_web() -> Iterator[Web]:
    """The web, its three sites served until the block ends."""
    web = Web(Site(), Site(), Site())
    servers = []
    for site in (web.gazette, web.archive, web.survey):
        handler = type("Handler", (_Handler,), {"site": site})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        site.url = f"http://127.0.0.1:{server.server_port}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    _fill(web)
    try:
        yield web
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
