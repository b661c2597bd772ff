"""``amends-toolkit credentials``: an admin's hand on the gateway's credential store.

``set CALLER SOURCE NAME`` keeps a caller's secret NAME for a per-caller source (the
``${caller:NAME}`` of its headers), read from stdin or, on a terminal, asked for without echo:
never from the command line (which others may read) nor from the configuration file.
``list`` says who has what (never a value), ``delete`` forgets one secret (or all of a caller's
for a source), ``revoke`` every credential of a caller (its secrets and its OAuth tokens).
A running gateway sees each change at the caller's next call. ``new-key`` prints a fresh key
for ``AMENDS_CREDENTIALS_KEY``.

CALLER is the caller's id, as the gateway knows it: ``key:alice`` for ``[auth] keys``'s
``alice``, ``oauth:<issuer> <sub>`` for a token's subject.
"""

from __future__ import annotations

import getpass
import sys
from typing import TYPE_CHECKING

from amends_toolkit.cli._config import ConfigError, caller_secret, load_config
from amends_toolkit.cli._credentials import MAX_VALUE_BYTES, StoreError, new_key, open_store

if TYPE_CHECKING:
    import argparse

    from amends_toolkit.cli._config import GatewayConfig
    from amends_toolkit.cli._output import Output

__all__ = ("credentials_command",)


async def credentials_command(options: argparse.Namespace, output: Output) -> int:
    """Run one ``credentials`` action; the exit status.

    Raises:
        ConfigError: the configuration, the store or the arguments are wrong (one line).
    """
    if options.action == "new-key":
        print(new_key())
        return 0
    config = load_config(options.config)
    if config.credentials is None:
        raise ConfigError(
            f'{config.path}: no [credentials] table: add one naming the store (store = "tokens.db")'
        )
    if options.action == "set":
        _check_secret(config, options.source, options.name)
        value = _read_value(f"{options.name} of {options.caller} for {options.source}: ")
    try:
        store = await open_store(config.credentials.store)
    except StoreError as error:
        raise ConfigError(f"{config.path}: [credentials] {error}") from None
    try:
        if options.action == "set":
            await store.put(options.caller, options.source, options.name, value)
            output.note(f"kept {options.name} of {options.caller} for {options.source}")
        elif options.action == "list":
            for caller, source, name in await store.entries():
                print(f"{caller}\t{source}\t{name}")
        elif options.action == "delete":
            count = await store.delete(options.caller, options.source, options.name)
            output.note(f"forgot {count} value(s) of {options.caller} for {options.source}")
            return 0 if count else 1
        else:
            count = await store.delete(options.caller)
            output.note(f"revoked {options.caller}: forgot {count} value(s)")
    except StoreError as error:
        raise ConfigError(str(error)) from None
    finally:
        await store.aclose()
    return 0


def _check_secret(config: GatewayConfig, source: str, name: str) -> None:
    """That ``name`` is a secret a per-caller source's headers take.

    Raises:
        ConfigError: it is not, naming those that are.
    """
    found = next((s for s in config.sources if s.name == source), None)
    if found is None or found.credentials != "per-caller":
        per_caller = [s.name for s in config.sources if s.credentials == "per-caller"]
        raise ConfigError(
            f"{config.path}: no per-caller source is named {source!r}; they are: "
            + (", ".join(per_caller) or "none")
        )
    names = sorted(
        {found_name for t in found.headers.values() if (found_name := _name_of(t)) is not None}
    )
    if name not in names:
        raise ConfigError(
            f"{config.path}: source {source!r} takes no ${{caller:{name}}}; its headers take: "
            + (", ".join(names) or "none")
        )


def _name_of(template: str) -> str | None:
    secret = caller_secret(template)
    return None if secret is None else secret[1]


def _read_value(prompt: str) -> str:
    """The value, asked for without echo on a terminal, else read from stdin (its one line, or
    all of it, less the newline that ends it).

    Raises:
        ConfigError: it is empty or longer than ``MAX_VALUE_BYTES``.
    """
    if sys.stdin.isatty():
        value = getpass.getpass(prompt)
    else:
        value = sys.stdin.read(MAX_VALUE_BYTES + 2).removesuffix("\n").removesuffix("\r")
    if not value:
        raise ConfigError("no value was given (write it to stdin, or type it when asked)")
    if len(value.encode()) > MAX_VALUE_BYTES:
        raise ConfigError(f"a value may be at most {MAX_VALUE_BYTES} bytes")
    return value
