"""A chat model for the LangChain examples that answers from a script, so they run offline:
LangChain's own fake chat model, taking tools as a real one does (``bind_tools``). In a program,
a real one: ``ChatOpenAI(model="gpt-5-mini")`` (``pip install langchain-openai``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolCall
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool


class ScriptedChatModel(GenericFakeChatModel):
    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self


def scripted(*calls: tuple[str, dict[str, Any]], then: str) -> ScriptedChatModel:
    """A model that makes these tool calls in one message, then answers ``then``."""
    made = [ToolCall(name=name, args=args, id=f"call_{n}") for n, (name, args) in enumerate(calls)]
    return ScriptedChatModel(messages=iter([AIMessage(content="", tool_calls=made), then]))
