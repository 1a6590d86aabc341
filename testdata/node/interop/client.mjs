// An MCP host's view of a server, through the official TypeScript SDK
// clients: connect, list every tool, resource, template and prompt, call
// every tool with the arguments of a fixture (or with arguments built from
// its input schema), check each structuredContent against the tool's
// outputSchema with ajv, and call each tool once with a mistyped field.
//
//   node client.mjs '{"sdk":"1","transport":"stdio","command":"lm","args":["mcp"]}'
//
// Options (one JSON object): sdk "1" (@modelcontextprotocol/sdk) or "2"
// (@modelcontextprotocol/client); transport "stdio" (command, args, cwd,
// env), "http" (streamable HTTP) or "sse" (url, token); protocol pins the
// version the client asks for; fixtures lists files of calls ({file,
// prefix}); callOnly names the only tools to call (no mistyped calls then);
// calls false stops after the lists; logLevel sends logging/setLevel. It
// prints one JSON report and exits 0 when it could run (what the report says
// is for the caller to judge), 1 when the connection or a list failed.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";

const opts = JSON.parse(process.argv[2]);
const ajv = new Ajv2020({ strict: false, allErrors: true });
const sdk = await loadSDK(opts.sdk);
const report = { sdk: opts.sdk, transport: opts.transport, calls: {}, invalid: {} };
let tools = [];

let negotiated;
const client = new sdk.Client({ name: `interop-sdk${opts.sdk}`, version: "1.0.0" }, { capabilities: {} });
const transport = makeTransport();
watchProtocol(transport, opts.protocol);
try {
  await client.connect(transport);
  report.protocolVersion = negotiated;
  report.serverInfo = client.getServerVersion();
  report.capabilities = client.getServerCapabilities();
  await listEverything();
  if (opts.calls !== false) await callEverything();
  if (opts.logLevel) report.setLevel = await setLevel(opts.logLevel);
} catch (err) {
  report.fatal = String(err?.stack ?? err);
}
await client.close().catch(() => {});
report.tools = tools.map((t) => ({ name: t.name }));
// Exit once the report is out: a pipe is written asynchronously.
process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(report.fatal ? 1 : 0));

async function loadSDK(line) {
  if (line === "1") {
    const [{ Client }, stdio, http, sse] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/index.js"),
      import("@modelcontextprotocol/sdk/client/stdio.js"),
      import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
      import("@modelcontextprotocol/sdk/client/sse.js"),
    ]);
    return { Client, Stdio: stdio.StdioClientTransport, HTTP: http.StreamableHTTPClientTransport, SSE: sse.SSEClientTransport };
  }
  const [m, stdio] = await Promise.all([import("@modelcontextprotocol/client"), import("@modelcontextprotocol/client/stdio")]);
  return { Client: m.Client, Stdio: stdio.StdioClientTransport, HTTP: m.StreamableHTTPClientTransport, SSE: m.SSEClientTransport };
}

function makeTransport() {
  const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
  switch (opts.transport) {
    case "stdio":
      return new sdk.Stdio({ command: opts.command, args: opts.args ?? [], cwd: opts.cwd, env: { ...process.env, ...(opts.env ?? {}) }, stderr: "inherit" });
    case "http":
      return new sdk.HTTP(new URL(opts.url), { requestInit: { headers } });
    case "sse":
      return new sdk.SSE(new URL(opts.url), {
        requestInit: { headers },
        eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...init?.headers, ...headers } }) },
      });
  }
  throw new Error(`unknown transport ${opts.transport}`);
}

// watchProtocol notes the version the server answers initialize with. With
// a version to pin, it asks for that one: the SDKs always ask for their
// latest, and a host that speaks an older one sends that instead.
function watchProtocol(t, version) {
  const send = t.send.bind(t);
  t.send = (message, options) => {
    if (version && message.method === "initialize") message = { ...message, params: { ...message.params, protocolVersion: version } };
    return send(message, options);
  };
  let onmessage;
  Object.defineProperty(t, "onmessage", {
    get: () => onmessage,
    set: (handler) => {
      onmessage = handler && ((message, extra) => {
        if (message.result?.protocolVersion && negotiated === undefined) negotiated = message.result.protocolVersion;
        return handler(message, extra);
      });
    },
  });
}

async function all(list, key) {
  const items = [];
  let cursor;
  do {
    const page = await list(cursor ? { cursor } : {});
    items.push(...page[key]);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

async function listEverything() {
  const caps = report.capabilities ?? {};
  tools = await all((p) => client.listTools(p), "tools");
  if (caps.resources) {
    report.resources = (await all((p) => client.listResources(p), "resources")).map((r) => r.uri);
    report.templates = (await all((p) => client.listResourceTemplates(p), "resourceTemplates")).map((r) => r.uriTemplate);
  }
  if (caps.prompts) report.prompts = (await all((p) => client.listPrompts(p), "prompts")).map((p) => p.name);
}

async function callEverything() {
  // Each fixture file is a list of calls; a prefix names the tools the way
  // a proxy in front of that server does (everything__echo).
  const fixtures = (opts.fixtures ?? []).flatMap(({ file, prefix = "" }) =>
    JSON.parse(readFileSync(file, "utf8")).map((f) => ({ ...f, tool: prefix + f.tool, as: f.as && prefix + f.as })),
  );
  const byName = new Map(tools.map((t) => [t.name, t]));
  const results = {};
  // Fixtures run in their order (a later one may use an earlier result);
  // every other tool runs with arguments built from its schema where the
  // fixtures say {"others": true}, else at the end.
  const others = opts.callOnly ? [] : tools.filter((t) => !fixtures.some((f) => f.tool === t.name)).map((t) => ({ tool: t.name }));
  const steps = opts.callOnly
    ? opts.callOnly.filter((tool) => byName.has(tool)).map((tool) => fixtures.find((f) => f.tool === tool) ?? { tool })
    : fixtures.filter((f) => f.others || byName.has(f.tool));
  const at = steps.findIndex((f) => f.others);
  const plan = at < 0 ? [...steps, ...others] : [...steps.slice(0, at), ...others, ...steps.slice(at + 1)];
  for (const step of plan) {
    const tool = byName.get(step.tool);
    const key = step.as ?? step.tool;
    let args;
    try {
      args = step.args ? substitute(step.args, results) : minimalArguments(tool.inputSchema);
    } catch (err) {
      report.calls[key] = { tool: step.tool, expect: step.expect, outcome: "not called", problem: err.message };
      continue;
    }
    const outcome = await call(tool, args);
    if (outcome.structured) results[key] = outcome.structured;
    delete outcome.structured;
    report.calls[key] = { tool: step.tool, expect: step.expect, ...outcome };
  }
  if (!opts.callOnly) for (const tool of tools) report.invalid[tool.name] = await callMistyped(tool);
}

async function call(tool, args) {
  const outcome = { arguments: args };
  // The SDKs refuse a plain call of a tool that can only run as a task.
  if (tool.execution?.taskSupport === "required") return { ...outcome, outcome: "task only" };
  let result;
  try {
    result = await client.callTool({ name: tool.name, arguments: args });
  } catch (err) {
    return { ...outcome, outcome: "exception", error: String(err?.message ?? err) };
  }
  const text = result.content?.find((c) => c.type === "text")?.text;
  if (result.isError) {
    let envelope;
    try {
      envelope = JSON.parse(text);
    } catch {
      return { ...outcome, outcome: "error", error: text, problem: "the error is not a JSON envelope" };
    }
    return { ...outcome, outcome: "error", category: envelope.error_category, error: envelope.error };
  }
  if (!tool.outputSchema) return { ...outcome, outcome: "ok" };
  if (result.structuredContent === undefined) return { ...outcome, outcome: "ok", problem: "no structuredContent although the tool has an outputSchema" };
  const validate = ajv.compile(tool.outputSchema);
  if (!validate(result.structuredContent)) {
    return { ...outcome, outcome: "ok", problem: `structuredContent does not match outputSchema: ${ajv.errorsText(validate.errors)}` };
  }
  return { ...outcome, outcome: "ok", validated: true, structured: result.structuredContent };
}

// callMistyped sends a value of the wrong type in one field (or an unknown
// field when the tool takes none) and reports whether the error names it.
async function callMistyped(tool) {
  if (tool.execution?.taskSupport === "required") return { taskOnly: true };
  const schema = tool.inputSchema ?? {};
  const props = schema.properties ?? {};
  const field = Object.keys(props).sort().find((k) => wrongValue(props[k]) !== undefined) ?? "no_such_field";
  const args = { ...minimalArguments(schema), [field]: props[field] ? wrongValue(props[field]) : 1 };
  try {
    const result = await client.callTool({ name: tool.name, arguments: args });
    const text = result.content?.find((c) => c.type === "text")?.text ?? "";
    return { field, isError: Boolean(result.isError), namesField: text.includes(`"${field}"`) || text.includes(`\\"${field}\\"`), text };
  } catch (err) {
    return { field, exception: String(err?.message ?? err) };
  }
}

function types(s) {
  if (!s || typeof s !== "object") return [];
  return (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []).filter((t) => t !== "null");
}

function wrongValue(s) {
  const t = types(s);
  if (t.length === 0) return undefined;
  if (t.includes("string")) return t.includes("number") || t.includes("integer") ? [true] : 12345;
  if (t.includes("integer") || t.includes("number")) return "not a number";
  if (t.includes("boolean")) return "not a boolean";
  return 12345;
}

function minimalArguments(schema) {
  const args = {};
  for (const name of schema?.required ?? []) args[name] = sample(schema.properties?.[name] ?? {});
  return args;
}

function sample(s) {
  if (s.enum) return s.enum[0];
  if (s.default !== undefined) return s.default;
  switch (types(s)[0]) {
    case "string":
      return "x";
    case "integer":
    case "number":
      return s.minimum ?? 1;
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return minimalArguments(s);
  }
  return {};
}

// substitute replaces "${tool.path.to.value}" strings with a value from an
// earlier call's structuredContent.
function substitute(value, results) {
  if (typeof value === "string") {
    const m = /^\$\{([a-z0-9_]+)\.([^}]+)\}$/.exec(value);
    if (!m) return value;
    let v = results[m[1]];
    for (const part of m[2].split(".")) v = v?.[part];
    if (v === undefined) throw new Error(`fixture reference ${value}: no such value in ${m[1]}'s result`);
    return v;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, results));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, results)]));
  return value;
}

async function setLevel(level) {
  try {
    await client.setLoggingLevel(level);
    return "ok";
  } catch (err) {
    return String(err?.message ?? err);
  }
}
