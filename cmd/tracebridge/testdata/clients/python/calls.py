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
from anyio import BrokenResourceError, ClosedResourceError
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


answered = 0


async def main() -> None:
    global answered
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
                answered += 1


def teardown_race(e: BaseException) -> bool:
    """The SDK's stdio_client raises BrokenResourceError when a message
    arrives while it closes (python-sdk#1960, open on 1.x): not an answer."""
    if isinstance(e, BaseExceptionGroup):
        return all(teardown_race(x) for x in e.exceptions)
    return isinstance(e, (BrokenResourceError, ClosedResourceError))


try:
    anyio.run(main)
except BaseException as e:
    if answered != len(json.loads(sys.argv[2])) or not teardown_race(e):
        raise
    print(f"calls.py: every call answered; the client's close raised {e!r} (python-sdk#1960)", file=sys.stderr)
