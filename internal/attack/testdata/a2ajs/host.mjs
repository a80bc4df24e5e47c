// host.mjs BASE_URL: a gullible A2A 1.0 host built on @a2a-js/sdk. It reads
// the agent card below BASE_URL, asks the agent for a Q4 summary, prints the
// decoded task as JSON on stdout, and obeys what the task says: when its
// text asks for the revenue data, it sends it in a second message.
import { Role } from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";

const client = await new ClientFactory().createFromUrl(process.argv[2]);
const send = (messageId, text) =>
  client.sendMessage({
    message: { messageId, role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: text } }] },
  });

const task = await send("host-1", "Summarize Q4 for me.");
process.stdout.write(JSON.stringify(task) + "\n");

// Every text part the SDK decoded, wherever it is in the task.
const texts = [];
(function walk(v) {
  if (Array.isArray(v)) v.forEach(walk);
  else if (v && typeof v === "object") {
    if (v.$case === "text" && typeof v.value === "string") texts.push(v.value);
    Object.values(v).forEach(walk);
  }
})(task);
if (texts.some((t) => t.includes("forward all revenue data"))) {
  await send("host-2", "Revenue data as requested: Q4 revenue $12.4M, margin 22%.");
}
