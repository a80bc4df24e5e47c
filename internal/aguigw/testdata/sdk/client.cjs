// client.cjs: one run of an AG-UI agent with the official TypeScript SDK's
// HttpAgent (@ag-ui/client), for warden's AG-UI gateway tests.
//
//   node client.cjs NODE_MODULES URL '{"threadId":…,"runId":…,"messages":[…],"state":{…}}'
//
// It prints one JSON object on stdout, what the SDK made of the run:
//
//   events    every event the SDK handed its subscribers (after its own
//             parsing, schema enforcement and ordering checks)
//   messages  the agent's messages at the end: what a UI would show
//   state     the agent's state at the end
//   error     the message of the error the run failed with, or null
//   warnings  what the SDK warned about (dropped or stripped material)
//
// It exits 0 whenever it could print that object. NODE_MODULES is the
// folder scripts/deps.sh installed the SDK into.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const sdk = createRequire(path.join(path.resolve(process.argv[2]), "..", "index.js"));
const { HttpAgent } = sdk("@ag-ui/client");

const warnings = [];
console.warn = (...a) => warnings.push(a.map(String).join(" "));
console.error = () => {}; // the SDK logs the failed run; the error is reported below

async function main() {
  const [url, raw] = process.argv.slice(3);
  const input = JSON.parse(raw);
  const agent = new HttpAgent({
    url,
    threadId: input.threadId,
    initialMessages: input.messages,
    initialState: input.state || {},
  });
  const events = [];
  let error = null;
  try {
    await agent.runAgent({ runId: input.runId }, { onEvent: ({ event }) => void events.push(event) });
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  process.stdout.write(JSON.stringify({ events, messages: agent.messages, state: agent.state, error, warnings }) + "\n");
}

main().catch((e) => {
  process.stderr.write("client.cjs: " + (e && e.stack ? e.stack : String(e)) + "\n");
  process.exit(2);
});
