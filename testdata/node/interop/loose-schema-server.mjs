// A stdio MCP server whose tool loose has a property schema `true`: valid
// JSON Schema, but the MCP schema wants an object there, and strict clients
// (the TypeScript SDK 1.x) reject a tools/list that contains it. Its tool
// fine is ordinary.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server({ name: "loose-schema", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: "loose", description: "takes anything", inputSchema: { type: "object", properties: { anything: true } } },
    { name: "fine", description: "takes a message", inputSchema: { type: "object", properties: { message: { type: "string" } } } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (req) => ({
  content: [{ type: "text", text: `${req.params.name}: ${JSON.stringify(req.params.arguments ?? {})}` }],
}));
await server.connect(new StdioServerTransport());
