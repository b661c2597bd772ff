"""Errors of tool sources, and the failure a model reads.

The exception tree::

    Exception
    ├── ToolSourceError              a source failed; names the source, holds a reason
    │   ├── AuthenticationError      the system refused the credentials the host's client carries
    │   │   └── ConnectionRequired   a gateway's caller has no credentials of its own for a
    │   │                            per-caller source yet (its message: where to connect)
    │   ├── NotFoundError            no such tool (or it is blocked)
    │   ├── InvalidInputError        the input does not fit the tool's parameters
    │   ├── CallFailedError          the tool ran and said it failed, or answered too much
    │   ├── UnavailableError         down, unreachable, rate limited, or too slow: retryable
    │   │   └── LimitExceeded        a caller went past a gateway profile's limit (its code:
    │   │                            UnavailableError; its message says which, and when to retry)
    │   ├── InvalidResponseError     the system answered something that cannot be read
    │   ├── UnsupportedError         the system asked for something the source does not do
    │   └── UnknownError             a defect: the source failed
    ├── Failure                      what a model reads of a failure, raised by presentations
    ├── NoApproval                   no person decided a call that needs approval (raised by an
    │   │                            ``approve``); the tool does not run. A person's no is not
    │   │                            one: ``approve`` gives ``False`` (``ApprovalDenied``)
    │   ├── ApprovalRequired         nobody could be asked
    │   └── ApprovalTimedOut         somebody was asked, and nobody decided in time
    ├── NameClash                    an assembly gave two tools one name (a host's mistake)
    └── ValueError
        └── CatalogError             stored catalog JSON that cannot be read back

``model_message`` is the only text of a ``ToolSourceError`` that a model reads: the description
of an ``InvalidInputError`` or a ``CallFailedError``, which is written for it, and only the
reason's default message for the others, whose description may name an address or a header.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from amends_toolkit._json import JsonValue

__all__ = (
    "ApprovalRequired",
    "ApprovalTimedOut",
    "AuthenticationError",
    "CallFailedError",
    "CatalogError",
    "Failure",
    "InvalidInputError",
    "InvalidResponseError",
    "NameClash",
    "NoApproval",
    "NotFoundError",
    "ToolSourceError",
    "UnavailableError",
    "UnknownError",
    "UnsupportedError",
    "sole",
)


class ToolSourceError(Exception):
    """A source failed to list or run its tools.

    Catch a reason by its class (``except at.AuthenticationError``). ``message`` is for the host
    and its logs and may name internals; ``model_message`` is what a model may read.
    """

    default_message: ClassVar[str] = "The tool source failed."
    retryable: ClassVar[bool] = False

    def __init__(self, *, source: str, message: str | None = None) -> None:
        self.source = source
        self.message = message if message is not None else self.default_message
        super().__init__(f"{source}: {self.message}")

    @property
    def reason(self) -> str:
        """The reason's name, as a Failure's ``code`` carries it."""
        return type(self).__name__

    @property
    def model_message(self) -> str:
        """What a model reads of this failure: never an address, a header or a credential."""
        return self.default_message

    def to_failure(self) -> Failure:
        """The failure a model reads of this error."""
        return Failure(code=self.reason, message=self.model_message, retryable=self.retryable)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.source, self.message, dict(self.__dict__)))


def _rebuild(
    cls: type[ToolSourceError], source: str, message: str, state: dict[str, object]
) -> ToolSourceError:
    error = cls.__new__(cls)
    ToolSourceError.__init__(error, source=source, message=message)
    error.__dict__.update(state)
    return error


class AuthenticationError(ToolSourceError):
    """The system refused the credentials (HTTP 401 or 403). Ask for a connection again."""

    default_message = "The source refused its credentials; the connection must be authorized again."


class ConnectionRequired(AuthenticationError):
    """A gateway's caller has no credentials of its own for a source whose credentials are per
    caller: it has not connected its account (OAuth), or no admin has set its secret. Not
    retryable: the caller must act first. ``message`` is written by the gateway, never by an
    upstream: it says what to do and, for OAuth, the gateway's own ``/connect/{source}``
    address (the only address a model reads, and one the caller is meant to open)."""

    default_message = "This caller has not connected its own account to this source yet."

    def __init__(self, *, source: str, message: str) -> None:
        super().__init__(source=source, message=message)

    @property
    def model_message(self) -> str:
        return self.message


class NotFoundError(ToolSourceError):
    """The tool does not exist, or the model may not see it."""

    default_message = "There is no such tool."


class InvalidInputError(ToolSourceError):
    """The input does not match the tool's parameters; the message tells the model what to fix."""

    default_message = "The input does not match the tool's parameters."

    @property
    def model_message(self) -> str:
        return self.message


class CallFailedError(ToolSourceError):
    """The tool ran and reported a failure, in words written for the model, or answered too much."""

    default_message = "The tool reported a failure."

    @property
    def model_message(self) -> str:
        return self.message


class UnavailableError(ToolSourceError):
    """The system is down, unreachable, rate limited or too slow. The only retryable reason.

    ``retry_after`` is the number of seconds the system asked to wait, when it said.
    """

    default_message = "The tool source is unavailable right now; try again later."
    retryable = True

    def __init__(
        self, *, source: str, message: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(source=source, message=message)
        self.retry_after = retry_after


class LimitExceeded(UnavailableError):
    """A caller went past a limit of the gateway's profile that serves it (calls per minute,
    calls in flight): its call reached no source. A model reads it as an ``UnavailableError``
    (retryable) whose message, written by the gateway, names the limit and ``retry_after``."""

    default_message = "This caller went past its limit of calls; try again later."

    def __init__(self, *, source: str, message: str, retry_after: float) -> None:
        super().__init__(source=source, message=message, retry_after=retry_after)

    @property
    def reason(self) -> str:
        return UnavailableError.__name__

    @property
    def model_message(self) -> str:
        return self.message


class InvalidResponseError(ToolSourceError):
    """The system answered something that could not be read as an answer."""

    default_message = "The tool source gave an answer that could not be read."


class UnsupportedError(ToolSourceError):
    """The system asked for something the source does not do (such as input from a person)."""

    default_message = "The tool asked for something this toolkit does not support."


class UnknownError(ToolSourceError):
    """A defect in a source: logged with its traceback, and read by the model as a failure."""

    default_message = "The tool source failed."


REASONS: Mapping[str, type[ToolSourceError]] = {
    cls.__name__: cls
    for cls in (
        AuthenticationError,
        NotFoundError,
        InvalidInputError,
        CallFailedError,
        UnavailableError,
        InvalidResponseError,
        UnsupportedError,
        UnknownError,
    )
}


class Failure(Exception):
    """What a model reads of a failed call: ``{"isFailure": true, code, message, retryable}``.

    A presentation raises it (``at.presentation.call``); a toolkit returns its JSON.
    """

    def __init__(self, *, code: str, message: str, retryable: bool = False) -> None:
        self.code = code
        self.message = message
        self.retryable = retryable
        super().__init__(f"{code}: {message}")

    def to_json(self) -> dict[str, JsonValue]:
        """The JSON a model reads."""
        return {
            "isFailure": True,
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
        }

    @classmethod
    def from_json(cls, value: JsonValue) -> Failure | None:
        """The failure this JSON is, or ``None`` when it is no failure."""
        if not isinstance(value, dict) or value.get("isFailure") is not True:
            return None
        code, message, retryable = value.get("code"), value.get("message"), value.get("retryable")
        if not isinstance(code, str) or not isinstance(message, str):
            return None
        return cls(code=code, message=message, retryable=retryable is True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Failure):
            return NotImplemented
        return (self.code, self.message, self.retryable) == (
            other.code,
            other.message,
            other.retryable,
        )

    def __hash__(self) -> int:
        return hash((self.code, self.message, self.retryable))

    def __repr__(self) -> str:
        return f"Failure(code={self.code!r}, message={self.message!r}, retryable={self.retryable})"

    def __reduce__(self) -> tuple[object, ...]:
        return (_failure, (self.code, self.message, self.retryable))


def _failure(code: str, message: str, retryable: bool) -> Failure:
    return Failure(code=code, message=message, retryable=retryable)


class NoApproval(Exception):
    """No person decided a call that needs approval, so it did not run: an ``approve`` (the
    host's, or one of the library's that asks a client or an approver) raises it instead of
    giving ``True`` or ``False``, which say what a person decided.

    The model reads :meth:`to_failure` (its code is the class's name); ``message`` is for the
    host and its logs (such as why nobody could be asked).
    """

    default_message: ClassVar[str] = "Nobody decided this call, so it did not run."

    def __init__(self, message: str | None = None) -> None:
        self.message = message if message is not None else self.default_message
        super().__init__(self.message)

    @property
    def code(self) -> str:
        """The Failure's ``code``: the class's name."""
        return type(self).__name__

    def to_failure(self) -> Failure:
        """What the model reads: never the host's ``message``."""
        return Failure(code=self.code, message=self.default_message, retryable=False)


class ApprovalRequired(NoApproval):
    """Nobody could be asked to approve the call (no client that can be asked, no approver)."""

    default_message = (
        "This tool needs a person's approval and nobody could be asked, so it did not run."
    )


class ApprovalTimedOut(NoApproval):
    """Somebody was asked to approve the call, and nobody decided in time."""

    default_message = (
        "This call waited for a person's approval and nobody decided in time, so it did not"
        " run. Ask the user to approve it, then call it again."
    )


class NameClash(Exception):
    """Tools of an assembly that would share one model-facing name; holds every clash at once.

    ``clashes`` maps each clashing name to the ``(source, tool)`` pairs that would take it. Fix it
    by renaming a source, blocking one of the tools, or raising ``max_name_length``.
    """

    def __init__(self, clashes: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        self.clashes = {name: tuple(pairs) for name, pairs in clashes.items()}
        lines = [
            f"{name!r} <- " + ", ".join(f"{source}/{tool}" for source, tool in pairs)
            for name, pairs in self.clashes.items()
        ]
        super().__init__(
            f"{len(self.clashes)} tool name(s) clash; rename a source or block a tool: "
            + "; ".join(lines)
        )


class CatalogError(ValueError):
    """Catalog JSON that cannot be read back: names the key or value at fault."""


def sole(error: BaseException) -> BaseException:
    """The one error inside a task group's group (and the groups of one it holds), else
    ``error``: what a person or a log line is told of."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
