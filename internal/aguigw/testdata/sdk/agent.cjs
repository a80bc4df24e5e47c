// agent.cjs: an AG-UI agent built on the official TypeScript SDK
// (@ag-ui/encoder's EventEncoder, @ag-ui/core's event schemas), for
// warden's AG-UI gateway tests. It is not a language model: each run plays
// the script that the last user message names, so that two runs of the
// same input emit the same events.
//
//   node agent.cjs NODE_MODULES PORT
//
// POST /              a RunAgentInput; answers with the encoder's stream
// GET  /emitted?runId=R  the SSE frames the encoder produced for run R, as a
//                     JSON array of strings: the oracle of what left the agent
//
// Every event is checked with @ag-ui/core's EventSchema before it is
// encoded, so that the agent never emits what the SDK itself calls invalid.
// It listens on 127.0.0.1 only. NODE_MODULES is the folder scripts/deps.sh
// installed the SDK into.
"use strict";

const http = require("node:http");
const path = require("node:path");
const { createRequire } = require("node:module");

const sdk = createRequire(path.join(path.resolve(process.argv[2]), "..", "index.js"));
const { EventEncoder } = sdk("@ag-ui/encoder");
const { EventType: T } = sdk("@ag-ui/core");
const { EventSchema } = sdk("@ag-ui/core/schemas");

const port = Number(process.argv[3]);
const emitted = new Map(); // runId → frames

// scripts maps the text of the last user message to the events of a run.
const scripts = {
  // Every event family the 1.0 encoder can produce in one benign run.
  representative: (input) => {
    const sys = input.messages.filter((m) => m.role === "system");
    const user = input.messages.filter((m) => m.role === "user");
    return [
      { type: T.RUN_STARTED, threadId: input.threadId, runId: input.runId },
      { type: T.STEP_STARTED, stepName: "plan" },
      { type: T.REASONING_START, messageId: "r1" },
      { type: T.REASONING_MESSAGE_START, messageId: "r1", role: "reasoning" },
      { type: T.REASONING_MESSAGE_CONTENT, messageId: "r1", delta: "The user wants the weather; " },
      { type: T.REASONING_MESSAGE_CONTENT, messageId: "r1", delta: "I will call the tool." },
      { type: T.REASONING_MESSAGE_END, messageId: "r1" },
      { type: T.REASONING_ENCRYPTED_VALUE, subtype: "message", entityId: "r1", encryptedValue: "b64:c2VjcmV0" },
      { type: T.REASONING_END, messageId: "r1" },
      { type: T.TEXT_MESSAGE_START, messageId: "a1", role: "assistant" },
      { type: T.TEXT_MESSAGE_CONTENT, messageId: "a1", delta: "Let me check " },
      { type: T.TEXT_MESSAGE_CONTENT, messageId: "a1", delta: "the weather in " },
      { type: T.TEXT_MESSAGE_CONTENT, messageId: "a1", delta: "Paris — ☀️ “quoted” \\ \n next line" },
      { type: T.TEXT_MESSAGE_CONTENT, messageId: "a1", delta: "" },
      { type: T.TEXT_MESSAGE_END, messageId: "a1" },
      { type: T.TOOL_CALL_START, toolCallId: "c1", toolCallName: "get_weather", parentMessageId: "a1" },
      { type: T.TOOL_CALL_ARGS, toolCallId: "c1", delta: '{"city":' },
      { type: T.TOOL_CALL_ARGS, toolCallId: "c1", delta: '"Paris","units":"metric"}' },
      { type: T.TOOL_CALL_END, toolCallId: "c1" },
      { type: T.TOOL_CALL_RESULT, messageId: "t1", toolCallId: "c1", role: "tool", content: '{"temp":21,"sky":"clear"}' },
      // 1.0: a tool result may be content parts rather than a string.
      { type: T.TOOL_CALL_RESULT, messageId: "t2", toolCallId: "c1", role: "tool",
        content: [{ type: "text", text: "21 °C and clear in Paris." }] },
      { type: T.STATE_SNAPSHOT, snapshot: { city: "Paris", forecast: { temp: 21, days: [1, 2, 3] }, ok: true, note: null } },
      { type: T.STATE_DELTA, delta: [
        { op: "replace", path: "/forecast/temp", value: 22 },
        { op: "add", path: "/forecast/days/-", value: 4 },
        { op: "remove", path: "/note" },
      ] },
      { type: T.ACTIVITY_SNAPSHOT, messageId: "act1", activityType: "progress", content: { step: 1, of: 2, label: "Fetching" } },
      { type: T.ACTIVITY_DELTA, messageId: "act1", activityType: "progress", patch: [{ op: "replace", path: "/step", value: 2 }] },
      { type: T.TEXT_MESSAGE_CHUNK, messageId: "a2", role: "assistant", delta: "It is sunny" },
      { type: T.TEXT_MESSAGE_CHUNK, messageId: "a2", delta: " today." },
      { type: T.TOOL_CALL_CHUNK, toolCallId: "c2", toolCallName: "save_note", parentMessageId: "a2", delta: '{"text":"sunny"}' },
      { type: T.CUSTOM, name: "ui.highlight", value: { target: "a2", colour: "yellow" } },
      { type: T.RAW, event: { provider: "example", kind: "usage", tokens: 42 }, source: "example-llm" },
      { type: T.MESSAGES_SNAPSHOT, messages: [
        ...sys,
        ...user,
        { id: "a1", role: "assistant", content: "Let me check the weather in Paris.",
          toolCalls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","units":"metric"}' } }] },
        { id: "t1", role: "tool", toolCallId: "c1", content: '{"temp":21,"sky":"clear"}' },
        { id: "a2", role: "assistant", content: "It is sunny today." },
      ] },
      { type: T.STEP_FINISHED, stepName: "plan" },
      { type: T.RUN_FINISHED, threadId: input.threadId, runId: input.runId, result: { answer: "sunny", temp: 22 } },
    ];
  },
  // A run the agent itself ends with RUN_ERROR.
  failing: (input) => [
    { type: T.RUN_STARTED, threadId: input.threadId, runId: input.runId },
    { type: T.TEXT_MESSAGE_START, messageId: "a1", role: "assistant" },
    { type: T.TEXT_MESSAGE_CONTENT, messageId: "a1", delta: "Working on it" },
    { type: T.TEXT_MESSAGE_END, messageId: "a1" },
    { type: T.RUN_ERROR, message: "the model provider timed out", code: "provider_timeout" },
  ],
  // Subagents and a step inside one (1.0).
  subagents: (input) => [
    { type: T.RUN_STARTED, threadId: input.threadId, runId: input.runId },
    { type: T.SUBAGENT_STARTED, subagentRunId: "sub1", name: "researcher", description: "looks things up" },
    { type: T.TEXT_MESSAGE_START, messageId: "s1", role: "assistant", subagentRunId: "sub1" },
    { type: T.TEXT_MESSAGE_CONTENT, messageId: "s1", delta: "Found three sources.", subagentRunId: "sub1" },
    { type: T.TEXT_MESSAGE_END, messageId: "s1", subagentRunId: "sub1" },
    { type: T.SUBAGENT_FINISHED, subagentRunId: "sub1", result: { sources: 3 } },
    { type: T.SUBAGENT_STARTED, subagentRunId: "sub2", name: "writer" },
    { type: T.SUBAGENT_ERROR, subagentRunId: "sub2", message: "quota exceeded", code: "quota" },
    { type: T.RUN_FINISHED, threadId: input.threadId, runId: input.runId },
  ],
};

function lastUserText(input) {
  const users = (input.messages || []).filter((m) => m.role === "user");
  const c = users.length ? users[users.length - 1].content : "";
  return typeof c === "string" ? c : "";
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  if (req.method === "GET" && url.pathname === "/emitted") {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(emitted.get(url.searchParams.get("runId")) || null));
    return;
  }
  if (req.method !== "POST") {
    res.writeHead(405).end();
    return;
  }
  let body = "";
  req.setEncoding("utf8");
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    let input;
    try {
      input = JSON.parse(body);
    } catch (e) {
      res.writeHead(400, { "Content-Type": "text/plain" }).end("bad input: " + e.message);
      return;
    }
    const script = scripts[lastUserText(input)];
    if (!script) {
      res.writeHead(404, { "Content-Type": "text/plain" }).end("no script named " + JSON.stringify(lastUserText(input)));
      return;
    }
    // The encoder picks the stream's format from the client's Accept, as a
    // real agent does; warden asks for text/event-stream.
    const encoder = new EventEncoder({ accept: req.headers.accept });
    const frames = [];
    emitted.set(input.runId, frames);
    res.writeHead(200, { "Content-Type": encoder.getContentType(), "Cache-Control": "no-cache" });
    for (const ev of script(input)) {
      EventSchema.parse(ev); // never emit what the SDK calls invalid
      const frame = encoder.encode(ev);
      frames.push(frame);
      res.write(frame);
    }
    res.end();
  });
});

server.listen(port, "127.0.0.1");
process.on("SIGTERM", () => server.close(() => process.exit(0)));
