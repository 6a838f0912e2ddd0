"""The archive of a run's sources: every page fetched and every search answer, kept by content hash.

A folder a person can open::

    index.jsonl               one JSON object a line, one line a fetch (see ArchivedFetch)
    bytes/<sha256>.<ext>      the body as received (decompressed), once per distinct content

A source's id is ``s-`` and the first 12 hex digits of its SHA-256, so the same bytes fetched
from two addresses are one source with two index lines. Reading a body checks its hash: a file
changed after it was archived is refused, never quoted from.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from harness.core.errors import ConfigError
from harness.core.nofollow import append, read_bytes, write_atomic
from harness.research.extract import PDF_TYPES, media_type, renditions

ARCHIVE_DIR = "sources"
"""The folder of a run's folder (``.harness/runs/<run id>/``) that holds its archive."""
INDEX_FILE = "index.jsonl"
BYTES_DIR = "bytes"
ID_PREFIX = "s-"
ID_DIGITS = 12
_EXTENSIONS = {"text/html": ".html", "application/json": ".json", "text/markdown": ".md"}
_KEPT_HEADERS = ("content-type", "content-length", "last-modified", "etag", "date", "server")


class ArchivedFetch(BaseModel):
    """One fetch: which address gave which bytes, when, with which headers. Its bytes are named
    by their hash alone (an index is data: a line naming another file is refused)."""

    id: str = Field(pattern=rf"^{ID_PREFIX}[0-9a-f]{{{ID_DIGITS}}}$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    url: str  # the address the bytes came from (after redirects)
    requested: str  # the address asked for
    fetched_at: str  # ISO 8601, UTC
    status: int
    headers: dict[str, str]
    content_type: str
    encoding: str | None = None
    file: str = Field(pattern=rf"^{BYTES_DIR}/[0-9a-f]{{64}}(?:\.[a-z]{{1,5}})?$")  # in the folder
    kind: Literal["page", "search", "file"] = "page"
    cut: bool = False  # the body was cut at the fetch's byte limit

    @model_validator(mode="after")
    def _named_by_its_hash(self) -> ArchivedFetch:
        if self.id != source_id_of(self.sha256) or not self.file.startswith(
            f"{BYTES_DIR}/{self.sha256}"
        ):
            raise ValueError("the id and the file must be named by the bytes' sha256")
        return self

    @property
    def names(self) -> tuple[str, ...]:
        """What a citation may call this source: its id or either address."""
        return (self.id, self.url, self.requested)


def source_id(body: bytes) -> str:
    """The id of the source whose bytes are ``body``."""
    return source_id_of(hashlib.sha256(body).hexdigest())


def source_id_of(digest: str) -> str:
    """The id of the source whose bytes' SHA-256 is ``digest``."""
    return ID_PREFIX + digest[:ID_DIGITS]


class SourceArchive:
    """The archive in ``folder`` (made on the first :meth:`add`).

    With ``own_only``, only the fetches this object recorded count: a loop's tools and gates
    share one, so an index line written by anything else (the agent's shell, say) is ignored
    and a source it claims was never fetched. Its files are read and written without following
    a link below ``root`` (by default the folder itself): give the project's root to refuse a
    link anywhere on the way to another run's archive. With ``redact`` (the run's redactor),
    what :meth:`add` writes passes it: the addresses fetched and searched, and a search's answer
    (which may echo the query; a source's id is that of the body as kept).
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        own_only: bool = False,
        root: str | Path | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.redact = redact
        self.root = Path(root) if root is not None else self.folder
        self.own_only = own_only
        self._own: set[str] = set()  # the index lines this object wrote
        self._lock = threading.Lock()
        self._read: tuple[tuple[int, int], list[ArchivedFetch]] | None = None  # as last read
        self._texts: dict[tuple[str, str, str | None], tuple[str, ...]] = {}  # by content

    @property
    def index(self) -> Path:
        return self.folder / INDEX_FILE

    def add(
        self,
        url: str,
        body: bytes,
        *,
        requested: str | None = None,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        encoding: str | None = None,
        kind: Literal["page", "search", "file"] = "page",
        cut: bool = False,
        fetched_at: str | None = None,
    ) -> ArchivedFetch:
        """Keep ``body`` (once per content) and record this fetch of it (made now, unless
        ``fetched_at`` says when)."""
        if self.redact is not None:
            url, requested = self.redact(url), self.redact(requested or url)
            if kind == "search":
                with contextlib.suppress(UnicodeDecodeError):  # not text: as it is
                    body = self.redact(body.decode("utf-8")).encode("utf-8")
        digest = hashlib.sha256(body).hexdigest()
        kept = {k.lower(): v for k, v in (headers or {}).items() if k.lower() in _KEPT_HEADERS}
        content_type = media_type(kept.get("content-type"))
        file = f"{BYTES_DIR}/{digest}{_extension(content_type)}"
        record = ArchivedFetch(
            id=source_id_of(digest),
            sha256=digest,
            url=url,
            requested=requested or url,
            fetched_at=fetched_at or datetime.now(UTC).isoformat(timespec="seconds"),
            status=status,
            headers=kept,
            content_type=content_type,
            encoding=encoding,
            file=file,
            kind=kind,
            cut=cut,
        )
        with self._lock:  # no link below the folder is followed: its files are the run's own
            path = self.folder / file
            if path.is_symlink() or not path.is_file():  # its folders are made without links too
                write_atomic(path, body, root=self.root, durable=False)
            line = record.model_dump_json()
            append(self.index, (line + "\n").encode(), root=self.root)
            self._own.add(line)
        return record

    def keep_all(self, other: SourceArchive) -> None:
        """Record every fetch ``other`` holds here too, as it was recorded there; bytes that are
        not as ``other`` kept them are refused (a :class:`ConfigError`)."""
        for record in other.records():
            self.add(
                record.url, other.body(record), requested=record.requested, status=record.status,
                headers=record.headers, encoding=record.encoding, kind=record.kind, cut=record.cut,
                fetched_at=record.fetched_at,
            )  # fmt: skip

    def records(self) -> list[ArchivedFetch]:
        """Every fetch recorded, oldest first; none when nothing was archived.

        The index is read again only when its size or time changed."""
        try:
            stat = self.index.lstat()  # a link is refused by the read below
        except FileNotFoundError:
            return []
        version = (stat.st_size, stat.st_mtime_ns)
        if self._read is not None and self._read[0] == version:
            return list(self._read[1])
        found = []
        text = read_bytes(self.index, root=self.root).decode("utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or (self.own_only and line not in self._own):
                continue
            try:
                found.append(ArchivedFetch.model_validate_json(line))
            except ValidationError as exc:
                raise ConfigError(
                    f"{self.index}: line {number} is not a fetch record: {exc}"
                ) from None
        self._read = (version, found)
        return list(found)

    def find(self, name: str) -> ArchivedFetch | None:
        """The latest fetch that ``name`` (an id or an address) names; None when there is none."""
        name = name.strip()
        named = (r for r in reversed(self.records()) if name in r.names or _same_address(name, r))
        return next(named, None)

    def first(self, record: ArchivedFetch) -> ArchivedFetch:
        """The earliest fetch of ``record``'s content: where that content was first found."""
        return next(r for r in self.records() if r.sha256 == record.sha256)

    def body(self, record: ArchivedFetch) -> bytes:
        """The archived bytes of ``record``; a :class:`ConfigError` when they are not as kept."""
        path = self.folder / record.file
        try:
            body = read_bytes(path, root=self.root)
        except OSError as exc:
            raise ConfigError(
                f"{path}: the archived bytes of {record.id} cannot be read: {exc}"
            ) from None
        if hashlib.sha256(body).hexdigest() != record.sha256:
            raise ConfigError(f"{path}: the archived bytes of {record.id} do not match their hash")
        return body

    def texts(self, record: ArchivedFetch) -> tuple[str, ...]:
        """The texts the archived bytes read as (see :func:`renditions`), the agent's first.

        The bytes are checked against their hash on every call; their text is extracted once
        per content (every gate of every round reads the same sources)."""
        body = self.body(record)
        key = (record.sha256, record.content_type, record.encoding)
        if key not in self._texts:
            self._texts[key] = renditions(body, record.content_type, record.encoding)
        return self._texts[key]


def _same_address(name: str, record: ArchivedFetch) -> bool:
    """``http://host/page`` and ``http://host/page/`` name one address; so do fragments."""
    bare = name.partition("#")[0].rstrip("/")
    return bool(bare) and bare in (record.url.rstrip("/"), record.requested.rstrip("/"))


def _extension(content_type: str) -> str:
    if content_type in PDF_TYPES:
        return ".pdf"
    return _EXTENSIONS.get(content_type, ".txt" if content_type.startswith("text/") else ".bin")
