// A client on the TypeScript SDK (@modelcontextprotocol/sdk, found through
// NODE_PATH) for upstream_faults_integration_test.go: it opens a session at
// the URL in argv[2] and lists tools, waits for a line on stdin (the test
// restarts the upstream meanwhile), lists tools again on the same session,
// then starts a new session if told the old one is gone (HTTP 404), as the
// spec asks, and lists tools there. Each step prints one JSON line. It is
// test data, not part of warden.
"use strict";

const readline = require("node:readline");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport, StreamableHTTPError } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const url = new URL(process.argv[2]);
const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function open() {
  const client = new Client({ name: "ts-sessionloss", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

async function main() {
  let client = await open();
  say({ step: "before", tools: (await client.listTools()).tools.length });
  await new Promise((resolve) => readline.createInterface({ input: process.stdin }).once("line", resolve));
  // The call that finds out gets 404, or, if its stream had opened
  // already, warden's session-expired error; a later one then gets 404.
  for (let attempt = 1; ; attempt++) {
    try {
      await client.listTools();
      say({ step: "after", ok: true });
      return;
    } catch (err) {
      const status = err instanceof StreamableHTTPError ? err.code : null;
      const rule = err && err.data && err.data.rule;
      say({ step: "after", ok: false, status, rule, message: String(err && err.message) });
      if (status === 404) {
        break;
      }
      if (rule !== "session-expired" || attempt > 1) {
        process.exit(1);
      }
    }
  }
  await client.close().catch(() => {});
  client = await open();
  say({ step: "again", tools: (await client.listTools()).tools.length });
  await client.close();
}

main().catch((err) => {
  say({ step: "error", message: String(err && err.stack) });
  process.exit(1);
});
