"""calls.py TARGET CALLS: the official MCP Python SDK client (1.x) connects
to TARGET — a JSON {"command", "args", "env"} for stdio or {"url", "token"}
for Streamable HTTP — lists the tools (so it knows their output schemas),
makes each call of CALLS (a JSON list of {"name", "arguments"}) and prints
one JSON line per call: whether the client threw, and what the result
said (as testdata/clients/calls.mjs does for the TypeScript SDKs)."""

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


async def main() -> None:
    target = json.loads(sys.argv[1])
    calls = json.loads(sys.argv[2])
    if "url" in target:
        transport = streamablehttp_client(target["url"], headers={"Authorization": "Bearer " + target["token"]})
    else:
        params = StdioServerParameters(command=target["command"], args=target.get("args", []),
                                       env={**os.environ, **target.get("env", {})})
        transport = stdio_client(params)
    async with transport as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            listed = {t.name for t in (await session.list_tools()).tools}
            for call in calls:
                out = {"name": call["name"], "listed": call["name"] in listed}
                try:
                    res = await session.call_tool(call["name"], call.get("arguments") or {})
                    out["isError"] = bool(res.isError)
                    out["text"] = "\n".join(c.text for c in res.content if c.type == "text")
                    out["code"] = ((res.meta or {}).get("tracebridge/error") or {}).get("code", "")
                except Exception as e:  # what the client raises is what the test reports
                    out["threw"] = f"{type(e).__name__}: {e}"
                print(json.dumps(out), flush=True)


anyio.run(main)
