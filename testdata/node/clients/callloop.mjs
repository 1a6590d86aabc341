// Times sequential tools/call requests from the official TypeScript SDK
// client, for lmbench's hop section: node callloop.mjs URL TOOL WARMUP CALLS
// (URL is a streamable HTTP endpoint, or stdio:COMMAND ARG... for a child
// over stdio). Prints the latencies, in nanoseconds, as one JSON array.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [url, tool, warmup, calls] = process.argv.slice(2);
let transport;
if (url.startsWith("stdio:")) {
  const [command, ...args] = url.slice("stdio:".length).split(" ");
  transport = new StdioClientTransport({ command, args });
} else {
  transport = new StreamableHTTPClientTransport(new URL(url));
}
const client = new Client({ name: "lmbench", version: "1" });
await client.connect(transport);
let n = 0;
async function call() {
  n++;
  const res = await client.callTool({ name: tool, arguments: { message: `m${n}`, text: `m${n}` } });
  if (res.isError) throw new Error(`${tool} answered an error: ${JSON.stringify(res.content)}`);
}
for (let i = 0; i < Number(warmup); i++) await call();
const out = [];
for (let i = 0; i < Number(calls); i++) {
  const began = process.hrtime.bigint();
  await call();
  out.push(Number(process.hrtime.bigint() - began));
}
process.stdout.write(JSON.stringify(out) + "\n");
await client.close();
