"""The `openai-chat` protocol: an OpenAI-compatible chat-completions server as an agent.

vLLM, llama.cpp's server, Ollama and a LiteLLM proxy all serve
``POST {endpoint}/chat/completions``. One call is one completion:

- the request names the manifest's `model`, its `system` prompt and the
  user message its `template` renders from the input (`agents._template`);
  the output schema of the capability's active suite (what the answer is
  graded on, and what a live call's contract checks) is the
  `response_format` (`json_schema`, with the manifest's `strict`); without
  one (no suite given) the capability's shipped output schema
  (`schema/capabilities/`); a capability with neither asks for `json_object`.
  Live and eval calls pass the same suite's schema, so they stay identical
  on the wire; with the manifest's `stream: true` every call (live or eval,
  whether or not its caller streams) asks `stream: true` and is read as
  events (agents._chat_stream), so that too is the same on the wire;
- the output is `choices[0].message.content`, read with holon's exact JSON
  reader and its bounds (depth, numbers, surrogates), as any agent body;
- the response's `model` must be the manifest's (`model_identity: exact`)
  or one of its `model_aliases` (`alias`): another model answering is
  `invalid_response`, since the record describes the configured one;
- `usage.prompt_tokens` / `completion_tokens` are the tokens priced; an
  answer without usage, from an agent priced per token, is
  `invalid_response` (it could not be priced, so a cost cap could not bite);
- a `refusal` is the model declining: `agent_error`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from agents._identity import Identity, IdentityError
from agents._manifest import Manifest, OpenAIChatSpec
from agents._outcome import OutcomeCode, Usage
from agents._reader import BodyError, parse_json
from agents._template import render_template
from schema import load_schema, schema_path
from schema.jsontext import JSONValue, dumps

__all__ = [
    "CHAT_PATH",
    "MODELS_PATH",
    "ChatFailure",
    "chat_request",
    "models_identity",
    "read_chat",
]

CHAT_PATH = "/chat/completions"
MODELS_PATH = "/models"
_MAX_COUNT = 2**63 - 1
_SHOWN = 120
# Keys of a shipped schema that describe the document, not the value (OpenAI's
# strict mode refuses some of them).
_DOCUMENT_KEYS = ("$schema", "$id", "examples")


class ChatFailure(Exception):
    """A completion that is not an acceptable answer; `code` is its outcome code."""

    def __init__(self, code: OutcomeCode, detail: str) -> None:
        super().__init__(detail)
        self.code: OutcomeCode = code


def _spec(agent: Manifest) -> OpenAIChatSpec:
    if agent.openai_chat is None:
        raise ValueError(f"{agent.id} has no openai_chat section")
    return agent.openai_chat


def response_format(
    capability: str, strict: bool, output_schema: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`json_schema` from `output_schema` (the active suite's), else from the capability's
    shipped output schema, else `json_object`. Never mutate it (the shipped one is cached)."""
    if output_schema is None:
        return _shipped_format(capability, strict)
    return _json_schema(capability, output_schema, strict)


@lru_cache(maxsize=256)
def _shipped_format(capability: str, strict: bool) -> dict[str, Any]:
    """Cached: the schemas ship with holon and do not change in a process."""
    name = f"capabilities/{capability}.output"
    if "/" in capability or not schema_path(name).is_file():
        return {"type": "json_object"}
    return _json_schema(capability, load_schema(name), strict)


def _json_schema(capability: str, schema: dict[str, Any], strict: bool) -> dict[str, Any]:
    described = {k: v for k, v in schema.items() if k not in _DOCUMENT_KEYS}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": capability.replace(".", "_"),
            "schema": described,
            "strict": strict,
        },
    }


def chat_request(
    agent: Manifest,
    capability: str,
    input: JSONValue,
    output_schema: dict[str, Any] | None = None,
) -> bytes:
    """The chat-completions body of one call (compact JSON, numbers as holon holds them).

    `output_schema`: the active suite's, asked for as the `response_format`."""
    spec = _spec(agent)
    messages: list[dict[str, str]] = []
    if spec.system is not None:
        messages.append({"role": "system", "content": spec.system})
    messages.append({"role": "user", "content": render_template(spec.template, input)})
    body: dict[str, Any] = {
        "model": spec.model,
        "messages": messages,
        "response_format": response_format(capability, spec.strict, output_schema),
        "stream": spec.stream,
    }
    if spec.stream:  # the last chunk then reports the tokens, to be priced
        body["stream_options"] = {"include_usage": True}
    if spec.max_tokens is not None:
        body["max_tokens"] = spec.max_tokens
    if spec.temperature is not None:
        body["temperature"] = spec.temperature
    return dumps(body).encode()


def _count(usage: dict[str, Any], name: str) -> int | None:
    value = usage.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
        raise ChatFailure("invalid_response", f"usage.{name} must be a non-negative integer")
    return value


def read_chat(agent: Manifest, document: JSONValue, depth: int) -> tuple[JSONValue, Usage | None]:
    """The output and usage of a parsed completion, or ChatFailure."""
    spec = _spec(agent)
    if not isinstance(document, dict):
        raise ChatFailure("invalid_response", "the completion is not a JSON object")
    model = document.get("model")
    if not isinstance(model, str):
        raise ChatFailure("invalid_response", "the completion names no 'model'")
    if not spec.accepts_model(model):
        expected = (
            repr(spec.model)
            if spec.model_identity == "exact"
            else f"{spec.model!r} or an alias of it"
        )
        raise ChatFailure(
            "invalid_response",
            f"answered by model {model[:_SHOWN]!r}, but the manifest names {expected}",
        )
    choices = document.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ChatFailure("invalid_response", "the completion has no choices[0].message")
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        raise ChatFailure("agent_error", f"the model refused: {refusal[:200]}")
    usage = _usage(agent, document.get("usage"))
    content = message.get("content")
    if not isinstance(content, str):
        raise ChatFailure("invalid_response", "choices[0].message.content is not a string")
    try:
        output = parse_json(content.encode("utf-8", "surrogatepass"), depth)
    except BodyError as exc:
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        cut = " (finish_reason 'length': the answer was cut off)" if finish == "length" else ""
        raise ChatFailure("invalid_response", f"message content{cut}: {exc}") from None
    return output, usage


def _usage(agent: Manifest, usage: Any) -> Usage | None:
    priced = agent.pricing is not None and agent.pricing.prices_tokens
    if usage is None:
        if priced:
            raise ChatFailure(
                "invalid_response",
                "the completion reports no usage, and this agent is priced per token",
            )
        return None
    if not isinstance(usage, dict):
        raise ChatFailure("invalid_response", "'usage' is not an object")
    found = Usage(
        input_tokens=_count(usage, "prompt_tokens"),
        output_tokens=_count(usage, "completion_tokens"),
    )
    if priced and (found.input_tokens is None or found.output_tokens is None):
        raise ChatFailure(
            "invalid_response",
            "usage lacks prompt_tokens or completion_tokens, and this agent is priced per token",
        )
    return found


def models_identity(agent: Manifest, document: JSONValue) -> Identity:
    """Who answers at an OpenAI-compatible endpoint, from its ``GET /models`` list.

    A chat server has no identity document: it is the agent it was
    registered as while it serves the manifest's model (or, `alias`, one of
    its aliases). When it does not, the identity's id names what it serves,
    which is not the agent's id: a mismatch, as another agent answering is.
    """
    spec = _spec(agent)
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise IdentityError("the models list has no 'data' array")
    served = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    if any(spec.accepts_model(model) for model in served):
        return Identity(id=agent.id, version=agent.version, capabilities=None)
    listed = ", ".join(model[:_SHOWN] for model in served[:8]) or "none"
    return Identity(id=f"a server of models {listed}", version=agent.version, capabilities=None)
