"""The UI's text assets go out gzip-compressed to a browser that takes gzip, compressed once
per file version, with an ETag a browser revalidates against; others get them as they are."""

from __future__ import annotations

import gzip

import httpx
from fastapi import FastAPI
from fastapi.testclient import TestClient

from services.api.web import PLOTLY_URL, STATIC_DIR, mount_web, plotly_bundle

GZIP = {"Accept-Encoding": "gzip"}


def client() -> TestClient:
    app = FastAPI()
    mount_web(app)
    return TestClient(app)


def _raw(http: TestClient, url: str, headers: dict[str, str]) -> httpx.Response:
    # The bytes as sent: httpx would otherwise decompress them on reading.
    with http.stream("GET", url, headers=headers) as response:
        response.raw_body = b"".join(response.iter_raw())  # type: ignore[attr-defined]
        return response


def test_plotly_goes_out_compressed_with_its_cache_headers() -> None:
    http = client()
    response = _raw(http, PLOTLY_URL, GZIP)
    assert response.status_code == 200
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["vary"] == "Accept-Encoding"
    assert response.headers["cache-control"] == "public, max-age=86400"
    assert "default-src 'self'" in response.headers["content-security-policy"]
    shipped = plotly_bundle().read_bytes()
    sent: bytes = response.raw_body  # type: ignore[attr-defined]
    assert gzip.decompress(sent) == shipped
    assert len(sent) < len(shipped) / 2


def test_a_browser_holding_the_version_gets_304_and_no_body() -> None:
    http = client()
    etag = http.get(PLOTLY_URL, headers=GZIP).headers["etag"]
    again = http.get(PLOTLY_URL, headers={**GZIP, "If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""


def test_without_gzip_or_refusing_it_the_file_goes_as_it_is() -> None:
    http = client()
    for offered in ("identity", "gzip;q=0", "br"):
        response = _raw(http, "/static/js/main.js", {"Accept-Encoding": offered})
        assert response.status_code == 200
        assert "content-encoding" not in response.headers
        assert response.raw_body == (STATIC_DIR / "js" / "main.js").read_bytes()  # type: ignore[attr-defined]


def test_the_apps_scripts_and_styles_are_compressed_and_revalidated() -> None:
    http = client()
    for url, file in (("/static/js/main.js", "js/main.js"), ("/static/app.css", "app.css")):
        response = _raw(http, url, GZIP)
        assert response.headers["content-encoding"] == "gzip", url
        assert response.headers["cache-control"] == "no-cache", url
        assert gzip.decompress(response.raw_body) == (STATIC_DIR / file).read_bytes()  # type: ignore[attr-defined]
    assert http.get("/static/js/no-such.js", headers=GZIP).status_code == 404
