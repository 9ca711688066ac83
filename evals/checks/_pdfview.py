"""The derived `pdf` view of a PDF node, read from hostile bytes in a pool of worker processes.

An agent's PDF may be a decompression bomb, a parser loop or simply broken.
It is read by pypdf with `strict=True` in a worker process that has an
address-space limit (`RLIMIT_AS`) and pypdf's own output limits; the parent
waits a bounded time and kills and replaces a worker that overstays. Every
fault becomes `PdfUnreadable`, which fails the check with a clear detail; the
grading process never runs the parser itself.

Workers are started by `PdfPool` (a context manager), never at import, with
the `forkserver` method, which is safe in a process that already has threads.
Replies travel as JSON text, not pickles, so a subverted worker cannot run
code in the parent.

The view::

    {"page_count": 2, "text": "…", "pages": [{"text": "…"}, …],
     "metadata": {"title": …, "author": …, "subject": …, "creator": …, "producer": …,
                  "keywords": …},
     "fields": {"name": "value", …}}
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evals.checks._limits import Meter
from evals.checks._paths import NodePath, PdfUnreadable, normalized_path
from schema.errors import EnvironmentFault

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

logger = logging.getLogger(__name__)

_METADATA = {
    "title": "/Title",
    "author": "/Author",
    "subject": "/Subject",
    "creator": "/Creator",
    "producer": "/Producer",
    "keywords": "/Keywords",
}


@dataclass(frozen=True)
class PdfLimits:
    """What reading one agent PDF may cost."""

    max_bytes: int = 20 * 1024 * 1024
    max_pages: int = 500
    max_decompressed_bytes: int = 32 * 1024 * 1024
    max_text_chars: int = 2_000_000
    timeout_s: float = 10.0
    memory_bytes: int = 1024 * 1024 * 1024


# --- the worker side ---------------------------------------------------------------


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text


def _field_value(value: Any) -> Any:
    from pypdf.generic import NameObject

    if value is None:
        return None
    if isinstance(value, NameObject):
        return str(value)[1:]  # checkbox states: /Yes -> "Yes"
    if isinstance(value, list):
        return [_field_value(item) for item in value]
    return str(value)


def _decode_streams(page: Any) -> None:
    """Decode a page's content and its form XObjects, so a bomb raises instead of reading as ''."""
    contents = page.get_contents()
    if contents is not None:
        contents.get_data()
    resources = page.get("/Resources")
    resources = resources.get_object() if resources is not None else {}
    xobjects = resources.get("/XObject") if hasattr(resources, "get") else None
    if xobjects is None:
        return
    for reference in xobjects.get_object().values():
        xobject = reference.get_object()
        if hasattr(xobject, "get_data") and xobject.get("/Subtype") == "/Form":
            xobject.get_data()


class _LimitLog(logging.Handler):
    """pypdf logs some faults instead of raising; a limit it reached still fails the PDF."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "limit" in message.lower():
            self.messages.append(message)


def read_pdf(data: bytes, limits: PdfLimits) -> dict[str, Any]:
    """Parse a PDF into its view (runs inside a worker; raises on any fault)."""
    handler = _LimitLog()
    pypdf_logger = logging.getLogger("pypdf")
    pypdf_logger.addHandler(handler)
    try:
        view = _read_pdf(data, limits)
    finally:
        pypdf_logger.removeHandler(handler)
    if handler.messages:
        raise ValueError(handler.messages[0])
    return view


def _page_tree_entries(limits: PdfLimits) -> int:
    return 2 * limits.max_pages + 64


def _read_pdf(data: bytes, limits: PdfLimits) -> dict[str, Any]:
    import io

    from pypdf import PdfReader, overwrite_configuration
    from pypdf.errors import LimitReachedError

    cap = limits.max_decompressed_bytes
    overwrite_configuration(
        zlib_maximum_output_length=cap,
        lzw_maximum_output_length=cap,
        run_length_maximum_output_length=cap,
        brotli_maximum_output_length=cap,
        array_based_stream_maximum_output_length=cap,
        maximum_declared_stream_length=cap,
        image_maximum_buffer_size=cap,
        stream_decoding_work_maximum_length=cap * 4,
        jbig2_maximum_output_length=cap,
        jbig2dec_binary=None,  # never run an external decoder on agent bytes
        disable_legacy_handling=True,
        # A page tree is read whole before pages can be counted, and may be a
        # DAG whose few nodes fan out to millions of pages: stop walking it
        # soon after max_pages (intermediate /Pages nodes count as entries).
        page_tree_maximum_entries=_page_tree_entries(limits),
    )
    reader = PdfReader(io.BytesIO(data), strict=True)
    try:
        count = len(reader.pages)
    except LimitReachedError as exc:
        if "page tree" not in str(exc):
            raise
        raise ValueError(
            f"the PDF has more than the {limits.max_pages} pages read "
            f"(its page tree has more than {_page_tree_entries(limits)} entries)"
        ) from None
    if count > limits.max_pages:
        raise ValueError(f"the PDF has {count} pages, more than the {limits.max_pages} read")
    pages = []
    total = 0
    for page in reader.pages:
        _decode_streams(page)  # text extraction swallows decoding faults: surface them first
        text = page.extract_text()
        total += len(text)
        if total > limits.max_text_chars:
            raise ValueError(f"the PDF's text is longer than {limits.max_text_chars} characters")
        pages.append({"text": text})
    info: Any = reader.metadata or {}
    metadata = {name: _text(info.get(key)) for name, key in _METADATA.items()}
    fields = {
        str(name): _field_value(field.get("/V"))
        for name, field in (reader.get_fields() or {}).items()
    }
    return {
        "page_count": count,
        "text": "\n".join(page["text"] for page in pages),
        "pages": pages,
        "metadata": metadata,
        "fields": fields,
    }


def _warmup_pdf() -> bytes:
    """A one-page PDF with text, read once at worker start so pypdf's lazy imports are done."""
    content = b"BT /F1 12 Tf 72 720 Td (ready) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return assemble_pdf(objects)


def assemble_pdf(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """A PDF file of `objects` (numbered from 1; object 1 is the catalog) with a correct
    cross-reference table; `trailer` adds entries to the trailer dictionary."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        trailer,
        xref,
    )
    return bytes(out)


def _answer(data: bytes, limits: PdfLimits) -> bytes:
    try:
        reply: dict[str, Any] = {"view": read_pdf(data, limits)}
    except MemoryError:
        reply = {"error": "reading the PDF needs more memory than a reader may use"}
    except RecursionError:
        reply = {"error": "the PDF nests objects too deeply"}
    except Exception as exc:  # every parser fault is the PDF's, reported as its detail
        message = " ".join(str(exc).split())[:300] or type(exc).__name__
        reply = {"error": f"{type(exc).__name__}: {message}"}
    try:
        body = json.dumps(reply, ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        body = json.dumps({"error": f"the PDF's view is not JSON: {exc}"})
    return body.encode("ascii")


def _serve(conn: Connection, limits: PdfLimits) -> None:  # pragma: no cover - runs in a worker
    """A worker: limit memory, warm up, say ready, then answer one PDF at a time."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    logging.getLogger("pypdf").propagate = False  # its warnings are ours to judge, not to print
    read_pdf(_warmup_pdf(), limits)
    conn.send_bytes(_READY)
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        conn.send_bytes(_answer(data, limits))


_READY = b"ready"
_START_TIMEOUT_S = 60.0


# --- the parent side -------------------------------------------------------------------


class _Worker:
    __slots__ = ("conn", "process")

    def __init__(self, process: Any, conn: Connection) -> None:
        self.process = process
        self.conn = conn


class PdfPool:
    """A small pool of pre-started PDF reader processes. Use as a context manager.

    `read(data)` returns the view or raises `PdfUnreadable`; it is safe to
    call from several threads (each call takes an idle worker). A worker
    that overstays is killed and replaced before the call returns.
    """

    def __init__(self, workers: int = 2, limits: PdfLimits | None = None) -> None:
        if workers < 1:
            raise ValueError("a PDF pool needs at least one worker")
        self.limits = limits or PdfLimits()
        # Loaded with the first pool: a suite without PDF checks never starts one.
        import multiprocessing

        methods = multiprocessing.get_all_start_methods()
        method = "forkserver" if "forkserver" in methods else "spawn"
        self._mp: Any = multiprocessing.get_context(method)
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closed = False
        try:
            started = [self._spawn() for _ in range(workers)]
            for worker in started:
                self._idle.put(self._ready(worker))
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> PdfPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        mine, theirs = self._mp.Pipe(duplex=True)
        process = self._mp.Process(
            target=_serve, args=(theirs, self.limits), daemon=True, name="holon-pdf-reader"
        )
        process.start()
        theirs.close()
        worker = _Worker(process, mine)
        with self._lock:
            self._all.add(worker)
        return worker

    def _ready(self, worker: _Worker) -> _Worker:
        """Wait for a new worker's hello; one that never says it is a broken environment."""
        try:
            if worker.conn.poll(_START_TIMEOUT_S) and worker.conn.recv_bytes() == _READY:
                return worker
        except (EOFError, OSError):
            pass
        self._stop(worker)
        raise EnvironmentFault(
            "a PDF reader process did not start",
            hint="check the memory limit (PdfLimits.memory_bytes) and that pypdf imports",
        )

    def _replace(self, worker: _Worker) -> _Worker:
        self._stop(worker)
        return self._ready(self._spawn())

    def _stop(self, worker: _Worker) -> None:
        with self._lock:
            self._all.discard(worker)
        worker.conn.close()
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(timeout=5)

    def read(self, data: bytes, *, timeout_s: float | None = None) -> dict[str, Any]:
        """The view of one PDF, or PdfUnreadable saying why not."""
        limits = self.limits
        timeout = limits.timeout_s if timeout_s is None else timeout_s
        if len(data) > limits.max_bytes:
            raise PdfUnreadable(
                f"the PDF is {len(data)} bytes, "
                f"more than the {limits.max_bytes} bytes a reader takes"
            )
        if self._closed:
            raise RuntimeError("the PDF pool is closed")
        worker = self._idle.get()
        try:
            try:
                worker.conn.send_bytes(data)
                if not worker.conn.poll(timeout):
                    worker = self._replace(worker)
                    raise PdfUnreadable(f"reading the PDF took longer than {timeout:g} s")
                body = worker.conn.recv_bytes(limits.max_text_chars * 12 + (1 << 20))
            except (EOFError, OSError):
                worker = self._replace(worker)
                raise PdfUnreadable(
                    "the PDF reader died reading it (out of memory or crashed)"
                ) from None
        finally:
            self._release(worker)
        reply = json.loads(body)
        if "error" in reply:
            raise PdfUnreadable(str(reply["error"]))
        view: dict[str, Any] = reply["view"]
        return view

    def _release(self, worker: _Worker) -> None:
        if self._closed:
            self._stop(worker)
        else:
            self._idle.put(worker)

    def close(self) -> None:
        """Stop every worker (idempotent)."""
        self._closed = True
        with self._lock:
            workers = list(self._all)
        for worker in workers:
            self._stop(worker)


def open_pdf_pool(workers: int = 2, limits: PdfLimits | None = None) -> PdfPool:
    """Start a pool of PDF readers (the factory the runner and CLI use)."""
    return PdfPool(workers, limits)


class PdfViews:
    """The PDF views of one graded document: each PDF node is read once per cell.

    Without a pool, one is started on first need and stopped by `close()`.
    Time spent reading is given back to the case's wall-clock guard: a PDF
    has its own time limit.
    """

    def __init__(self, pool: PdfPool | None, meter: Meter | None) -> None:
        self.pool = pool
        self.meter = meter
        self._own: PdfPool | None = None
        self._cache: dict[int, tuple[dict[str, Any], Any]] = {}

    def view(self, node: dict[str, Any], location: NodePath) -> Any:
        cached = self._cache.get(id(node))
        if cached is None:
            cached = (node, self._read(node))
            self._cache[id(node)] = cached  # keeps `node` alive, so its id stays its own
        result = cached[1]
        if isinstance(result, str):
            raise PdfUnreadable(f"PDF at {normalized_path(location)}: {result}")
        return result

    def _read(self, node: dict[str, Any]) -> Any:
        pool = self.pool or self._own
        limits = pool.limits if pool is not None else PdfLimits()
        encoded = node["data_base64"]
        if len(encoded) > (limits.max_bytes * 4) // 3 + 4:
            return f"the PDF is more than the {limits.max_bytes} bytes a reader takes"
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            return "data_base64 is not valid base64"
        started = time.monotonic()
        try:
            if pool is None:
                pool = self._own = PdfPool(1)
            return pool.read(data)
        except PdfUnreadable as exc:
            return str(exc)
        finally:
            if self.meter is not None:
                self.meter.extend(time.monotonic() - started)

    def close(self) -> None:
        if self._own is not None:
            self._own.close()
            self._own = None
