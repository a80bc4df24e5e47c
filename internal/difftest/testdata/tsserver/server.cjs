// An MCP server over stdio built on the TypeScript SDK
// (@modelcontextprotocol/sdk, found through NODE_PATH), serving the
// differential test's tools the way an ordinary server on the SDK's
// low-level Server would:
//
//   safe_echo       any arguments; needs no token
//   transfer_funds  {source, amount, destination}, read from the arguments
//   read_file       {path}; the gateway's tool policy denies it
//
// Every line read from stdin and every handler run is appended to the file
// $DIFFTEST_ORACLE, in the format of ../upstream/record.go. It is test data
// for internal/difftest, not part of warden.
"use strict";

const fs = require("node:fs");
const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { CallToolRequestSchema, ListToolsRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

const oracle = process.env.DIFFTEST_ORACLE;
if (!oracle) {
  process.stderr.write("tsserver: DIFFTEST_ORACLE is not set\n");
  process.exit(1);
}
const sdk = "ts-sdk";

function append(record) {
  fs.appendFileSync(oracle, JSON.stringify(record) + "\n");
}

// The tee: registered before the transport's own listener, so each line is
// recorded before the SDK decodes it.
let pending = Buffer.alloc(0);
process.stdin.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  for (let i = pending.indexOf(10); i >= 0; i = pending.indexOf(10)) {
    append({ kind: "wire", sdk, pid: process.pid, line: pending.subarray(0, i).toString("utf8") });
    pending = pending.subarray(i + 1);
  }
});

const tools = [
  { name: "safe_echo", inputSchema: { type: "object" } },
  {
    name: "transfer_funds",
    inputSchema: {
      type: "object",
      properties: { source: { type: "string" }, amount: { type: "number" }, destination: { type: "string" } },
      required: ["source", "amount", "destination"],
    },
  },
  { name: "read_file", inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
];

const server = new Server({ name: "difftest-ts-sdk", version: "1" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args, _meta: meta } = request.params;
  if (!tools.some((t) => t.name === name)) {
    return { content: [{ type: "text", text: `unknown tool ${name}` }], isError: true };
  }
  const record = {
    kind: "call",
    sdk,
    pid: process.pid,
    tool: name,
    arguments: args === undefined ? null : args,
    meta_keys: meta === undefined ? [] : Object.keys(meta).sort(),
    meta: meta === undefined ? null : meta,
  };
  if (name === "transfer_funds") {
    record.effect = { source: args?.source, amount: args?.amount, destination: args?.destination };
  }
  append(record);
  return { content: [{ type: "text", text: `${name} ran` }] };
});

server.connect(new StdioServerTransport(process.stdin, process.stdout)).catch((err) => {
  process.stderr.write(`tsserver: ${err}\n`);
  process.exit(1);
});
