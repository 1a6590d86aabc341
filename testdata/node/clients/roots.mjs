// An MCP host as the official TypeScript SDK builds one: it declares the
// roots capability, answers roots/list with the directories it currently
// exposes, and says when they change. Usage:
//
//   node roots.mjs LM ROOT_A ROOT_B
//
// It starts `LM mcp` (in the working directory it is given), then calls
// local_extract with each root it has declared and with the other one, and
// prints one JSON line per call: {"step", "roots", "root", "files",
// "isError", "text"}. The test reading it decides what must hold.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { pathToFileURL } from "node:url";

const [lm, a, b] = process.argv.slice(2);
let roots = [a];
let listed = 0;

const client = new Client({ name: "roots-host", version: "1.0.0" }, { capabilities: { roots: { listChanged: true } } });
client.setRequestHandler(ListRootsRequestSchema, async () => {
  listed++;
  return { roots: roots.map((dir) => ({ uri: pathToFileURL(dir).href, name: dir })) };
});
const transport = new StdioClientTransport({ command: lm, args: ["mcp"], env: process.env, stderr: "inherit" });
await client.connect(transport);

async function extract(step, args) {
  const res = await client.callTool({ name: "local_extract", arguments: { task_type: "pattern_match", patterns: ["."], ...args } });
  const text = res.content.map((c) => c.text ?? "").join("");
  console.log(JSON.stringify({ step, roots, root: args.root ?? "", files: args.files, isError: !!res.isError, text, listed }));
}

await extract("declared", { files: ["a.txt"] });
await extract("other-root", { root: b, files: ["b.txt"] });
await extract("absolute-outside", { files: [b + "/b.txt"] });
await extract("allow-outside", { files: [b + "/b.txt"], allow_outside_root: true });

roots = [b];
await client.sendRootsListChanged();
await extract("changed", { files: ["b.txt"] });
await extract("old-root", { root: a, files: ["a.txt"] });

await client.close();
