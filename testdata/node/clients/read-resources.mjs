// An MCP client as the official TypeScript SDK builds one, reading
// resources. Usage:
//
//   node read-resources.mjs stdio LM URI…
//   node read-resources.mjs http URL TOKEN URI…
//
// It connects to `LM mcp` over stdio, or to a streamable HTTP endpoint with
// the bearer token, reads each URI and prints one JSON line per read:
// {"uri", "ok", "code", "message", "data"}. The test reading it decides what
// must hold.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
let transport, uris;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: rest[0], args: ["mcp"], env: process.env, stderr: "inherit" });
  uris = rest.slice(1);
} else {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit: { headers: { Authorization: `Bearer ${rest[1]}` } } });
  uris = rest.slice(2);
}
const client = new Client({ name: "resource-reader", version: "1.0.0" });
await client.connect(transport);
for (const uri of uris) {
  try {
    await client.readResource({ uri });
    console.log(JSON.stringify({ uri, ok: true }));
  } catch (err) {
    console.log(JSON.stringify({ uri, ok: false, code: err.code, message: err.message, data: err.data }));
  }
}
await client.close();
