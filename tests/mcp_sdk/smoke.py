#!/usr/bin/env python3
"""Drives fleetdesk's MCP endpoint with the official MCP Python SDK (PyPI `mcp`, 2.3.0).

Usage: python3 smoke.py <base_url> <agent_key> [<rate_limit_per_minute>]
   or: FLEETDESK_BASE_URL=... FLEETDESK_AGENT_KEY=... python3 smoke.py

Connects over Streamable HTTP to <base_url>/api/mcp with `Authorization: Bearer <key>`,
lets the SDK negotiate (mode "auto": it probes `server/discover` and falls back to
`initialize`), lists tools, calls `list_accounts` and `work_today` (the SDK checks each
result against the tool's outputSchema), calls `report_account_state` on an unknown code
and expects `isError` with the error body as JSON text and no structuredContent; nothing is
written (tests/mcp_sdk/every_tool.py calls every tool). Then, with a third argument N (the
key's rate limit per minute), calls `list_accounts` until the service refuses one and expects
the SDK to raise the JSON-RPC error -32029 whose data carries `code: rate_limited` and
`retry_after` (seconds), within N + 10 calls. Before that it lists the prompts and gets
`todays_work`, lists the resources and reads a persona. Prints one line of JSON on stdout and
exits 0 when every check passed; otherwise prints the same line with `"ok": false` and exits 1.
Exit 3 means the SDK is missing: `pip install mcp==2.3.0` (tests/mcp_sdk/requirements.txt).

Every HTTP exchange the SDK made is in the summary's `trace`: HTTP and JSON-RPC method,
the MCP-Protocol-Version and Mcp-Method headers, status, and the JSON-RPC error code if
any. Set MCP_SMOKE_VERBOSE=1 to also log each exchange (with the response body) on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

try:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
except ImportError as e:  # pragma: no cover - depends on the machine
    print(
        json.dumps({"ok": False, "error": f"the MCP Python SDK is missing ({e}): pip install mcp==2.3.0"}),
    )
    sys.exit(3)

EXPECTED_SDK = "2.3.0"
VERBOSE = os.environ.get("MCP_SMOKE_VERBOSE") == "1"


def sdk_version() -> str:
    from importlib.metadata import version

    return version("mcp")


class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []

    def check(self, cond: bool, what: str) -> bool:
        if not cond:
            self.failures.append(what)
        return cond


async def run(base: str, key: str, limit: int | None = None) -> dict:
    url = base.rstrip("/") + "/api/mcp"
    trace: list[dict] = []
    checks = Checks()
    summary: dict = {"sdk": sdk_version(), "url": url, "trace": trace}

    async def on_request(request: httpx2.Request) -> None:
        entry: dict = {
            "http": request.method,
            "protocol_version": request.headers.get("mcp-protocol-version"),
            "mcp_method_header": request.headers.get("mcp-method"),
            "authorization": "bearer" if request.headers.get("authorization", "").startswith("Bearer ") else None,
            "accept": request.headers.get("accept"),
        }
        try:
            body = json.loads(request.content or b"null")
        except ValueError:
            body = None
        if isinstance(body, dict):
            entry["method"] = body.get("method")
            entry["id"] = body.get("id")
            if body.get("method") == "initialize":
                entry["offered"] = (body.get("params") or {}).get("protocolVersion")
        request.extensions["smoke_trace"] = entry
        trace.append(entry)

    async def on_response(response: httpx2.Response) -> None:
        entry = response.request.extensions.get("smoke_trace")
        if entry is None:
            return
        entry["status"] = response.status_code
        entry["content_type"] = response.headers.get("content-type")
        if not (entry["content_type"] or "").startswith("application/json") and not VERBOSE:
            return
        # A JSON answer is small and read once; the transport then reads the cached body.
        await response.aread()
        try:
            answer = json.loads(response.content or b"null")
        except ValueError:
            answer = None
        if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
            entry["rpc_error"] = answer["error"].get("code")
        if VERBOSE:
            body = response.content.decode("utf-8", "replace")
            print(f"[smoke] {json.dumps(entry)} -> {body[:600]}", file=sys.stderr)

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"},
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        event_hooks={"request": [on_request], "response": [on_response]},
    )
    async with http:
        transport = streamable_http_client(url, http_client=http)
        with anyio.fail_after(60):
            async with Client(transport, read_timeout_seconds=30) as client:
                summary["protocol_version"] = client.protocol_version
                info = client.server_info
                summary["server"] = info.name if info else None
                checks.check(client.protocol_version == "2025-06-18", f"negotiated {client.protocol_version}")
                checks.check(summary["server"] == "fleetdesk", f"server name {summary['server']!r}")

                tools = await client.list_tools()
                names = sorted(t.name for t in tools.tools)
                summary["tools"] = names
                for wanted in ("list_accounts", "report_account_state"):
                    checks.check(wanted in names, f"tools/list lacks {wanted}")
                schemas = {t.name: t for t in tools.tools}
                if "report_account_state" in schemas:
                    props = (schemas["report_account_state"].input_schema or {}).get("properties", {})
                    checks.check("request_id" in props, "report_account_state has no request_id property")

                listed = await client.call_tool("list_accounts", {})
                structured = listed.structured_content
                summary["list_accounts"] = {
                    "is_error": listed.is_error,
                    "accounts": len(structured.get("accounts", [])) if isinstance(structured, dict) else None,
                    "codes": sorted(a.get("code") for a in structured.get("accounts", []))
                    if isinstance(structured, dict)
                    else None,
                }
                checks.check(not listed.is_error, "list_accounts returned isError")
                checks.check(isinstance(structured, dict) and "accounts" in structured, "no accounts in structuredContent")
                text = listed.content[0].text if listed.content and hasattr(listed.content[0], "text") else None
                checks.check(text is not None and json.loads(text) == structured, "text content differs from structuredContent")

                # The SDK validates structuredContent against the tool's outputSchema (a
                # RuntimeError when it does not conform), so this also checks work_today's schema.
                today = await client.call_tool("work_today", {})
                ts = today.structured_content if isinstance(today.structured_content, dict) else {}
                summary["work_today"] = {"is_error": today.is_error, "dates": ts.get("dates")}
                checks.check(not today.is_error, "work_today returned isError")
                checks.check(bool(ts.get("dates")), "work_today has no dates")

                failed = await client.call_tool(
                    "report_account_state",
                    {
                        "code": "NOPE",
                        "state": "paused",
                        "reason": "smoke",
                        "occurred_at": "2026-11-21 10:00",
                        "request_id": "smoke-nope-1",
                    },
                )
                # An error result carries the REST error body as JSON text, and no structuredContent
                # (it would not match the tool's outputSchema).
                ftext = failed.content[0].text if failed.content and hasattr(failed.content[0], "text") else "null"
                try:
                    fs = json.loads(ftext)
                except ValueError:
                    fs = None
                fs = fs if isinstance(fs, dict) else {}
                summary["failing_call"] = {
                    "is_error": failed.is_error,
                    "code": fs.get("code"),
                    "structured": failed.structured_content is not None,
                }
                checks.check(failed.is_error is True, "report_account_state on NOPE is not isError")
                checks.check(fs.get("code") == "not_found", f"report_account_state on NOPE gave code {fs.get('code')!r}")
                checks.check(failed.structured_content is None, "the isError result carries structuredContent")

                # Prompts and resources: the day's work as a prompt, a persona as a resource.
                prompts = await client.list_prompts()
                summary["prompts"] = sorted(p.name for p in prompts.prompts)
                checks.check("todays_work" in summary["prompts"], f"prompts {summary['prompts']}")
                prompt = await client.get_prompt("todays_work", {})
                first = prompt.messages[0].content if prompt.messages else None
                checks.check(
                    getattr(first, "text", "").count("```json") == 1,
                    "todays_work carries work_today's answer as JSON",
                )
                resources = await client.list_resources()
                uris = [str(r.uri) for r in resources.resources]
                summary["resources"] = len(uris)
                persona = next((u for u in uris if u.startswith("fleetdesk://personas/")), None)
                checks.check(persona is not None, f"no persona among the resources {uris}")
                if persona is not None:
                    read = await client.read_resource(persona)
                    text = getattr(read.contents[0], "text", None) if read.contents else None
                    body = json.loads(text) if text else {}
                    summary["read_persona"] = sorted(body)[:5]
                    checks.check("persona" in body or "name" in body, f"persona read {sorted(body)}")

                if limit is not None:
                    # Past the key's limit the call fails with a JSON-RPC error the SDK raises,
                    # carrying how long to wait.
                    limited = None
                    for _ in range(limit + 10):
                        try:
                            await client.call_tool("list_accounts", {})
                        except MCPError as e:
                            limited = {"code": e.code, "data": e.data, "message": e.message}
                            break
                    summary["rate_limited"] = limited
                    data = (limited or {}).get("data") or {}
                    checks.check(limited is not None, f"no call refused within {limit + 10}")
                    checks.check((limited or {}).get("code") == -32029, f"rate limit answered {limited}")
                    checks.check(data.get("code") == "rate_limited", f"rate limit data {data}")
                    wait = data.get("retry_after")
                    checks.check(isinstance(wait, int) and 1 <= wait <= 62, f"retry_after {wait!r}")

    summary["failures"] = checks.failures
    summary["ok"] = not checks.failures
    return summary


def main() -> int:
    base = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FLEETDESK_BASE_URL")
    key = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("FLEETDESK_AGENT_KEY")
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
    if not base or not key:
        print(json.dumps({"ok": False, "error": "usage: smoke.py <base_url> <agent_key> (or FLEETDESK_BASE_URL, FLEETDESK_AGENT_KEY)"}))
        return 2
    try:
        summary = anyio.run(run, base, key, limit)
    except BaseException as e:  # noqa: BLE001 - report anything, including ExceptionGroups
        traceback.print_exc(file=sys.stderr)
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
        return 1
    if summary.get("sdk") != EXPECTED_SDK:
        summary.setdefault("failures", []).append(
            f"mcp {summary.get('sdk')} is installed but this smoke test targets {EXPECTED_SDK}: pip install mcp=={EXPECTED_SDK}"
        )
        summary["ok"] = False
    print(json.dumps(summary, separators=(",", ":")))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
