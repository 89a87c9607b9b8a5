"""Each workload's section of the run page, served from its own folder (Workload.web_view):
the page asks which workloads have one, then imports the module of the run's workload, so
a new workload brings its section without a line here or in static/."""

from __future__ import annotations

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, JSONResponse

from services.workloads.surfaces import web_view_file, web_view_names

VIEWS_URL = "/workloads/views"
VIEW_URL = "/workloads/{name}/view.js"


def mount_workload_views(app: FastAPI, headers: dict[str, str]) -> None:
    """``VIEWS_URL``: {workload: its module's URL}; ``VIEW_URL``: the module itself.
    ``headers`` are the page's own (its content security policy)."""

    @app.get(VIEWS_URL, include_in_schema=False)
    async def views() -> JSONResponse:
        urls = {name: VIEW_URL.format(name=name) for name in web_view_names()}
        return JSONResponse(urls, headers={**headers, "Cache-Control": "no-cache"})

    @app.get(VIEW_URL, include_in_schema=False)
    async def view(name: str) -> FileResponse:
        found = web_view_file(name)
        if found is None:
            raise HTTPException(status_code=404, detail=f"workload {name!r} has no web view")
        return FileResponse(
            found,
            media_type="text/javascript",
            headers={**headers, "Cache-Control": "no-cache"},
        )
