"""The issuer of the gateway's OAuth benchmark: RFC 8414 metadata and a JWKS of the one public key
it is given, nothing else (the bench signs its tokens itself). Run as
``python _oauth_issuer.py PORT JWK``, the key a JSON object."""

from __future__ import annotations

import json
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

PORT = int(sys.argv[1])
ISSUER = f"http://127.0.0.1:{PORT}"
KEYS = {"keys": [json.loads(sys.argv[2])]}


async def metadata(request: Request) -> JSONResponse:
    return JSONResponse({"issuer": ISSUER, "jwks_uri": f"{ISSUER}/jwks"})


async def jwks(request: Request) -> JSONResponse:
    return JSONResponse(KEYS)


app = Starlette(
    routes=[
        Route("/.well-known/oauth-authorization-server", metadata),
        Route("/jwks", jwks),
    ]
)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
