"""The UI's text assets sent gzip-compressed to a browser that accepts it.

plotly.min.js is 4.8 MB as shipped and about 1.4 MB compressed: uncompressed, a first
chart page took 2.0-2.2 s on the test VMs. Each file version (path, mtime, size) is
compressed once and kept, so a request costs a lookup, not a compression; its ETag names
the version, and a browser that has it gets 304 with no body.
"""

from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path

from starlette.datastructures import Headers
from starlette.responses import Response

COMPRESSIBLE = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
# The largest file kept compressed in memory (plotly's bundle is the largest asset).
MAX_COMPRESSED_SOURCE_BYTES = 16 * 1024 * 1024
# Kept versions: every asset of the UI with room for a deploy's new ones.
CACHED_VERSIONS = 128


@lru_cache(maxsize=CACHED_VERSIONS)
def _gzipped(path: str, mtime_ns: int, size: int) -> bytes:
    # mtime_ns and size are the cache key: a replaced file is compressed anew.
    del mtime_ns, size
    # mtime=0: the same file always compresses to the same bytes.
    return gzip.compress(Path(path).read_bytes(), compresslevel=6, mtime=0)


def accepts_gzip(request_headers: Headers) -> bool:
    offered = request_headers.get("accept-encoding", "")
    for coding in offered.split(","):
        name, _, params = coding.strip().partition(";")
        if name.strip().lower() == "gzip" and params.replace(" ", "") != "q=0":
            return True
    return False


def gzip_response(path: Path, request_headers: Headers, headers: dict[str, str]) -> Response | None:
    """The file compressed with ``headers`` (its ETag and Vary added), 304 when the browser
    holds this version; None when it is not a text asset, is too large to keep, or the
    browser does not accept gzip (the caller sends it as it is)."""
    media_type = COMPRESSIBLE.get(path.suffix)
    if media_type is None or not accepts_gzip(request_headers):
        return None
    stat = path.stat()
    if stat.st_size > MAX_COMPRESSED_SOURCE_BYTES:
        return None
    etag = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}-gzip"'
    sent = {**headers, "ETag": etag, "Vary": "Accept-Encoding"}
    if etag in request_headers.get("if-none-match", ""):
        return Response(status_code=304, headers=sent)
    body = _gzipped(str(path), stat.st_mtime_ns, stat.st_size)
    return Response(body, media_type=media_type, headers={**sent, "Content-Encoding": "gzip"})
