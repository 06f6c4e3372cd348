// The real AG-UI client (@ag-ui/client's HttpAgent) against a plait server: a run that
// pauses for approval, the resume that approves it, and a resume the server refuses.
// Usage: node approval.mjs URL [KEY]; prints one JSON report on stdout.
import { HttpAgent } from "@ag-ui/client";

const [url, key] = process.argv.slice(2);
const headers = key ? { Authorization: `Bearer ${key}` } : {};

function make(threadId) {
  return new HttpAgent({ url: `${url}/ag-ui`, headers, threadId });
}

const events = [];
const subscriber = { onEvent: ({ event }) => { events.push(event.type); } };

const agent = make("node-approval");
agent.addMessage({ id: "u1", role: "user", content: "Hi, I'm jane@example.com. Please refund order 1042." });
const first = await agent.runAgent({}, subscriber);
const interrupts = agent.pendingInterrupts;
const second = await agent.runAgent(
  {
    resume: interrupts.map((i) => ({
      interruptId: i.id,
      status: "resolved",
      payload: { decisions: [{ type: "approve", tool_call_id: i.toolCallId }] },
    })),
  },
  subscriber,
);

// A decision the interrupt does not allow: the server answers 409 and nothing runs.
const other = make("node-refused");
other.addMessage({ id: "u1", role: "user", content: "Please refund order 2077." });
await other.runAgent({});
let refused = null;
try {
  await other.runAgent({
    resume: other.pendingInterrupts.map((i) => ({
      interruptId: i.id,
      status: "resolved",
      payload: { decisions: [{ type: "respond", message: "done" }] },
    })),
  });
} catch (error) {
  refused = String(error && error.message ? error.message : error);
}

console.log(JSON.stringify({
  first: { newMessages: first.newMessages, interrupts },
  second: { result: second.result, newMessages: second.newMessages },
  pendingAfter: agent.pendingInterrupts,
  events,
  messages: agent.messages,
  refused,
  refusedPending: other.pendingInterrupts,
}));
