"""Building the request an operation's input fills, by the rules that keep the model to its places.

What the model gives fills the places a template has for it and decides nothing else:

- a path value is percent-encoded (every character but the unreserved ones) and stays in its
  segment however a server decodes it: it may not be empty, nor hold ``/``, ``\\``, ``?`` or
  ``#`` or be ``.`` or ``..``, as they are or percent-encoded (see ``_styles.segment``), which a
  server would route to another operation; it has at most ``MAX_PATH_VALUE_LENGTH`` characters;
- a value is a string, a number or a boolean (``true``/``false``, numbers as JSON writes them),
  or a list or an object of them, written in its parameter's style (see ``_styles``);
- a query parameter's pairs are encoded by the client, as a form's are; an exploded object's keys
  name its pairs, and may not be the name of another query parameter of the template;
- a header may take a list, joined by ``", "``; a header value may hold only visible ASCII and
  inner spaces or tabs, so that no value adds or splits a header;
- a ``null`` or a missing property leaves its query parameter or header out; a path value is
  required;
- the body property, when given, is sent in the template's media type (see ``_bodies``), at
  most ``max_body_size`` bytes of it.
- no value holds NaN or Infinity (which are no JSON), or nests more than ``max_depth`` levels.

A value that breaks a rule raises :class:`InputRefused` with words written for the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from amends_toolkit._json import MAX_DEPTH, input_refusal
from amends_toolkit.protocols.http._bodies import encode_body
from amends_toolkit.protocols.http._response import is_json
from amends_toolkit.protocols.http._styles import InputRefused, header_text, path_text, query_pairs

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject
    from amends_toolkit.protocols.http._template import RequestTemplate

__all__ = ("MAX_BODY_SIZE", "InputRefused", "WireRequest", "build_request", "join_url")

MAX_BODY_SIZE = 16 * 1024 * 1024
"""How many bytes a request body may have unless the source says otherwise."""


@attrs.frozen(kw_only=True)
class WireRequest:
    """The parts of a request an input filled: the client sends it to ``url``."""

    method: str
    url: str
    query: list[tuple[str, str]]
    headers: list[tuple[str, str]]
    content: bytes | None


def join_url(base_url: str, path: str) -> str:
    """The base URL (which may have a path of its own) followed by an operation's path."""
    return base_url.rstrip("/") + path


def build_request(
    template: RequestTemplate,
    input: JsonObject,
    *,
    base_url: str,
    max_body_size: int = MAX_BODY_SIZE,
    max_depth: int = MAX_DEPTH,
) -> WireRequest:
    """The request ``input`` fills in ``template``, sent to ``base_url``.

    Raises:
        InputRefused: a value breaks one of the rules above; the message tells the model which.
    """
    problem = input_refusal(input, max_depth=max_depth)
    if problem is not None:
        raise InputRefused(problem)
    path = template.path
    query: list[tuple[str, str]] = list(template.query.items())
    headers: list[tuple[str, str]] = []
    query_names = {param.name for param in template.params.values() if param.location == "query"}
    query_names.update(template.query)
    for prop, param in template.params.items():
        value = input.get(prop)
        if param.location == "path":
            text = path_text(prop, param.name, value, param.style, param.explode)
            path = path.replace("{" + param.name + "}", text)
        elif value is None:
            continue
        elif param.location == "query":
            pairs = query_pairs(prop, param.name, value, param.style, param.explode)
            # An exploded object's keys name its pairs; none may pass for another parameter.
            taken = [name for name, _ in pairs if name != param.name and name in query_names]
            if taken:
                raise InputRefused(
                    f"'{prop}' may not hold the key '{taken[0]}', a parameter of its own."
                )
            query.extend(pairs)
        else:
            header = header_text(prop, value, param.explode)
            if header is not None:
                headers.append((param.name, header))
    content: bytes | None = None
    body = input.get(template.body) if template.body is not None else None
    # JSON sends a null it is given; a form or a file that is null is no body.
    if template.body in input and (
        body is not None or template.media_type is None or is_json(template.media_type)
    ):
        content, content_type = encode_body(template, input[template.body], max_size=max_body_size)
        headers.append(("Content-Type", content_type))
    return WireRequest(
        method=template.method,
        url=join_url(base_url, path),
        query=query,
        headers=headers,
        content=content,
    )
