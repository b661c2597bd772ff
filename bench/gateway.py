"""The gateway (``amends-toolkit serve``) against the official SDK's own server serving the same
tool directly: ``tools/call`` in the stateless 2026-07-28 protocol from 1, 64 and 512 clients at
once, each sending its next call when the last is answered, over one ``httpx2`` client.

Both are processes of their own on loopback: the SDK's server (``_mcp_bench_server.py``, ``echo``)
and the gateway with that server as its one source (``bench__echo``: the gateway's session per
call, the input check, the actor and its own call to the server behind it). The ratio is the
gateway's calls per second over the server's own, measured in the same rounds; and a second
gateway, with ``[auth] type = "keys"``, over the first (``type = "none"``): what a key costs a call.

Two more gateways, with ``[auth] type = "oauth"``, check JWT access tokens (RS256, with ``iss``,
``aud``, ``sub``, ``exp`` and a required scope) against an issuer on loopback
(``_oauth_issuer.py``: its metadata and JWKS, the key pair made here); the bench signs the tokens
itself, before the rounds. Over the open gateway, per call: on one, a token seen for the first
time (a new one every call: a signature check each); on the other, one remembered (one token for
the whole run: the gateway's cache of verified tokens, which forgets a token after a minute or
4,096 newer ones, so it is checked again about once a minute). A check is small against a call's
other work, and calls per second on a busy 2-core machine swing by more, so the figure that
tells is the servers' CPU per call (every server process's: all idle but the subject's gateway
and the SDK's server behind it) over the open gateway's in the same rounds
(:meth:`~bench._harness.Figure.server_cpu_against`, in the report's targets); and the check
alone, timed in process (:func:`checks`), over that call's CPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import httpx
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.requests import Request

from amends_toolkit.cli._oauth_resource import OAuthResource
from bench._harness import (
    WARM_CALLERS,
    Call,
    Figure,
    Measure,
    Server,
    ServerClock,
    compare,
    free_port,
    pool_limits,
    running,
    server_process,
    slices_of,
)
from bench.mcp_client import META, MODERN_HEADERS

SRC = str(Path(__file__).resolve().parents[1] / "src")
CALLS = {1: 150, 64: 960, 512: 1_536}
KEY = secrets.token_urlsafe(32)
KEYS = '[auth]\ntype = "keys"\nkeys = { bench = "${BENCH_KEY}", other = "${OTHER_KEY}" }\n'
SCOPE = "mcp:tools"
OPEN = "through the gateway"
KEYED = "through the gateway, with a key"
FIRST_SEEN = "through the gateway, a JWT first seen"
REMEMBERED = "through the gateway, a JWT remembered"


@contextlib.contextmanager
def gateway_process(upstream: int, auth: str = '[auth]\ntype = "none"\n') -> Iterator[Server]:
    """``amends-toolkit serve`` over the server at ``upstream``, with this ``[auth]``; yields the
    gateway's port and process."""
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "gateway.toml"
        config.write_text(
            f'[[sources]]\nname = "bench"\nmcp = "http://127.0.0.1:{upstream}/mcp"\n'
            f'[policy]\nallow = ["bench__*"]\n[serve]\nport = {port}\n{auth}'
        )
        with running(
            [sys.executable, "-m", "amends_toolkit", "serve", str(config)],
            ready=lambda: serves(port),
            what="the gateway",
            env={
                **os.environ,
                "PYTHONPATH": SRC,
                "BENCH_KEY": KEY,
                "OTHER_KEY": secrets.token_urlsafe(32),
            },
            quiet=True,
        ) as pid:
            yield Server(port=port, pid=pid)


def serves(port: int) -> bool:
    """Whether the gateway on ``port`` says it is ready."""
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
    except httpx2.TransportError:
        return False


class Issuer:
    """The bench's authorization server: a key pair, its public half served by
    ``_oauth_issuer.py``, and the tokens it signs."""

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._minted = 0

    def jwk(self) -> str:
        public = jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        return json.dumps({**public, "kid": "bench", "alg": "RS256", "use": "sig"})

    def tokens(self, count: int, *, issuer: str, audience: str) -> list[str]:
        """``count`` distinct access tokens, valid for an hour."""
        now = int(time.time())
        tokens = []
        for _ in range(count):
            self._minted += 1
            claims = {
                "iss": issuer,
                "aud": audience,
                "sub": "bench",
                "client_id": "bench",
                "scope": SCOPE,
                "iat": now,
                "exp": now + 3_600,
                "jti": str(self._minted),
            }
            tokens.append(
                jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": "bench"})
            )
        return tokens


def servers_clock(servers: Sequence[Server]) -> ServerClock | None:
    """The CPU seconds all of ``servers`` have spent so far (the SDK's server and every gateway:
    those a subject does not call are idle in its turns), or ``None`` without such clocks."""
    clocks = [server.cpu_clock() for server in servers]
    if None in clocks:
        return None
    return lambda: sum(clock() for clock in clocks if clock is not None)


def oauth(issuer: str) -> str:
    return f'[auth]\ntype = "oauth"\nissuer = "{issuer}"\nscopes = ["{SCOPE}"]\n'


def calls_made(calls: int, concurrency: int, rounds: int) -> int:
    """How many calls :func:`~bench._harness.compare` makes of one subject: its warm-up and its
    rounds' slices (so that every call of the first-seen subject has a token of its own)."""
    warm = min(concurrency, WARM_CALLERS)
    slices = slices_of(calls, concurrency)
    per_slice = max(1, calls // slices // concurrency) * concurrency
    return max(1, max(warm, calls // 10) // warm) * warm + rounds * slices * per_slice


def first_seen(tokens: list[str]) -> Callable[[], str]:
    """Each token of ``tokens`` once, in turn."""
    remaining = iter(tokens)

    def token() -> str:
        try:
            return next(remaining)
        except StopIteration:
            raise SystemExit("the bench minted too few tokens") from None

    return token


def caller(
    client: httpx2.AsyncClient,
    url: str,
    tool: str,
    credential: Callable[[], str] | None = None,
) -> Call:
    """A ``tools/call`` of ``tool`` at ``url``, with ``Authorization: Bearer`` the
    ``credential`` gives for each call, if any."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": "hello"}, "_meta": META},
        }
    ).encode()
    headers = {**MODERN_HEADERS, "Mcp-Name": tool, "Content-Type": "application/json"}

    async def call() -> object:
        sent = headers
        if credential is not None:
            sent = {**headers, "Authorization": f"Bearer {credential()}"}
        response = await client.post(url, content=body, headers=sent)
        if response.status_code != 200 or b'"isError":true' in response.content:
            raise SystemExit(f"a call failed: {response.status_code} {response.text[:200]}")
        return response

    return call


async def run(*, scale: float, rounds: int) -> Sequence[Figure]:
    figures: list[Figure] = []
    signer = Issuer()
    with (
        server_process("_mcp_bench_server.py") as upstream,
        server_process("_oauth_issuer.py", signer.jwk()) as issuer_server,
        gateway_process(upstream.port) as open_gateway,
        gateway_process(upstream.port, KEYS) as keyed,
    ):
        issuer = f"http://127.0.0.1:{issuer_server.port}"
        # A gateway each: at one caller a subject's turn is 4 calls, and one that follows
        # another's turn on the same process finds it warm (0.86x the CPU of one that does not).
        with (
            gateway_process(upstream.port, oauth(issuer)) as oauthed,
            gateway_process(upstream.port, oauth(issuer)) as remembering,
        ):
            oauth_url = f"http://127.0.0.1:{oauthed.port}/mcp"
            remembering_url = f"http://127.0.0.1:{remembering.port}/mcp"
            server = servers_clock([upstream, open_gateway, keyed, oauthed, remembering])
            # One token for the whole run: after its first call, the gateway remembers it.
            (remembered,) = signer.tokens(1, issuer=issuer, audience=remembering_url)
            for concurrency, calls in CALLS.items():
                scaled = int(calls * scale)
                fresh = signer.tokens(
                    calls_made(scaled, concurrency, rounds), issuer=issuer, audience=oauth_url
                )
                async with httpx2.AsyncClient(
                    limits=pool_limits(httpx2.Limits, concurrency),
                    timeout=60,
                ) as client:
                    group = f"gateway, {concurrency} client(s) at a time"
                    print(f"  {group}", flush=True)
                    direct = "the SDK's server directly"
                    gateway = f"http://127.0.0.1:{open_gateway.port}/mcp"
                    figures += await compare(
                        group,
                        [
                            (
                                direct,
                                caller(client, f"http://127.0.0.1:{upstream.port}/mcp", "echo"),
                                "",
                            ),
                            (OPEN, caller(client, gateway, "bench__echo"), direct),
                            (
                                KEYED,
                                caller(
                                    client,
                                    f"http://127.0.0.1:{keyed.port}/mcp",
                                    "bench__echo",
                                    lambda: KEY,
                                ),
                                OPEN,
                            ),
                            (
                                FIRST_SEEN,
                                caller(client, oauth_url, "bench__echo", first_seen(fresh)),
                                OPEN,
                            ),
                            (
                                REMEMBERED,
                                caller(client, remembering_url, "bench__echo", lambda: remembered),
                                OPEN,
                            ),
                        ],
                        calls=scaled,
                        concurrency=concurrency,
                        rounds=rounds,
                        server=server,
                    )
    return figures


CHECKS = 400
"""Tokens a round of :func:`checks` checks, each for the first time."""


async def checks(figures: Sequence[Figure], *, rounds: int) -> list[Measure]:
    """The gateway's own check of a token (``OAuthResource.authenticate``, in this process: the
    signature, the claims, the cache), first seen and remembered, in CPU time per check (the
    medians of ``rounds``), each over the servers' CPU per call through the open gateway at one
    client (``figures``): the share of a call a check is, which the side-by-side figures cannot
    resolve on a busy machine (their rounds swing by more)."""
    signer = Issuer()
    issuer, audience = "http://127.0.0.1:1", "http://127.0.0.1:2/mcp"
    jwks = {"keys": [json.loads(signer.jwk())]}

    def issuer_answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/jwks":
            return httpx.Response(200, json=jwks)
        return httpx.Response(200, json={"issuer": issuer, "jwks_uri": f"{issuer}/jwks"})

    def request(token: str) -> Request:
        header = (b"authorization", f"Bearer {token}".encode())
        return Request({"type": "http", "method": "POST", "path": "/mcp", "headers": [header]})

    async with httpx.AsyncClient(transport=httpx.MockTransport(issuer_answer)) as client:
        resource = OAuthResource(issuer=issuer, resource=audience, client=client)
        (remembered,) = signer.tokens(1, issuer=issuer, audience=audience)
        await resource.authenticate(request(remembered))  # the keys fetched, the token kept
        first: list[float] = []
        again: list[float] = []
        for _ in range(rounds):
            fresh = [request(t) for t in signer.tokens(CHECKS, issuer=issuer, audience=audience)]
            kept = [request(remembered)] * CHECKS
            for requests, times in ((fresh, first), (kept, again)):
                started = time.process_time()
                for each in requests:
                    await resource.authenticate(each)
                times.append((time.process_time() - started) / CHECKS * 1e6)
    call = next(
        (f for f in figures if f.subject == OPEN and f.group.startswith("gateway, 1 ")),
        None,
    )
    per_call = 0.0
    if call is not None and call.server_cpu_share:
        per_call = call.server_cpu_share / call.calls_per_second * 1e6
    baseline = "the servers' CPU per call through the open gateway, 1 client" if per_call else ""
    return [
        Measure(
            group="the gateway's OAuth check, in process",
            subject=subject,
            value=statistics.median(times),
            unit="µs",
            baseline=baseline,
            baseline_value=per_call,
        )
        for subject, times in (("a JWT first seen", first), ("a JWT remembered", again))
    ]
