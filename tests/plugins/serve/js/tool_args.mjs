// The real AG-UI client (@ag-ui/client's HttpAgent, which checks the order of the events
// it gets) on one run whose model streams a tool call's arguments in fragments.
// Usage: node tool_args.mjs URL THREAD TEXT; prints one JSON report on stdout: the
// events in the order the client handled them and the conversation it built.
import { HttpAgent } from "@ag-ui/client";

const [url, threadId, text] = process.argv.slice(2);
const agent = new HttpAgent({ url: `${url}/ag-ui`, threadId });
const events = [];
const subscriber = {
  onEvent: ({ event }) => {
    events.push({ type: event.type, toolCallId: event.toolCallId, delta: event.delta });
  },
  // what the client has assembled of the call while its arguments stream
  onToolCallArgsEvent: ({ toolCallBuffer }) => {
    events.push({ type: "buffer", buffer: toolCallBuffer });
  },
};
agent.addMessage({ id: "u1", role: "user", content: text });
const run = await agent.runAgent({}, subscriber);
console.log(JSON.stringify({ events, messages: agent.messages, result: run.result }));
