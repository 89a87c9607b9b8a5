"""The UI's files: served at / and /static, shipped as package data, nothing remote."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from services.api.web import PLOTLY_URL, STATIC_DIR, WEB_DIR, mount_web

# src="//…", href="https://…", url(http://…): anything the browser would fetch elsewhere.
REMOTE = re.compile(r"(?:src|href|url)\s*[=(]\s*[\"']?(?:https?:)?//")


def client() -> TestClient:
    app = FastAPI()
    mount_web(app)
    return TestClient(app)


def test_index_is_served_with_a_same_origin_policy() -> None:
    response = client().get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert '<script type="module" src="/static/js/main.js">' in response.text


def test_every_asset_the_page_imports_is_served() -> None:
    http = client()
    index = (WEB_DIR / "index.html").read_text()
    wanted = set(re.findall(r'(?:src|href)="(/static/[^"]+)"', index))
    for module in STATIC_DIR.rglob("*.js"):
        # Relative imports of each module, resolved like the browser does.
        for target in re.findall(r'from "(\.{1,2}/[^"]+)"', module.read_text()):
            resolved = (module.parent / target).resolve().relative_to(STATIC_DIR)
            wanted.add(f"/static/{resolved.as_posix()}")
    assert "/static/js/views/detail.js" in wanted
    for url in sorted(wanted):
        response = http.get(url)
        assert response.status_code == 200, url
    assert "javascript" in http.get("/static/js/main.js").headers["content-type"]


def test_nothing_is_fetched_from_elsewhere() -> None:
    # Vendored third-party builds hold URLs in strings they never fetch (docs links, examples);
    # test_graphiql.py loads them in a browser with every other host blocked instead.
    vendor = STATIC_DIR / "graphiql" / "vendor"
    for path in [WEB_DIR / "index.html", WEB_DIR / "graphiql.html", *STATIC_DIR.rglob("*")]:
        if path.is_file() and not path.is_relative_to(vendor):
            assert not REMOTE.search(path.read_text()), path


def test_files_are_package_data() -> None:
    """pyproject's package-data globs must cover every file the UI needs."""
    import tomllib

    pyproject = Path(__file__).parents[4] / "pyproject.toml"
    globs = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]["*"]
    for path in [WEB_DIR / "index.html", *STATIC_DIR.rglob("*")]:
        if path.is_file():
            assert any(path.match(g) for g in globs), f"{path} is not package data"


def test_plotly_is_served_from_the_plotly_package() -> None:
    response = client().get(PLOTLY_URL)
    assert response.status_code == 200
    assert "javascript" in response.headers["content-type"]
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert "window.Plotly = Plotly" in response.text
    # charts.js loads it by this URL (a script element, not an import the test above sees).
    assert f'"{PLOTLY_URL}"' in (STATIC_DIR / "js" / "charts.js").read_text()


def test_the_forms_probe_sizes_are_the_early_stopping_arithmetic() -> None:
    """views/submit.js warns of too-short find-peak probes from a table; it must hold what
    services/core/early_stopping.probe_queries computes."""
    from services.core.early_stopping import probe_queries
    from services.core.find_peak_search import DURATION_MARGIN

    source = (STATIC_DIR / "js/views/submit.js").read_text()
    table = re.search(r"const PROBE_QUERIES = \{([^}]*)\}", source)
    margin = re.search(r"const DURATION_MARGIN = ([\d.]+);", source)
    assert table is not None and margin is not None
    pairs = dict(re.findall(r"([\d.]+): (\d+)", table.group(1)))
    assert {float(p): int(q) for p, q in pairs.items()} == {
        float(p): probe_queries(float(p)) for p in ("50", "90", "95", "97", "99", "99.9")
    }
    assert float(margin.group(1)) == DURATION_MARGIN
