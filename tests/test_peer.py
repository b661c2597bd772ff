"""The redaction rule and the one cut, in one place."""

from __future__ import annotations

import httpx
import httpx2
import pytest

from amends_toolkit._json import JsonValue
from amends_toolkit._peer import (
    MAX_MODEL_TEXT,
    NO_SECRETS,
    ClientSecrets,
    Secrets,
    cut,
    cut_middle,
)


@pytest.mark.parametrize("module", [httpx, httpx2])
def test_a_clients_own_header_and_query_values_are_its_secrets(module: object) -> None:
    client = module.Client(  # type: ignore[attr-defined]
        headers={"Authorization": "Bearer tok-123456", "X-Api-Key": "key/with+slash"},
        params={"api_key": "q-7654321", "v": "2"},
    )
    secrets = Secrets.of_client(client)
    text = 'Bearer tok-123456 and tok-123456, {"k": "key\\/with+slash"}, q-7654321, v=2'
    assert secrets.redact(text) == '[redacted] and [redacted], {"k": "[redacted]"}, [redacted], v=2'
    value: JsonValue = {"content": [{"text": "tok-123456"}], "tok-123456": 1, "n": 3}
    assert secrets.redact_value(value) == {
        "content": [{"text": "[redacted]"}],
        "tok-123456": 1,
        "n": 3,
    }
    # What a client sets by itself (User-Agent, Accept...) is no secret.
    assert "python" in Secrets.of_client(client).redact(client.headers["user-agent"])
    client.close()


def test_a_client_with_nothing_of_its_own_has_no_secrets() -> None:
    with httpx.Client() as client:
        assert not Secrets.of_client(client)
    assert NO_SECRETS.redact("anything") == "anything"
    assert NO_SECRETS.longest == 0


@pytest.mark.parametrize("module", [httpx, httpx2])
def test_a_clients_secrets_follow_its_headers_and_query(module: object) -> None:
    client = module.Client(headers={"Authorization": "Bearer first-123456"})  # type: ignore[attr-defined]
    secrets = ClientSecrets(client)
    assert secrets.current().redact("first-123456") == "[redacted]"
    assert secrets.current() is secrets.current()  # read once while nothing changes
    client.headers["Authorization"] = "Bearer second-654321"
    assert secrets.current().redact("first-123456 second-654321") == "first-123456 [redacted]"
    client.headers = {"X-Key": "third-key-000"}
    assert secrets.current().redact("second-654321 third-key-000") == "second-654321 [redacted]"
    client.params = {"token": "query-777777"}
    assert secrets.current().redact("query-777777") == "[redacted]"
    client.close()


def test_the_address_the_host_gave_adds_its_query_and_password() -> None:
    client = httpx.Client()
    secrets = ClientSecrets(client, "https://me:pass-word-99@host/mcp?key=url-key-4444&x=12")
    text = "pass-word-99 url-key-4444 me host"
    assert secrets.current().redact(text) == "[redacted] [redacted] me host"
    assert not ClientSecrets(client, "https://host/mcp").current()
    client.close()


@pytest.mark.parametrize("module", [httpx, httpx2])
def test_a_request_adds_what_neither_its_source_nor_its_client_set(module: object) -> None:
    client = module.Client()  # type: ignore[attr-defined]
    request = module.Request(  # type: ignore[attr-defined]
        "POST",
        "https://host/mcp",
        headers={
            "X-Api-Key": "hook-key-12345",
            "X-Signed": "clé-signée-777".encode(),
            "Cookie": "sid=cookie-value-1; theme=dark-mode",
            "Mcp-Name": "search_orders",
            "Content-Type": "application/json",
        },
    )
    response = module.Response(200, request=request)  # type: ignore[attr-defined]
    secrets = ClientSecrets(client).current(response, sent=["search_orders"])
    text = "hook-key-12345 clé-signée-777 cookie-value-1 search_orders application/json host"
    # A cookie is what a server set (it may set any number): no secret of the host's.
    assert (
        secrets.redact(text)
        == "[redacted] [redacted] cookie-value-1 search_orders application/json host"
    )
    client.close()


@pytest.mark.parametrize("module", [httpx, httpx2])
def test_what_a_source_sent_on_one_request_is_not_taken_as_its_own_on_the_next(
    module: object,
) -> None:
    # The source's values are remembered from one request to the next (a source sends the same
    # ones again and again): a value it sent before and not now is a hook's when a request has it.
    client = module.Client()  # type: ignore[attr-defined]
    secrets = ClientSecrets(client)

    def answered(headers: dict[str, str], sent: list[str]) -> Secrets:
        request = module.Request("POST", "https://host/mcp", headers=headers)  # type: ignore[attr-defined]
        return secrets.current(module.Response(200, request=request), sent)  # type: ignore[attr-defined]

    assert not answered({"X-Tenant": "tenant-abc123"}, ["tenant-abc123"])
    later = answered({"X-Signature": "tenant-abc123", "Mcp-Name": "echo-tool"}, ["echo-tool"])
    assert later.redact("tenant-abc123 echo-tool") == "[redacted] echo-tool"
    client.close()


def test_a_sent_value_that_is_no_ascii_is_compared_as_text() -> None:
    # Only an ASCII value is compared as its bytes; any other (a lone surrogate from an input's
    # query value has no bytes at all) is compared once decoded, as before.
    client = httpx.Client()
    request = httpx.Request("GET", "https://host/items", headers={"X-Key": "key-added-9999"})
    secrets = ClientSecrets(client).current(httpx.Response(200, request=request), ["\ud800x", "é"])
    assert secrets.redact("key-added-9999") == "[redacted]"
    client.close()


def test_the_headers_a_client_sets_by_itself_are_no_secret() -> None:
    # Content-Length, Host, Accept...: a new value on each request, none of them the host's.
    client = httpx.Client()
    secrets = ClientSecrets(client)
    for length in range(100):
        request = httpx.Request("POST", f"https://host-{length}/mcp", content=b"x" * length)
        assert not secrets.current(httpx.Response(200, request=request))
    client.close()


def test_the_cut_keeps_the_limit() -> None:
    assert cut("  short  ") == "short"
    long = "a" * 1000
    assert len(cut(long)) == MAX_MODEL_TEXT
    assert cut(long).endswith("…")
    middle = cut_middle("x" * 1000 + " is not an integer", 60)
    assert len(middle) == 60
    assert middle.endswith(" is not an integer")


@pytest.mark.parametrize("module", [httpx, httpx2])
def test_what_auth_or_a_hook_put_on_a_request_before_a_redirect_is_a_secret(
    module: object,
) -> None:
    # Auth runs once, on the first request; a redirect to another origin drops its
    # Authorization, and each hop's hook may sign anew: every request before is read too (its
    # headers; the query of those after the first is the server's).
    client = module.Client()  # type: ignore[attr-defined]
    hops = [
        module.Request("GET", url, headers=headers)  # type: ignore[attr-defined]
        for url, headers in (
            ("https://a/x", {"Authorization": "Bearer sk-hop-one-1234"}),
            ("https://b/y?page=p-2", {"X-Sig": "sig-hop-two-5678"}),
            ("https://c/z?page=p-3", {}),
        )
    ]
    history = [module.Response(307, request=hop) for hop in hops[:2]]  # type: ignore[attr-defined]
    answer = module.Response(200, request=hops[2], history=history)  # type: ignore[attr-defined]
    secrets = ClientSecrets(client).current(answer)
    assert secrets.redact("sk-hop-one-1234 sig-hop-two-5678 p-2 p-3") == (
        "[redacted] [redacted] p-2 p-3"
    )
    client.close()
