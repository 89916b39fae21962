#!/usr/bin/env python3
"""Calls every tool a key lists, with the official MCP Python SDK (PyPI `mcp`, 2.3.0).

Usage: FLEETDESK_KEY=<key> FLEETDESK_FIXTURES='<json object>' python3 every_tool.py <base_url> <agent|personal|admin|community>

Connects over Streamable HTTP to <base_url>/api/mcp with `Authorization: Bearer <key>`,
initializes, lists the tools and, for each case of the section in cases.json (next to this
script; MCP_CASES names another file), in order:

- calls the tool with the case's `refused` arguments: the result must be `isError` with the
  expected error code in its text (the REST error body as JSON) and no structuredContent, or,
  for `rpc_error`, the call must fail with that JSON-RPC error code;
- calls it with the `valid` arguments: the result must not be `isError`, the SDK checks its
  structuredContent against the tool's outputSchema, the text must be the same JSON, and each
  `expect` path must hold.

A listed tool without a case fails the run, naming the tool, and so does a case for a tool the
server does not list. `${name}` in a case's strings is replaced by FLEETDESK_FIXTURES[name].

Prints one line of JSON on stdout (`ok`, `calls`, `failures`, counts) and exits 0 when every
check passed, 1 otherwise, 2 on bad usage, 3 when the SDK is missing (pip install mcp==2.3.0).
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

try:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
    from mcp.shared.exceptions import MCPError
except ImportError as e:  # pragma: no cover - depends on the machine
    print(json.dumps({"ok": False, "error": f"the MCP Python SDK is missing ({e}): pip install mcp==2.3.0"}))
    sys.exit(3)

EXPECTED_SDK = "2.3.0"
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def sdk_version() -> str:
    from importlib.metadata import version

    return version("mcp")


class MissingFixture(Exception):
    pass


def substitute(value: Any, fixtures: dict[str, Any]) -> Any:
    """Replaces `${name}` in every string of `value` by the fixture `name`."""
    if isinstance(value, str):

        def one(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in fixtures:
                raise MissingFixture(f"no fixture {name!r} (used in {value!r})")
            return str(fixtures[name])

        return PLACEHOLDER.sub(one, value)
    if isinstance(value, list):
        return [substitute(v, fixtures) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, fixtures) for k, v in value.items()}
    return value


def at_path(value: Any, path: str) -> Any:
    """The value at a dotted path (`results.0.ok`), or a marker when it is absent."""
    for part in path.split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return "<absent>"
    return value


def text_of(result: Any) -> str | None:
    content = result.content or []
    if len(content) == 1 and getattr(content[0], "type", None) == "text":
        return content[0].text
    return None


async def check_refused(client: Client, tool: str, case: dict, fixtures: dict) -> dict:
    call: dict = {"tool": tool, "phase": "refused"}
    args = substitute(case.get("arguments", {}), fixtures)
    try:
        result = await client.call_tool(tool, args)
    except MCPError as e:
        call.update(outcome="rpc_error", rpc_error=e.code, message=e.message)
        data = e.data if isinstance(e.data, dict) else {}
        call["code"] = data.get("code")
        want = case.get("rpc_error")
        if want is None:
            call["failure"] = f"expected an isError result with {case.get('error')!r}, got JSON-RPC error {e.code}: {e.message}"
        elif e.code != want:
            call["failure"] = f"expected JSON-RPC error {want}, got {e.code}: {e.message}"
        elif not e.message or not data.get("code"):
            call["failure"] = f"JSON-RPC error {e.code} without a message and an error body: {e.message!r} {e.data!r}"
        return call
    call["outcome"] = "is_error" if result.is_error else "ok"
    text = text_of(result)
    try:
        body = json.loads(text) if text is not None else None
    except ValueError:
        body = None
    call["code"] = body.get("code") if isinstance(body, dict) else None
    want = case.get("error")
    if want is None:
        call["failure"] = f"expected JSON-RPC error {case.get('rpc_error')}, got a tool result: {text}"
    elif not result.is_error:
        call["failure"] = f"expected isError with {want!r}, got a success: {text}"
    elif result.structured_content is not None:
        call["failure"] = f"an isError result carries structuredContent: {result.structured_content}"
    elif not isinstance(body, dict):
        call["failure"] = f"the error text is not a JSON object: {text!r}"
    elif body.get("code") != want:
        call["failure"] = f"expected error code {want!r}, got {body.get('code')!r}: {text}"
    elif not body.get("message") or not body.get("request_id"):
        call["failure"] = f"the error body lacks a message or request_id: {text}"
    return call


async def check_valid(client: Client, tool: str, case: dict, fixtures: dict) -> dict:
    call: dict = {"tool": tool, "phase": "valid"}
    args = substitute(case.get("arguments", {}), fixtures)
    try:
        # The SDK validates structuredContent against the tool's outputSchema and raises
        # RuntimeError when it does not conform.
        result = await client.call_tool(tool, args)
    except MCPError as e:
        call.update(outcome="rpc_error", rpc_error=e.code, failure=f"JSON-RPC error {e.code}: {e.message} {e.data}")
        return call
    except RuntimeError as e:
        call.update(outcome="invalid", failure=f"the SDK refused the result: {e}")
        return call
    call["outcome"] = "is_error" if result.is_error else "ok"
    text = text_of(result)
    structured = result.structured_content
    if result.is_error:
        call["failure"] = f"isError: {text}"
    elif not isinstance(structured, dict):
        call["failure"] = f"no structuredContent object: {structured!r}"
    elif text is None or json.loads(text) != structured:
        call["failure"] = "the text content differs from structuredContent"
    else:
        for path, want in substitute(case.get("expect", {}), fixtures).items():
            got = at_path(structured, path)
            if got != want:
                call["failure"] = f"{path} is {got!r}, expected {want!r}: {text[:500]}"
                break
    return call


async def run(base: str, key: str, section: str, cases: list[dict], fixtures: dict, skip: frozenset = frozenset()) -> dict:
    url = base.rstrip("/") + "/api/mcp"
    summary: dict = {"client": "python", "sdk": sdk_version(), "section": section, "url": url}
    failures: list[str] = []
    calls: list[dict] = []
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"},
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
    )
    async with http:
        transport = streamable_http_client(url, http_client=http)
        with anyio.fail_after(240):
            async with Client(transport, read_timeout_seconds=60) as client:
                summary["protocol_version"] = client.protocol_version
                listed = sorted(t.name for t in (await client.list_tools()).tools if t.name not in skip)
                summary["tools"] = listed
                by_tool = {c["tool"]: c for c in cases}
                for name in listed:
                    if name not in by_tool:
                        failures.append(
                            f"tool {name} is listed for the {section} key but tests/mcp_sdk/cases.json has no "
                            f"case for it: add one under {section!r}"
                        )
                for name in by_tool:
                    if name not in listed:
                        failures.append(f"cases.json has a {section} case for {name}, which the server does not list")
                summary["unrefusable"] = sorted(c["tool"] for c in cases if "unrefusable" in c)
                for case in cases:
                    tool = case["tool"]
                    if tool not in listed:
                        continue
                    for phase, check in (("refused", check_refused), ("valid", check_valid)):
                        if phase not in case:
                            if phase == "valid" or not case.get("unrefusable"):
                                calls.append({"tool": tool, "phase": phase, "failure": f"the case has no {phase!r}"})
                            continue
                        try:
                            calls.append(await check(client, tool, case[phase], fixtures))
                        except MissingFixture as e:
                            calls.append({"tool": tool, "phase": phase, "failure": str(e)})
    failures.extend(f"{c['tool']} ({c['phase']}): {c['failure']}" for c in calls if "failure" in c)
    summary["calls"] = calls
    summary["counts"] = {
        phase: {
            "passed": sum(1 for c in calls if c["phase"] == phase and "failure" not in c),
            "failed": sum(1 for c in calls if c["phase"] == phase and "failure" in c),
        }
        for phase in ("valid", "refused")
    }
    summary["failures"] = failures
    summary["ok"] = not failures
    return summary


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[2] not in ("agent", "personal", "admin", "community"):
        print(json.dumps({"ok": False, "error": "usage: FLEETDESK_KEY=... FLEETDESK_FIXTURES=... every_tool.py <base_url> <agent|personal|admin|community>"}))
        return 2
    base, section = sys.argv[1], sys.argv[2]
    key = os.environ.get("FLEETDESK_KEY")
    if not key:
        print(json.dumps({"ok": False, "error": "FLEETDESK_KEY is not set"}))
        return 2
    cases_path = Path(os.environ.get("MCP_CASES") or Path(__file__).with_name("cases.json"))
    try:
        all_cases = json.loads(cases_path.read_text())
        cases = all_cases[section]
        # An admin key lists every personal tool too: those are the personal run's.
        skip = frozenset(c["tool"] for c in all_cases["personal"]) if section == "admin" else frozenset()
        fixtures = json.loads(os.environ.get("FLEETDESK_FIXTURES") or "{}")
    except (OSError, ValueError, KeyError) as e:
        print(json.dumps({"ok": False, "error": f"cannot read the cases ({cases_path}) or FLEETDESK_FIXTURES: {e}"}))
        return 2
    try:
        summary = anyio.run(run, base, key, section, cases, fixtures, skip)
    except BaseException as e:  # noqa: BLE001 - report anything, including ExceptionGroups
        traceback.print_exc(file=sys.stderr)
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
        return 1
    if summary.get("sdk") != EXPECTED_SDK:
        summary["failures"].append(f"mcp {summary.get('sdk')} is installed but this script targets {EXPECTED_SDK}")
        summary["ok"] = False
    print(json.dumps(summary, separators=(",", ":")))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
