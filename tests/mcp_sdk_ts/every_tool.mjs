#!/usr/bin/env node
// Calls every tool a key lists, with the TypeScript MCP SDK 1.x (@modelcontextprotocol/sdk,
// the version pinned in package.json), the same cases as tests/mcp_sdk/every_tool.py.
//
// Usage: FLEETDESK_KEY=<key> FLEETDESK_FIXTURES='<json object>' node every_tool.mjs <base_url> <agent|personal|admin|community>
//
// Connects with StreamableHTTPClientTransport to <base_url>/api/mcp (`Authorization: Bearer
// <key>`), initializes, lists the tools and, for each case of the section in
// ../mcp_sdk/cases.json (MCP_CASES names another file), in order:
// - calls the tool with the `refused` arguments: the result must be isError with the expected
//   error code in its text and no structuredContent, or, for `rpc_error`, the call must fail
//   with that JSON-RPC error code and the server's error body as data;
// - calls it with the `valid` arguments: Client.callTool validates structuredContent against
//   the tool's outputSchema (it throws "Structured content does not match the tool's output
//   schema" otherwise); the result must not be isError, its text must be the same JSON and each
//   `expect` path must hold.
// A listed tool without a case fails the run, naming the tool. Prints one line of JSON on stdout
// and exits 0 when every check passed, 1 otherwise, 2 on bad usage, 3 when the SDK is missing
// (npm ci --prefix tests/mcp_sdk_ts).

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const EXPECTED_SDK = JSON.parse(readFileSync(join(here, "package.json"), "utf8")).dependencies[
  "@modelcontextprotocol/sdk"
];

let Client, StreamableHTTPClientTransport, McpError, sdkVersion;
try {
  ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
  ({ StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js"));
  ({ McpError } = await import("@modelcontextprotocol/sdk/types.js"));
  sdkVersion = JSON.parse(
    readFileSync(join(here, "node_modules", "@modelcontextprotocol", "sdk", "package.json"), "utf8"),
  ).version;
} catch (e) {
  console.log(
    JSON.stringify({
      ok: false,
      error: `the TypeScript MCP SDK is missing (${e.message}): run \`cargo xtask test\` or \`npm ci --prefix tests/mcp_sdk_ts\``,
    }),
  );
  process.exit(3);
}

class MissingFixture extends Error {}

/** Replaces `${name}` in every string of `value` by the fixture `name`. */
function substitute(value, fixtures) {
  if (typeof value === "string") {
    return value.replace(/\$\{(\w+)\}/g, (_, name) => {
      if (!(name in fixtures)) throw new MissingFixture(`no fixture '${name}' (used in '${value}')`);
      return String(fixtures[name]);
    });
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, fixtures));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, fixtures)]));
  }
  return value;
}

/** The value at a dotted path (`results.0.ok`), or a marker when it is absent. */
function atPath(value, path) {
  for (const part of path.split(".")) {
    if (value !== null && typeof value === "object" && Object.hasOwn(value, part)) {
      value = value[part];
    } else {
      return "<absent>";
    }
  }
  return value;
}

function equal(a, b) {
  return JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
}

function sorted(v) {
  if (Array.isArray(v)) return v.map(sorted);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
  }
  return v;
}

function textOf(result) {
  const content = result.content ?? [];
  return content.length === 1 && content[0].type === "text" ? content[0].text : null;
}

function parse(text) {
  try {
    return text === null ? null : JSON.parse(text);
  } catch {
    return null;
  }
}

async function checkRefused(client, tool, kase, fixtures) {
  const call = { tool, phase: "refused" };
  const args = substitute(kase.arguments ?? {}, fixtures);
  let result;
  try {
    result = await client.callTool({ name: tool, arguments: args });
  } catch (e) {
    if (!(e instanceof McpError)) throw e;
    const data = e.data !== null && typeof e.data === "object" ? e.data : {};
    Object.assign(call, { outcome: "rpc_error", rpc_error: e.code, message: e.message, code: data.code ?? null });
    if (kase.rpc_error === undefined) {
      call.failure = `expected an isError result with '${kase.error}', got JSON-RPC error ${e.code}: ${e.message}`;
    } else if (e.code !== kase.rpc_error) {
      call.failure = `expected JSON-RPC error ${kase.rpc_error}, got ${e.code}: ${e.message}`;
    } else if (!e.message || !data.code) {
      // The SDK's own errors (e.g. an output schema mismatch) carry no error body.
      call.failure = `JSON-RPC error ${e.code} without the server's error body: ${e.message}`;
    }
    return call;
  }
  call.outcome = result.isError ? "is_error" : "ok";
  const text = textOf(result);
  const body = parse(text);
  call.code = body?.code ?? null;
  if (kase.error === undefined) {
    call.failure = `expected JSON-RPC error ${kase.rpc_error}, got a tool result: ${text}`;
  } else if (!result.isError) {
    call.failure = `expected isError with '${kase.error}', got a success: ${text}`;
  } else if (result.structuredContent !== undefined) {
    call.failure = `an isError result carries structuredContent: ${JSON.stringify(result.structuredContent)}`;
  } else if (body === null || typeof body !== "object") {
    call.failure = `the error text is not a JSON object: ${text}`;
  } else if (body.code !== kase.error) {
    call.failure = `expected error code '${kase.error}', got '${body.code}': ${text}`;
  } else if (!body.message || !body.request_id) {
    call.failure = `the error body lacks a message or request_id: ${text}`;
  }
  return call;
}

async function checkValid(client, tool, kase, fixtures) {
  const call = { tool, phase: "valid" };
  const args = substitute(kase.arguments ?? {}, fixtures);
  let result;
  try {
    result = await client.callTool({ name: tool, arguments: args });
  } catch (e) {
    if (!(e instanceof McpError)) throw e;
    // Both the server's JSON-RPC errors and the SDK's output schema check land here.
    Object.assign(call, { outcome: "rpc_error", rpc_error: e.code, failure: `${e.message} ${JSON.stringify(e.data ?? null)}` });
    return call;
  }
  call.outcome = result.isError ? "is_error" : "ok";
  const text = textOf(result);
  const structured = result.structuredContent;
  if (result.isError) {
    call.failure = `isError: ${text}`;
  } else if (structured === null || typeof structured !== "object" || Array.isArray(structured)) {
    call.failure = `no structuredContent object: ${JSON.stringify(structured)}`;
  } else if (!equal(parse(text), structured)) {
    call.failure = "the text content differs from structuredContent";
  } else {
    for (const [path, want] of Object.entries(substitute(kase.expect ?? {}, fixtures))) {
      const got = atPath(structured, path);
      if (!equal(got, want)) {
        call.failure = `${path} is ${JSON.stringify(got)}, expected ${JSON.stringify(want)}: ${text.slice(0, 500)}`;
        break;
      }
    }
  }
  return call;
}

async function run(base, key, section, cases, fixtures, skip = new Set()) {
  const url = new URL(base.replace(/\/+$/, "") + "/api/mcp");
  const summary = { client: "typescript", sdk: sdkVersion, section, url: url.href };
  const failures = [];
  const calls = [];
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: "fleetdesk-every-tool", version: "1.0.0" });
  await client.connect(transport);
  try {
    summary.protocol_version = transport.protocolVersion ?? null;
    summary.server = client.getServerVersion()?.name ?? null;
    const listed = (await client.listTools()).tools.map((t) => t.name).filter((n) => !skip.has(n)).sort();
    summary.tools = listed;
    const byTool = new Map(cases.map((c) => [c.tool, c]));
    for (const name of listed) {
      if (!byTool.has(name)) {
        failures.push(
          `tool ${name} is listed for the ${section} key but tests/mcp_sdk/cases.json has no case for it: add one under '${section}'`,
        );
      }
    }
    for (const name of byTool.keys()) {
      if (!listed.includes(name)) failures.push(`cases.json has a ${section} case for ${name}, which the server does not list`);
    }
    summary.unrefusable = cases.filter((c) => "unrefusable" in c).map((c) => c.tool).sort();
    for (const kase of cases) {
      if (!listed.includes(kase.tool)) continue;
      for (const [phase, check] of [
        ["refused", checkRefused],
        ["valid", checkValid],
      ]) {
        if (!(phase in kase)) {
          if (phase === "valid" || !kase.unrefusable) {
            calls.push({ tool: kase.tool, phase, failure: `the case has no '${phase}'` });
          }
          continue;
        }
        try {
          calls.push(await check(client, kase.tool, kase[phase], fixtures));
        } catch (e) {
          if (!(e instanceof MissingFixture)) throw e;
          calls.push({ tool: kase.tool, phase, failure: e.message });
        }
      }
    }
  } finally {
    await client.close();
  }
  for (const c of calls) if (c.failure) failures.push(`${c.tool} (${c.phase}): ${c.failure}`);
  summary.calls = calls;
  summary.counts = Object.fromEntries(
    ["valid", "refused"].map((phase) => [
      phase,
      {
        passed: calls.filter((c) => c.phase === phase && !c.failure).length,
        failed: calls.filter((c) => c.phase === phase && c.failure).length,
      },
    ]),
  );
  if (sdkVersion !== EXPECTED_SDK) failures.push(`@modelcontextprotocol/sdk ${sdkVersion} is installed, package.json pins ${EXPECTED_SDK}`);
  summary.failures = failures;
  summary.ok = failures.length === 0;
  return summary;
}

async function main() {
  const [base, section] = process.argv.slice(2);
  if (process.argv.length !== 4 || !["agent", "personal", "admin", "community"].includes(section)) {
    console.log(JSON.stringify({ ok: false, error: "usage: FLEETDESK_KEY=... FLEETDESK_FIXTURES=... node every_tool.mjs <base_url> <agent|personal|admin|community>" }));
    return 2;
  }
  const key = process.env.FLEETDESK_KEY;
  if (!key) {
    console.log(JSON.stringify({ ok: false, error: "FLEETDESK_KEY is not set" }));
    return 2;
  }
  const casesPath = process.env.MCP_CASES || join(here, "..", "mcp_sdk", "cases.json");
  let cases, fixtures, skip;
  try {
    const all = JSON.parse(readFileSync(casesPath, "utf8"));
    cases = all[section];
    // An admin key lists every personal tool too: those are the personal run's.
    skip = new Set(section === "admin" ? all.personal.map((c) => c.tool) : []);
    fixtures = JSON.parse(process.env.FLEETDESK_FIXTURES || "{}");
    if (!Array.isArray(cases)) throw new Error(`no '${section}' list`);
  } catch (e) {
    console.log(JSON.stringify({ ok: false, error: `cannot read the cases (${casesPath}) or FLEETDESK_FIXTURES: ${e.message}` }));
    return 2;
  }
  const timer = setTimeout(() => {
    console.log(JSON.stringify({ ok: false, error: "timed out after 240 s" }));
    process.exit(1);
  }, 240_000);
  try {
    const summary = await run(base, key, section, cases, fixtures, skip);
    console.log(JSON.stringify(summary));
    return summary.ok ? 0 : 1;
  } catch (e) {
    console.error(e);
    console.log(JSON.stringify({ ok: false, error: `${e?.name}: ${e?.message}` }));
    return 1;
  } finally {
    clearTimeout(timer);
  }
}

process.exitCode = await main();
