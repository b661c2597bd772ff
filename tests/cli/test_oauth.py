"""The token file of an ``auth = "oauth"`` source, and the provider built over it."""

from __future__ import annotations

import errno
import os
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


async def test_a_stale_new_file_lends_the_token_file_neither_its_mode_nor_its_contents(
    tmp_path: Path,
) -> None:
    path = tmp_path / "remote.json"
    stale = tmp_path / "remote.json.new"
    stale.write_text("stale")
    stale.chmod(0o644)
    await FileTokenStorage(path).set_tokens(OAuthToken(access_token="a-1"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stale.read_text() == "stale"
    assert sorted(os.listdir(tmp_path)) == ["remote.json", "remote.json.new"]


async def test_the_mode_is_0600_whatever_the_umask_and_the_old_files_mode(tmp_path: Path) -> None:
    path = tmp_path / "remote.json"
    path.write_text("{}")
    path.chmod(0o666)
    old = os.umask(0)
    try:
        await FileTokenStorage(path).set_tokens(OAuthToken(access_token="a-1"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("linked", ["remote.json", "remote.json.new"])
async def test_a_link_at_the_token_file_or_beside_it_never_reaches_its_target(
    tmp_path: Path, linked: str
) -> None:
    target = tmp_path / "elsewhere"
    target.write_text('{"tokens": {"access_token": "not-mine", "token_type": "Bearer"}}')
    target.chmod(0o644)
    (tmp_path / linked).symlink_to(target)
    storage = FileTokenStorage(tmp_path / "remote.json")
    if linked == "remote.json":
        with pytest.raises(ValueError, match="is a symbolic link: name the file itself"):
            await storage.get_tokens()
        with pytest.raises(ValueError, match="is a symbolic link"):
            await storage.set_tokens(OAuthToken(access_token="a-1"))
    else:
        await storage.set_tokens(OAuthToken(access_token="a-1"))
        assert not (tmp_path / "remote.json").is_symlink()
        assert stat.S_IMODE((tmp_path / "remote.json").stat().st_mode) == 0o600
    assert "not-mine" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


async def test_a_fifo_at_the_token_file_is_refused_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "remote.json"
    os.mkfifo(path)
    with pytest.raises(ValueError, match="is not a regular file"):
        await FileTokenStorage(path).get_tokens()


async def test_a_directory_anyone_may_write_is_refused_and_a_sticky_one_is_not(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ValueError, match="may be written by anyone"):
        await FileTokenStorage(shared / "remote.json").set_tokens(OAuthToken(access_token="a"))
    assert os.listdir(shared) == []
    shared.chmod(0o1777)
    await FileTokenStorage(shared / "remote.json").set_tokens(OAuthToken(access_token="a"))
    assert stat.S_IMODE((shared / "remote.json").stat().st_mode) == 0o600


async def test_a_directory_at_the_token_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "remote.json"
    path.mkdir()
    with pytest.raises(ValueError, match="is not a regular file"):
        await FileTokenStorage(path).set_tokens(OAuthToken(access_token="a-1"))
    assert sorted(os.listdir(tmp_path)) == ["remote.json"]


async def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "remote.json"
    storage = FileTokenStorage(path)
    await storage.set_tokens(OAuthToken(access_token="a-1"))

    def full(source: object, target: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space left"):
        await storage.set_tokens(OAuthToken(access_token="a-2"))
    monkeypatch.undo()
    tokens = await storage.get_tokens()
    assert tokens is not None
    assert tokens.access_token == "a-1"
    assert sorted(os.listdir(tmp_path)) == ["remote.json"]
