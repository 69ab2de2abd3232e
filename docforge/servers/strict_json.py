"""JSON bodies parsed strictly, for every FastAPI app docforge serves (the API and the sidecars).

`StrictJSONRoute` parses bodies with pipeline.json_strict.loads: `NaN`,
`Infinity` (no field of ours wants one, and a validation error that quotes one
cannot be written back as JSON) and a body nested past the parser's depth are
FastAPI's 422 "JSON decode error", naming what was wrong. `install` sets it on an
app, with validation errors written as ASCII JSON: an error may quote text that
has no UTF-8 form (a lone surrogate from a "\\ud800" escape), which must not
turn a 422 into a 500.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from pipeline.json_strict import loads


class _StrictRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = loads(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """An APIRoute whose request body is parsed by `loads` (set as `app.router.route_class`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(_StrictRequest(request.scope, request.receive))

        return strict


class AsciiJSON(JSONResponse):
    """JSON with every non-ASCII character escaped (a lone surrogate included) and no NaN."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def install(app: FastAPI) -> None:
    """Strict bodies for the routes added from now on, and 422s that are always valid JSON."""
    app.router.route_class = StrictJSONRoute

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return AsciiJSON({"detail": jsonable_encoder(exc.errors())}, status_code=422)
