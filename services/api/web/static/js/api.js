// The API client: GraphQL over HTTP for queries and mutations, graphql-transport-ws
// (the protocol Strawberry speaks) for subscriptions. The token lives in localStorage.

export const TOKEN_KEY = "benchstack.token";

export function getToken() {
  return localStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(token) {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
  window.dispatchEvent(new CustomEvent("tokenchange"));
}

export class ApiError extends Error {
  constructor(message, { status = 0, errors = [] } = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.errors = errors;
  }
}

function authHeaders() {
  const token = getToken();
  if (!token) throw new ApiError("Enter your API token above first.", { status: 401 });
  return { Authorization: `Bearer ${token}` };
}

export async function gql(query, variables = {}) {
  const headers = { ...authHeaders(), "Content-Type": "application/json", Accept: "application/json" };
  let response;
  try {
    response = await fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  } catch (err) {
    throw new ApiError(`The API cannot be reached (${err.message}).`);
  }
  if (response.status === 401) {
    throw new ApiError("The API refused the token (401). Check it and save it again.", { status: 401 });
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(`Unexpected reply from the API (HTTP ${response.status}).`, { status: response.status });
  }
  if (body.errors?.length) {
    throw new ApiError(body.errors.map((e) => e.message).join("; "), { status: response.status, errors: body.errors });
  }
  if (!response.ok) throw new ApiError(`HTTP ${response.status}`, { status: response.status });
  return body.data;
}

// Fetches a protected file (e.g. a run log) with the token, since a plain link cannot send it.
export async function fetchBlob(url) {
  const response = await fetch(url, { headers: authHeaders() });
  if (!response.ok) throw new ApiError(`${url}: HTTP ${response.status}`, { status: response.status });
  return response.blob();
}

// Runs one subscription; returns a function that stops it. Callbacks: next(data),
// error(ApiError), complete(). Exactly one of error/complete is called, once.
export function subscribe(query, variables, { next, error, complete }) {
  const url = new URL("/graphql", window.location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url, "graphql-transport-ws");
  const send = (message) => ws.send(JSON.stringify(message));
  let finished = false;
  const finish = (callback, arg) => {
    if (finished) return;
    finished = true;
    if (ws.readyState === WebSocket.OPEN) ws.close(1000);
    callback?.(arg);
  };

  // Browsers cannot set headers on a websocket: the token goes in connection_init.
  ws.addEventListener("open", () => send({ type: "connection_init", payload: { Authorization: `Bearer ${getToken()}` } }));
  ws.addEventListener("message", (event) => {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      finish(error, new ApiError("The update stream sent something that is not JSON."));
      return;
    }
    switch (message.type) {
      case "connection_ack":
        send({ id: "1", type: "subscribe", payload: { query, variables } });
        break;
      case "ping":
        send({ type: "pong" });
        break;
      case "next":
        if (message.payload?.errors?.length) {
          finish(error, new ApiError(message.payload.errors.map((e) => e.message).join("; ")));
        } else {
          next(message.payload.data);
        }
        break;
      case "error":
        finish(error, new ApiError((message.payload ?? []).map((e) => e.message).join("; ") || "subscription error"));
        break;
      case "complete":
        finish(complete);
        break;
      default:
        break;
    }
  });
  ws.addEventListener("close", (event) => {
    // 4403 is graphql-transport-ws' "Forbidden": the token was refused at connection_init.
    const why = event.code === 4403 ? "the API refused the token" : `the connection closed (code ${event.code})`;
    finish(error, new ApiError(`Live updates stopped: ${why}.`, { status: event.code }));
  });
  ws.addEventListener("error", () => finish(error, new ApiError("Live updates: the websocket failed.")));

  return () => {
    if (finished) return;
    finished = true;
    if (ws.readyState === WebSocket.OPEN) {
      send({ id: "1", type: "complete" });
      ws.close(1000);
    } else if (ws.readyState === WebSocket.CONNECTING) {
      ws.addEventListener("open", () => ws.close(1000));
    }
  };
}
