// calls.mjs FLAVOR TARGET CALLS: one official TypeScript MCP SDK client
// (FLAVOR v1: @modelcontextprotocol/sdk 1.x; v2: @modelcontextprotocol/client
// 2.x) connects to TARGET — a JSON {"command": …, "args": […], "env": {…}}
// for stdio, or {"url": …, "token": …} for Streamable HTTP — lists the
// tools (so the client knows their output schemas), makes each call of
// CALLS (a JSON list of {"name", "arguments"}) and prints one JSON line
// per call: whether the client threw, and what the result said.
const [flavor, targetJSON, callsJSON] = process.argv.slice(2);
const target = JSON.parse(targetJSON);
const calls = JSON.parse(callsJSON);

let Client, StdioClientTransport, StreamableHTTPClientTransport;
if (flavor === "v1") {
  ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
  ({ StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js"));
  ({ StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js"));
} else {
  ({ Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client"));
  ({ StdioClientTransport } = await import("@modelcontextprotocol/client/stdio"));
}

const transport = target.url
  ? new StreamableHTTPClientTransport(new URL(target.url), { requestInit: { headers: { Authorization: "Bearer " + target.token } } })
  : new StdioClientTransport({ command: target.command, args: target.args ?? [], env: { ...process.env, ...(target.env ?? {}) }, stderr: "ignore" });
const client = new Client({ name: "tracebridge-ts-" + flavor, version: "1.0.0" });
await client.connect(transport);
const listed = await client.listTools();
for (const call of calls) {
  const out = { name: call.name, listed: listed.tools.some((t) => t.name === call.name) };
  try {
    const res = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
    out.isError = !!res.isError;
    out.text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    out.code = res._meta?.["tracebridge/error"]?.code ?? "";
  } catch (e) {
    out.threw = String(e?.message ?? e);
  }
  console.log(JSON.stringify(out));
}
await client.close();
process.exit(0);
