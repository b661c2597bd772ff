"""A real authorization server for tests: node's ``oidc-provider`` (``oidc/provider.mjs``).

Installed into ``oidc/node_modules`` with ``npm ci`` from the committed lock on first use (a
stamp, written after a whole install, says it is done); skipped where node or npm is missing,
unless ``AMENDS_REQUIRE_OIDC`` is set (``.ci/run`` sets it).
"""

from __future__ import annotations

import base64
import fcntl
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).with_name("oidc")
TIMEOUT = 60.0
"""Seconds a test's request may take, on a busy machine."""
SECRET = "machine-secret-0123456789abcdef0123456789abcdef"
"""The secret of the provider's clients ``machine`` and ``short``."""


def install() -> None:
    """``npm ci`` in ``oidc/`` unless the committed lock is installed already (one test run at a
    time installs: the others wait on its file lock)."""
    lock = HERE / "package-lock.json"
    stamp = HERE / "node_modules" / ".installed.lock"
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("AMENDS_REQUIRE_OIDC"):
            pytest.fail("node and npm are needed for the OAuth tests")
        pytest.skip("node and npm are not installed: the OAuth tests need oidc-provider")
    with (HERE / ".installing").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_bytes() == lock.read_bytes():
            return
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE, check=True
        )
        stamp.write_bytes(lock.read_bytes())


class AuthServer:
    """``node provider.mjs``, started; :attr:`issuer` once it printed its readiness line."""

    def __init__(self) -> None:
        install()
        self.process = subprocess.Popen(
            ["node", "provider.mjs"],
            cwd=HERE,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.errors: list[str] = []
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # the readiness line, or "" when it died
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        if not line.startswith("READY "):
            self.stop()
            raise AssertionError("oidc-provider did not start:\n" + "\n".join(self.errors))
        self.issuer = line.split()[1]

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.errors.append(line.rstrip("\n"))

    def token(self, resource: str, *, scope: str = "mcp:tools", client: str = "machine") -> str:
        """A JWT access token for ``resource`` by the client credentials grant."""
        basic = base64.b64encode(f"{client}:{SECRET}".encode()).decode()
        answer = httpx.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            headers={"Authorization": f"Basic {basic}"},
            timeout=TIMEOUT,
        )
        answer.raise_for_status()
        token: str = answer.json()["access_token"]
        return token

    def jwks(self) -> dict[str, object]:
        answer = httpx.get(f"{self.issuer}/jwks", timeout=TIMEOUT)
        answer.raise_for_status()
        keys: dict[str, object] = answer.json()
        return keys

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self._drainer.join(5)
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self.process.stdout.close()
        self.process.stderr.close()


@pytest.fixture(scope="session")
def auth_server() -> Iterator[AuthServer]:
    server = AuthServer()
    try:
        yield server
    finally:
        server.stop()
