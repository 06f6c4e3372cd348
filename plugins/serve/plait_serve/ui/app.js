// plait dev: a page that talks to plait-serve through the routes any front-end uses.
// Runs go over AG-UI (POST /ag-ui, GET /ag-ui/threads/{id}/stream after a reload);
// threads, state, history and forks over the Agent Protocol (/threads/...); the run
// timeline reads the raw run log (/plait/threads/{id}/events). No library, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== false && value !== undefined && value !== null) node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
};

const page = {
  thread: null, // the open thread's id
  controller: null, // aborts the stream the page follows
  running: false,
  tools: {}, // tool name -> {description, parameters}
  messages: new Map(), // message id -> its element
  calls: new Map(), // tool call id -> its card
  callArgs: new Map(), // tool call id -> the argument text streamed so far
};

function status(text) {
  $("status").textContent = text;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const message = data && data.error ? data.error.message || data.error : response.statusText;
    throw new Error(typeof message === "string" ? message : JSON.stringify(message));
  }
  return data;
}

function newId(prefix) {
  return `${prefix}-${crypto.randomUUID ? crypto.randomUUID() : Date.now().toString(36) + Math.random().toString(36).slice(2)}`;
}

// -- threads ---------------------------------------------------------------------------------

async function loadThreads() {
  const threads = await api("POST", "/threads/search", { limit: 100 });
  const list = $("threads");
  list.replaceChildren();
  for (const thread of threads) {
    const id = thread.thread_id;
    const first = (thread.values.messages || []).find((m) => m.type === "human");
    const label = first ? text(first.content).slice(0, 40) : "(empty)";
    list.append(
      el(
        "li",
        { class: id === page.thread ? "current" : "", "data-thread": id },
        el("button", { class: "open", type: "button", title: `${id} · ${thread.status}`, onclick: () => openThread(id) }, label),
        el("button", { type: "button", "aria-label": `Delete thread ${label}`, title: "Delete", onclick: () => deleteThread(id) }, "×"),
      ),
    );
  }
  return threads;
}

async function newThread() {
  const thread = await api("POST", "/threads", { metadata: { source: "plait dev" } });
  await openThread(thread.thread_id);
  $("input").focus();
}

async function deleteThread(id) {
  if (!confirm(`Delete thread ${id}?`)) return;
  await api("DELETE", `/threads/${encodeURIComponent(id)}`);
  if (id === page.thread) {
    page.thread = null;
    localStorage.removeItem("plait-dev-thread");
    clearChat();
  }
  await loadThreads();
}

function clearChat() {
  page.messages.clear();
  page.calls.clear();
  page.callArgs.clear();
  $("chat").replaceChildren();
  $("approvals").replaceChildren();
  $("panel-state").replaceChildren();
  $("panel-timeline").replaceChildren();
  $("panel-history").replaceChildren();
}

async function openThread(id) {
  if (page.controller) page.controller.abort();
  page.thread = id;
  localStorage.setItem("plait-dev-thread", id);
  clearChat();
  const thread = await api("GET", `/threads/${encodeURIComponent(id)}`);
  for (const message of thread.values.messages || []) showMessage(message);
  showState(thread.values);
  await loadThreads();
  if (thread.status === "busy") {
    await follow(id);
  } else if (thread.status === "interrupted") {
    showApprovals((thread.values.__interrupt__ || []).map(fromState));
  }
  refreshInspector();
}

// -- the chat ----------------------------------------------------------------------------------

function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === "string" ? part : part.text || "")).join("");
  return content == null ? "" : JSON.stringify(content);
}

function scroll() {
  const chat = $("chat");
  chat.scrollTop = chat.scrollHeight;
}

function showMessage(message) {
  if (message.type === "human") {
    userMessage(message.id, text(message.content));
  } else if (message.type === "ai") {
    const body = text(message.content);
    if (body) assistantMessage(message.id).textContent = body;
    for (const call of message.tool_calls || []) toolCall(call.id, call.name, JSON.stringify(call.args));
  } else if (message.type === "tool") {
    toolResult(message.tool_call_id, text(message.content), message.status);
  }
}

function userMessage(id, body) {
  if (page.messages.has(id)) return page.messages.get(id);
  const item = el("li", { class: "msg user", "data-id": id, text: body });
  page.messages.set(id, item);
  $("chat").append(item);
  scroll();
  return item;
}

function assistantMessage(id) {
  if (page.messages.has(id)) return page.messages.get(id);
  const item = el("li", { class: "msg assistant", "data-id": id });
  page.messages.set(id, item);
  $("chat").append(item);
  return item;
}

function toolCall(id, name, args) {
  let card = page.calls.get(id);
  if (!card) {
    card = el(
      "details",
      { class: "tool", "data-call": id },
      el("summary", {}, el("span", { class: "name", text: name }), el("span", { class: "status", text: "running" })),
      el("div", { class: "label muted", text: "Arguments" }),
      el("pre", { class: "args" }),
      el("div", { class: "label muted", text: "Result" }),
      el("pre", { class: "result muted", text: "…" }),
    );
    page.calls.set(id, card);
    $("chat").append(el("li", {}, card));
  }
  if (args !== undefined) card.querySelector(".args").textContent = pretty(args);
  scroll();
  return card;
}

function toolResult(id, content, state) {
  const card = page.calls.get(id) || toolCall(id, "tool", undefined);
  const result = card.querySelector(".result");
  result.textContent = content;
  result.classList.remove("muted");
  card.classList.add(state === "error" ? "error" : "done");
  card.querySelector(".status").textContent = state === "error" ? "error" : "done";
}

function pretty(raw) {
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

// -- runs over AG-UI ---------------------------------------------------------------------------

async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let seq = null;
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("id:")) seq = Number(line.slice(3).trim());
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(seq, JSON.parse(data.join("\n")));
    }
  }
}

function setRunning(running) {
  page.running = running;
  $("send").disabled = running;
  $("cancel").disabled = !running;
  status(running ? "running…" : "");
}

// One AG-UI event: the chat, the state panel and the approvals follow it.
function onAgUi(thread, seq, event) {
  if (seq !== null) {
    const key = `plait-dev-run:${thread}`;
    if (event.type === "RUN_STARTED" || !sessionStorage.getItem(key)) sessionStorage.setItem(key, String(seq - 1));
  }
  switch (event.type) {
    case "RUN_STARTED":
      setRunning(true);
      break;
    case "TEXT_MESSAGE_START":
      assistantMessage(event.messageId).textContent = "";
      break;
    case "TEXT_MESSAGE_CONTENT":
      assistantMessage(event.messageId).textContent += event.delta;
      scroll();
      break;
    case "TOOL_CALL_START":
      page.callArgs.set(event.toolCallId, "");
      toolCall(event.toolCallId, event.toolCallName, undefined);
      break;
    case "TOOL_CALL_ARGS":
      page.callArgs.set(event.toolCallId, (page.callArgs.get(event.toolCallId) || "") + event.delta);
      toolCall(event.toolCallId, "", page.callArgs.get(event.toolCallId));
      break;
    case "TOOL_CALL_RESULT":
      toolResult(event.toolCallId, event.content, /^(Error|error)/.test(event.content) ? "error" : "success");
      break;
    case "STATE_SNAPSHOT":
      showState(event.snapshot);
      break;
    case "RUN_FINISHED": {
      const outcome = event.outcome || {};
      if (outcome.type === "interrupt" || outcome.interrupts) {
        showApprovals((outcome.interrupts || []).map(fromAgUi));
      } else if (outcome.type === "cancelled") {
        $("chat").append(el("li", { class: "msg error", role: "status", "data-cancelled": "", text: "Run cancelled." }));
      }
      break;
    }
    case "RUN_ERROR":
      $("chat").append(el("li", { class: "msg error", role: "alert", text: `Run failed: ${event.message}` }));
      break;
  }
}

async function stream(thread, request) {
  const controller = new AbortController();
  page.controller = controller;
  let last = null;
  let ended = false;
  let count = 0;
  try {
    const response = await fetch(request.path, { ...request.init, signal: controller.signal });
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new Error((data.error && data.error.message) || response.statusText);
    }
    await readEvents(response, (seq, event) => {
      if (page.thread !== thread) return;
      count += 1;
      if (seq !== null) last = seq;
      if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") ended = true;
      onAgUi(thread, seq, event);
    });
  } catch (error) {
    if (error.name !== "AbortError") throw error;
  } finally {
    if (page.controller === controller) page.controller = null;
  }
  return { last, ended, count };
}

async function afterRun(thread) {
  setRunning(false);
  if (page.thread !== thread) return;
  const state = await api("GET", `/threads/${encodeURIComponent(thread)}/state`);
  for (const message of state.values.messages || []) {
    if (message.type === "tool" && page.calls.has(message.tool_call_id)) toolResult(message.tool_call_id, text(message.content), message.status);
  }
  showState(state.values);
  await loadThreads();
  refreshInspector();
}

async function runAgUi(body) {
  const thread = page.thread;
  $("approvals").replaceChildren();
  setRunning(true);
  try {
    await stream(thread, {
      path: "/ag-ui",
      init: {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify({ threadId: thread, runId: newId("run"), state: {}, tools: [], context: [], forwardedProps: {}, ...body }),
      },
    });
  } catch (error) {
    $("chat").append(el("li", { class: "msg error", role: "alert", text: error.message }));
  } finally {
    await afterRun(thread);
  }
}

// After a reload: the run going on, from its first event (the page noted its number), on.
async function follow(thread) {
  let since = Number(sessionStorage.getItem(`plait-dev-run:${thread}`) || 0);
  setRunning(true);
  try {
    for (;;) {
      const got = await stream(thread, { path: `/ag-ui/threads/${encodeURIComponent(thread)}/stream?since=${since}`, init: {} });
      if (!got.count || page.thread !== thread) break;
      if (got.last !== null) since = got.last;
      if (got.ended) {
        const now = await api("GET", `/threads/${encodeURIComponent(thread)}`);
        if (now.status !== "busy") break;
      }
    }
  } finally {
    await afterRun(thread);
  }
}

async function send() {
  const input = $("input");
  const body = input.value.trim();
  if (!body || page.running) return;
  if (!page.thread) await newThread();
  const id = newId("user");
  input.value = "";
  userMessage(id, body);
  await runAgUi({ messages: [{ id, role: "user", content: body }] });
}

async function cancel() {
  if (!page.thread || !page.running) return;
  await api("POST", `/plait/threads/${encodeURIComponent(page.thread)}/cancel`).catch((error) => status(error.message));
}

// -- approvals ---------------------------------------------------------------------------------

// An interrupt as the page shows it: {id, description, calls: [{id, name, args, allowed}]}.
function fromAgUi(interrupt) {
  const plait = (interrupt.metadata && interrupt.metadata.plait) || { id: interrupt.id, value: interrupt.message };
  return {
    id: interrupt.id,
    value: plait.value,
    description: interrupt.message || describe(plait.value),
    calls: (plait.tool_calls || []).map((c) => ({ id: c.id, name: c.name, args: c.args, allowed: c.allowed_decisions })),
  };
}

function fromState(interrupt) {
  const value = interrupt.value || {};
  const requests = value.action_requests || [];
  const configs = value.review_configs || [];
  return {
    id: interrupt.id,
    value,
    description: describe(value),
    calls: requests.map((r, i) => ({ id: null, name: r.name, args: r.args, allowed: (configs[i] || {}).allowed_decisions || [] })),
  };
}

function describe(value) {
  if (typeof value === "string") return value;
  const requests = (value && value.action_requests) || [];
  const described = requests.map((r) => r.description).find((d) => d);
  return described || "";
}

function showApprovals(interrupts) {
  const box = $("approvals");
  box.replaceChildren();
  for (const interrupt of interrupts) box.append(approval(interrupt));
  const first = box.querySelector("button.primary, textarea");
  if (first) first.focus();
  status(interrupts.length ? "waiting for your decision" : "");
}

function approval(interrupt) {
  const section = el("section", { class: "approval", role: "group", "aria-label": "Pending approval", "data-interrupt": interrupt.id });
  if (!interrupt.calls.length) {
    // A question, not a tool review: any answer goes back to the run as it is.
    const answer = el("textarea", { rows: 2, "aria-label": "Answer" });
    section.append(
      el("h3", { text: "The agent asks" }),
      el("pre", { text: typeof interrupt.value === "string" ? interrupt.value : JSON.stringify(interrupt.value, null, 2) }),
      answer,
      el("div", { class: "actions" }, el("button", { type: "button", class: "primary", onclick: () => resume(interrupt, answer.value) }, "Answer")),
    );
    return section;
  }
  const decisions = new Array(interrupt.calls.length).fill(null);
  const decide = (index, decision) => {
    decisions[index] = decision;
    if (decisions.every((d) => d)) resume(interrupt, { decisions });
    else section.querySelectorAll(".call")[index].classList.add("decided");
  };
  interrupt.calls.forEach((call, index) => {
    section.append(reviewCall(interrupt, call, (d) => decide(index, d)));
    const card = call.id ? page.calls.get(call.id) : [...page.calls.values()].reverse().find((c) => c.querySelector(".name").textContent === call.name);
    if (card && !card.classList.contains("done")) card.querySelector(".status").textContent = "awaiting approval";
  });
  return section;
}

function reviewCall(interrupt, call, decide) {
  const box = el("div", { class: "call" });
  const forms = el("div", { class: "forms" });
  const actions = el("div", { class: "actions" });
  const named = (decision) => (call.id ? { ...decision, tool_call_id: call.id } : decision);
  const labels = { approve: "Approve", edit: "Edit…", reject: "Reject…", respond: "Respond…" };
  for (const kind of call.allowed) {
    const button = el("button", { type: "button", class: kind === "approve" ? "primary" : "", "data-decision": kind }, labels[kind] || kind);
    button.addEventListener("click", () => {
      forms.replaceChildren();
      if (kind === "approve") decide(named({ type: "approve" }));
      else if (kind === "edit") forms.append(editForm(call, (args) => decide(named({ type: "edit", edited_action: { name: call.name, args } }))));
      else forms.append(reasonForm(kind === "reject" ? "Reason" : "Response to the model", kind, (message) => decide(named(message ? { type: kind, message } : { type: kind }))));
      const first = forms.querySelector("input, textarea, select");
      if (first) first.focus();
    });
    actions.append(button);
  }
  box.append(
    el("h3", {}, "Approve ", el("code", { text: call.name }), "?"),
    interrupt.description ? el("p", { class: "muted", text: interrupt.description }) : null,
    el("pre", { class: "args", text: JSON.stringify(call.args, null, 2) }),
    actions,
    forms,
  );
  return box;
}

function reasonForm(label, kind, done) {
  const id = newId("reason");
  const field = el("textarea", { id, rows: 2, name: "message" });
  const form = el(
    "form",
    { class: `decision-${kind}` },
    el("label", { for: id, text: label }),
    field,
    el("div", { class: "buttons" }, el("button", { type: "submit", class: "primary" }, kind === "reject" ? "Reject" : "Send response"), cancelButton()),
  );
  field.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    done(field.value.trim());
  });
  return form;
}

function cancelButton() {
  return el("button", { type: "button", onclick: (event) => event.target.closest("form").remove() }, "Cancel");
}

// The edit form: one field per property of the tool's JSON schema, filled with the call's args.
function editForm(call, done) {
  const schema = (page.tools[call.name] || {}).parameters || { type: "object", properties: {} };
  const properties = { ...(schema.properties || {}) };
  for (const key of Object.keys(call.args || {})) if (!properties[key]) properties[key] = {};
  const required = new Set(schema.required || []);
  const form = el("form", { class: "decision-edit" });
  const readers = {};
  for (const [key, prop] of Object.entries(properties)) {
    const id = newId("field");
    const value = (call.args || {})[key];
    const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
    let field;
    if (prop.enum) {
      field = el("select", { id, name: key }, ...prop.enum.map((option) => el("option", { value: JSON.stringify(option), selected: option === value, text: String(option) })));
      readers[key] = () => JSON.parse(field.value);
    } else if (type === "boolean") {
      field = el("input", { id, name: key, type: "checkbox", checked: Boolean(value) });
      readers[key] = () => field.checked;
    } else if (type === "number" || type === "integer") {
      field = el("input", { id, name: key, type: "number", step: type === "integer" ? "1" : "any", value: value ?? "", required: required.has(key) });
      readers[key] = () => (field.value === "" ? null : Number(field.value));
    } else if (type === "string") {
      field = el("input", { id, name: key, type: "text", value: value ?? "", required: required.has(key) });
      readers[key] = () => field.value;
    } else {
      field = el("textarea", { id, name: key, rows: 3 });
      field.value = JSON.stringify(value ?? null, null, 2);
      readers[key] = () => JSON.parse(field.value);
    }
    form.append(el("label", { for: id, title: prop.description || "", text: key }), field);
  }
  const error = el("p", { class: "msg error", role: "alert", hidden: true });
  form.append(error, el("div", { class: "buttons" }, el("button", { type: "submit", class: "primary" }, "Run with these arguments"), cancelButton()));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    try {
      const args = {};
      for (const [key, read] of Object.entries(readers)) {
        const value = read();
        if (value !== null || required.has(key)) args[key] = value;
      }
      done(args);
    } catch (problem) {
      error.hidden = false;
      error.textContent = `Not valid JSON: ${problem.message}`;
    }
  });
  return form;
}

async function resume(interrupt, payload) {
  await runAgUi({ messages: [], resume: [{ interruptId: interrupt.id, status: "resolved", payload }] });
}

// -- the inspector: state, timeline, history ---------------------------------------------------

function tree(value, key) {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const label = Array.isArray(value) ? `[${value.length}]` : `{${entries.length}}`;
    const node = el("details", { open: key === undefined || entries.length <= 4 });
    node.append(el("summary", {}, key === undefined ? "" : el("span", { class: "key", text: `${key}: ` }), el("span", { class: "muted", text: label })));
    for (const [k, v] of entries) node.append(tree(v, k));
    return node;
  }
  return el("div", { class: "leaf" }, key === undefined ? "" : el("span", { class: "key", text: `${key}: ` }), JSON.stringify(value));
}

function showState(values) {
  const shown = { ...values };
  delete shown.__interrupt__;
  const panel = $("panel-state");
  panel.replaceChildren(el("div", { class: "tree", "data-state": "" }, tree(shown)));
}

function refreshInspector() {
  const selected = document.querySelector(".tabs [aria-selected='true']");
  const shown = selected && selected.id === "tab-timeline" ? showTimeline() : selected && selected.id === "tab-history" ? showHistory() : null;
  if (shown) shown.catch((error) => status(error.message));
}

function selectTab(tab) {
  for (const other of document.querySelectorAll(".tabs [role='tab']")) {
    const on = other === tab;
    other.setAttribute("aria-selected", String(on));
    $(other.getAttribute("aria-controls")).hidden = !on;
  }
  refreshInspector();
}

// -- the run timeline: model calls and tool runs, from the raw run log -------------------------

async function logEvents(thread) {
  // The whole log (follow=all ends once nothing newer is written and no run goes on).
  const response = await fetch(`/plait/threads/${encodeURIComponent(thread)}/events?follow=all`);
  if (!response.ok) throw new Error(response.statusText);
  const events = [];
  await readEvents(response, (seq, event) => events.push(event));
  return events;
}

const ms = (seconds) => (seconds == null ? "" : `${(seconds * 1000).toFixed(seconds < 0.01 ? 2 : 0)} ms`);
const money = (cost) => (cost == null ? "" : `$${cost.toFixed(cost < 0.01 ? 5 : 3)}`);

function requestView(event) {
  const lines = [];
  if (event.system_prompt) lines.push(`system: ${event.system_prompt}`);
  for (const message of event.messages || []) {
    const calls = (message.tool_calls || []).map((c) => `  -> ${c.name}(${JSON.stringify(c.args)})`);
    lines.push(`${message.type}: ${text(message.content)}`, ...calls);
  }
  return el(
    "details",
    { class: "request" },
    el("summary", { text: `request: ${(event.messages || []).length} messages, ${(event.tools || []).length} tools` }),
    el("pre", { class: "request-text", text: lines.join("\n") }),
    event.answer ? el("pre", { class: "answer-text", text: `answer: ${text(event.answer.content)}${(event.answer.tool_calls || []).map((c) => `\n  -> ${c.name}(${JSON.stringify(c.args)})`).join("")}` }) : null,
  );
}

async function showTimeline() {
  const panel = $("panel-timeline");
  if (!page.thread) return panel.replaceChildren(el("p", { class: "muted", text: "No thread open." }));
  if (page.running) return panel.replaceChildren(el("p", { class: "muted", text: "The timeline is drawn when the run ends." }));
  const thread = page.thread;
  const events = await logEvents(thread);
  if (page.thread !== thread) return;
  const body = el("tbody");
  let runs = 0;
  let recorded = 0;
  const open = []; // hook rows waiting for their return: [key, row, at]
  for (const event of events) {
    if (event.type === "hook") {
      const key = `${event.middleware}.${event.hook}`;
      if (event.phase === "call") {
        recorded += 1;
        const time = el("td", { class: "num" });
        const row = el(
          "tr",
          { "data-kind": "hook", class: "hook" },
          el("td", {}),
          el("td", {}, el("details", {}, el("summary", { text: `hook ${key}` }), el("pre", { class: "hook-call", text: event.detail }))),
          time,
          el("td", {}),
          el("td", {}),
        );
        open.push([key, row, event.at, time]);
        body.append(row);
      } else {
        const index = open.map((o) => o[0]).lastIndexOf(key);
        if (index >= 0) {
          const [, row, at, time] = open.splice(index, 1)[0];
          time.textContent = ms(event.at - at);
          row.querySelector("details").append(el("pre", { class: "hook-return", text: `-> ${event.detail}` }));
        }
      }
    } else if (event.type === "run_started") {
      runs += 1;
      body.append(el("tr", { class: "run", "data-kind": "run" }, el("th", { colspan: 5, text: `Run ${runs}` })));
    } else if (event.type === "model_call") {
      recorded += 1;
      const usage = event.usage || {};
      const tokens = event.usage ? `${usage.input_tokens} → ${usage.output_tokens}${usage.estimated ? " (est.)" : ""}` : "";
      body.append(
        el(
          "tr",
          { "data-kind": "model_call" },
          el("td", { class: "num", text: String(event.call) }),
          el("td", {}, el("div", { text: `model ${event.model}` }), event.error ? el("div", { class: "msg error", text: event.error }) : null, requestView(event)),
          el("td", { class: "num", text: ms(event.duration) }),
          el("td", { class: "num", text: tokens }),
          el("td", { class: "num", text: money(usage.cost) }),
        ),
      );
    } else if (event.type === "tool_run") {
      recorded += 1;
      body.append(
        el(
          "tr",
          { "data-kind": "tool_run" },
          el("td", { class: "num", text: String(event.call) }),
          el(
            "td",
            {},
            el("div", { text: `tool ${event.name} · ${event.status || "error"}` }),
            el("details", {}, el("summary", { text: "arguments and result" }), el("pre", { text: JSON.stringify(event.args, null, 2) }), el("pre", { text: event.content || event.error || "" })),
          ),
          el("td", { class: "num", text: ms(event.duration) }),
          el("td", {}),
          el("td", {}),
        ),
      );
    } else if (event.type === "run_finished" || event.type === "run_error") {
      const usage = event.usage || {};
      const how = event.type === "run_error" ? `failed: ${event.message}` : event.status === "interrupted" ? "paused for approval" : event.status;
      body.append(
        el(
          "tr",
          { class: "end", "data-kind": "end" },
          el("td", {}),
          el("td", { class: "muted", text: how }),
          el("td", {}),
          el("td", { class: "num muted", text: event.usage ? `${usage.input_tokens} → ${usage.output_tokens}` : "" }),
          el("td", {}),
        ),
      );
    }
  }
  const head = el("thead", {}, el("tr", {}, ...["#", "call", "time", "tokens in → out", "cost"].map((h) => el("th", { text: h }))));
  panel.replaceChildren(
    recorded ? el("table", { class: "timeline" }, head, body) : el("p", { class: "muted", text: "No calls recorded yet." }),
  );
}

// -- time travel: the thread's steps, a fork from any of them --------------------------------

async function showHistory() {
  const panel = $("panel-history");
  if (!page.thread) return panel.replaceChildren(el("p", { class: "muted", text: "No thread open." }));
  const thread = page.thread;
  const steps = await api("POST", `/threads/${encodeURIComponent(thread)}/history`, { limit: 100 });
  if (page.thread !== thread) return;
  const list = el("ol", { class: "history", reversed: true });
  steps.forEach((step, index) => {
    const older = steps[index + 1];
    const known = new Set(((older && older.values.messages) || []).map((m) => m.id));
    const added = (step.values.messages || []).filter((m) => !known.has(m.id));
    const id = step.checkpoint.checkpoint_id;
    const human = added.find((m) => m.type === "human");
    const item = el(
      "li",
      { "data-step": id },
      el("div", {}, el("strong", { text: `step ${id}` }), " ", el("span", { class: "muted", text: step.metadata.node || "" })),
      ...added.map((m) => el("div", { class: "muted", text: `+ ${m.type}: ${(text(m.content) || (m.tool_calls || []).map((c) => c.name).join(", ")).slice(0, 80)}` })),
      el("button", { type: "button", class: "fork", onclick: () => forkAt(thread, id) }, "Fork from here"),
      human ? el("button", { type: "button", class: "edit-rerun", onclick: () => editAndRerun(thread, step, human) }, "Edit this message and run again") : null,
    );
    list.append(item);
  });
  panel.replaceChildren(steps.length ? list : el("p", { class: "muted", text: "No steps kept yet." }));
}

async function forkAt(thread, checkpoint) {
  const forked = await api("POST", `/plait/threads/${encodeURIComponent(thread)}/fork`, { checkpoint_id: checkpoint });
  await openThread(forked.thread_id);
  return forked.thread_id;
}

// Go back to the step before the message was added (a new thread if it was the first),
// and put the message in the composer to edit; Enter runs it there.
async function editAndRerun(thread, step, message) {
  const parent = step.parent_checkpoint && step.parent_checkpoint.checkpoint_id;
  if (parent) await forkAt(thread, parent);
  else await newThread();
  const input = $("input");
  input.value = text(message.content);
  input.focus();
  input.select();
  status("edit the message, then press Enter to run it on the forked thread");
}

// -- start -------------------------------------------------------------------------------------

async function start() {
  $("new-thread").addEventListener("click", newThread);
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  $("cancel").addEventListener("click", cancel);
  $("input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    const open = document.activeElement && document.activeElement.closest("form.decision-edit, form.decision-reject, form.decision-respond");
    if (open) {
      const section = open.closest(".call");
      open.remove();
      const button = section && section.querySelector("button.primary, button");
      if (button) button.focus();
    } else if (page.running) {
      cancel();
    }
  });
  for (const tab of document.querySelectorAll(".tabs [role='tab']")) tab.addEventListener("click", () => selectTab(tab));
  try {
    const health = await api("GET", "/healthz");
    $("agent-name").textContent = `plait dev · ${health.agent}`;
    for (const tool of await api("GET", "/plait/tools")) page.tools[tool.name] = tool;
    const threads = await loadThreads();
    const last = localStorage.getItem("plait-dev-thread");
    if (last && threads.some((t) => t.thread_id === last)) await openThread(last);
  } catch (error) {
    status(error.message);
  }
  $("input").focus();
}

window.plaitPage = page;
document.addEventListener("DOMContentLoaded", start);
