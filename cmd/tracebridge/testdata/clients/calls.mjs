// calls.mjs FLAVOR TARGET CALLS: one official TypeScript MCP SDK client
// (FLAVOR v1: @modelcontextprotocol/sdk 1.x; v2: @modelcontextprotocol/client
// 2.x) connects to TARGET — a JSON {"command": …, "args": […], "env": {…}}
// for stdio, {"url": …, "token": …} for Streamable HTTP, or {"url": …,
// "oauth": {"clientId", "redirectUri", "username", "password"}} for
// Streamable HTTP with the SDK's own OAuth client (it finds the issuer from
// the 401, signs the user in on the issuer's login page, played here by
// login(), and sends the access token) — lists the
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

// login plays the user at the issuer: it follows the authorization URL to
// the login page, posts the credentials, and follows the issuer's own
// redirects until one leaves for the client's redirect URI, whose code it
// returns.
async function login(authorizationUrl, o) {
  const issuer = new URL(authorizationUrl).origin;
  let cookie = "";
  const step = async (url, init = {}) => {
    const res = await fetch(url, { ...init, redirect: "manual", headers: { ...(init.headers ?? {}), ...(cookie ? { cookie } : {}) } });
    const set = res.headers.getSetCookie?.() ?? [];
    if (set.length) cookie = set.map((c) => c.split(";")[0]).join("; ");
    return res;
  };
  let res = await step(authorizationUrl);
  let url = authorizationUrl;
  while (res.status >= 300 && res.status < 400) {
    url = new URL(res.headers.get("location"), url).href;
    res = await step(url);
  }
  const id = (await res.text()).match(/name="id" value="([^"]+)"/)?.[1];
  if (!id) throw new Error("no login page at " + url);
  res = await step(issuer + "/login/username", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ id, username: o.username, password: o.password }).toString() });
  for (;;) {
    const loc = res.headers.get("location");
    if (!loc) throw new Error("the login answered " + res.status + " without a redirect");
    const next = new URL(loc, issuer);
    if (next.origin !== issuer) return next.searchParams.get("code");
    res = await step(next.href);
  }
}

function oauthProvider(o) {
  let tokens, verifier, code;
  return {
    get redirectUrl() { return o.redirectUri; },
    get clientMetadata() { return { client_name: "tracebridge-ts", redirect_uris: [o.redirectUri], grant_types: ["authorization_code"], token_endpoint_auth_method: "none" }; },
    clientInformation() { return { client_id: o.clientId }; },
    tokens() { return tokens; },
    saveTokens(t) { tokens = t; },
    async redirectToAuthorization(url) { code = await login(url.href, o); },
    saveCodeVerifier(v) { verifier = v; },
    codeVerifier() { return verifier; },
    code() { return code; },
  };
}

const client = new Client({ name: "tracebridge-ts-" + flavor, version: "1.0.0" });
if (target.oauth) {
  const provider = oauthProvider(target.oauth);
  const first = new StreamableHTTPClientTransport(new URL(target.url), { authProvider: provider });
  try {
    await client.connect(first); // 401: the SDK discovers the issuer and sends the user to sign in
  } catch (e) {
    if (!provider.code()) throw e;
    await first.finishAuth(provider.code());
    await client.connect(new StreamableHTTPClientTransport(new URL(target.url), { authProvider: provider }));
  }
} else {
  const transport = target.url
    ? new StreamableHTTPClientTransport(new URL(target.url), { requestInit: { headers: { Authorization: "Bearer " + target.token } } })
    : new StdioClientTransport({ command: target.command, args: target.args ?? [], env: { ...process.env, ...(target.env ?? {}) }, stderr: "ignore" });
  await client.connect(transport);
}
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
