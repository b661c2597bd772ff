"""The token file of an ``auth = "oauth"`` source, and the provider built over it."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from amends_toolkit.cli._oauth import FileTokenStorage, oauth_provider

pytestmark = pytest.mark.anyio


async def test_tokens_and_the_client_survive_in_a_file_only_its_owner_reads(tmp_path: Path) -> None:
    path = tmp_path / "tokens" / "remote.json"
    storage = FileTokenStorage(path)
    assert await storage.get_tokens() is None
    assert await storage.get_client_info() is None
    await storage.set_client_info(
        OAuthClientInformationFull(
            client_id="c-1", redirect_uris=[AnyUrl("http://127.0.0.1:8976/cb")]
        )
    )
    await storage.set_tokens(OAuthToken(access_token="a-1", refresh_token="r-1", expires_in=60))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = FileTokenStorage(path)
    tokens = await again.get_tokens()
    client = await again.get_client_info()
    assert tokens is not None
    assert (tokens.access_token, tokens.refresh_token) == ("a-1", "r-1")
    assert client is not None
    assert client.client_id == "c-1"


async def test_a_broken_token_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=f"the token file {path} cannot be read"):
        await FileTokenStorage(path).get_tokens()


async def test_the_provider_is_the_sdks_and_an_httpx2_auth(tmp_path: Path) -> None:
    async def redirect(url: str) -> None:
        raise AssertionError("no authorization in this test")

    async def callback() -> AuthorizationCodeResult:
        raise AssertionError("no authorization in this test")

    provider = oauth_provider(
        server_url="https://mcp.example.com/mcp",
        storage=FileTokenStorage(tmp_path / "t.json"),
        redirect_uri="http://127.0.0.1:8976/callback",
        redirect_handler=redirect,
        callback_handler=callback,
    )
    assert isinstance(provider, OAuthClientProvider)
    assert isinstance(provider, httpx2.Auth)
