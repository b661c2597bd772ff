"""A toolkit in OpenAI's and Anthropic's formats, and the calls of a model's reply run in a
session. The replies are written here as each API sends them, so no key is needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from anthropic.types import Message
from openai.types.chat import ChatCompletionMessage

import amends_toolkit as at

SERVER = Path(__file__).with_name("tasks_server.py")


async def main() -> None:
    source = at.mcp.stdio(name="tasks", command=sys.executable, args=[str(SERVER)])
    async with at.Runtime() as runtime:
        tasks = await runtime.spawn(source)
        toolkit = at.assemble([at.Member(tasks, await tasks.discover())], lambda s, d: "allow")
        async with at.Session(toolkit, approve=lambda name, input: False) as session:
            # --8<-- [start:openai]
            tools = at.adapters.openai_tools(toolkit)  # Chat Completions function tools
            print(json.dumps(tools[0]))
            # completion = await openai.chat.completions.create(model=..., messages=messages,
            #                                                   tools=tools)
            # message = completion.choices[0].message
            message = ChatCompletionMessage.model_validate(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "tasks__list_tasks", "arguments": "{}"},
                        }
                    ],
                }
            )
            messages = [
                message.model_dump(exclude_none=True),
                *await at.adapters.run_openai_tool_calls(session, message.tool_calls),
            ]
            print(json.dumps(messages[1]))
            # --8<-- [end:openai]

            # --8<-- [start:anthropic]
            tools = at.adapters.anthropic_tools(toolkit)  # {"name", "description", "input_schema"}
            # reply = await anthropic.messages.create(model=..., messages=..., tools=tools, ...)
            reply = Message.model_validate(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude",
                    "stop_reason": "tool_use",
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "tasks__delete_task",
                            "input": {"task_id": 9},
                        }
                    ],
                }
            )
            answer = await at.adapters.run_anthropic_tool_uses(session, reply.content)
            print(json.dumps(answer))  # the user message of tool_result blocks to send next
            # --8<-- [end:anthropic]


if __name__ == "__main__":
    anyio.run(main)
