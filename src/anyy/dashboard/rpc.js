// The Dashboard's connection to its Gateway: the access token (a one-time code in the URL fragment,
// #code=…, traded for it; a fragment is never sent to a server nor in a Referer; the token is kept in the
// tab's sessionStorage and passed on the WebSocket URL) and JSON-RPC over one WebSocket (docs/api.md),
// events included.

export const CONFLICT = -32009;
const TOKEN_KEY = "anyy.token";

// -- the token ------------------------------------------------------------------------------------
export function fragmentParams() {
  return new URLSearchParams(location.hash.replace(/^#/, ""));
}

function dropFromFragment(...names) {
  const params = fragmentParams();
  for (const name of names) params.delete(name);
  const rest = params.toString();
  history.replaceState(null, "", location.pathname + (rest ? "#" + rest : ""));
}

// The token, from the tab's sessionStorage, or from the address: `anyy dashboard` gives a one-time code
// (#code=…) that the page trades for the token at once (POST /auth/exchange), so the token itself never
// appears on a command line; #token=… is taken as it is. Either leaves the address bar at once.
export async function takeToken() {
  const params = fragmentParams();
  const code = params.get("code");
  const given = params.get("token");
  if (code || given) dropFromFragment("code", "token");
  if (given) sessionStorage.setItem(TOKEN_KEY, given);
  if (code) {
    const reply = await fetch("/auth/exchange", { method: "POST", body: code, cache: "no-store" });
    const body = await reply.json();
    if (!reply.ok) throw new Error(body.error || "the Gateway refused the code");
    sessionStorage.setItem(TOKEN_KEY, body.token);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

// A paired device (docs/remote.md): the QR code's link carries #pair=SECRET, traded at once for the
// device's own credential, which the Gateway sets as an HttpOnly cookie (this page never holds it); the
// short code typed by hand goes the same way. True when the device is now paired.
export async function pairDevice(given) {
  const code = given || fragmentParams().get("pair");
  if (!code) return false;
  dropFromFragment("pair");
  const name = navigator.userAgent.match(/iPhone|iPad|Android|Macintosh|Windows|Linux/)?.[0] || "browser";
  const reply = await fetch("/auth/pair", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ code, name }),
    cache: "no-store",
  });
  const body = await reply.json();
  if (!reply.ok) throw new Error(body.error || "the Gateway refused the pairing code");
  return true;
}

// U8: the access token of the Gateway running now, traded for the browser key the code exchange left as an
// HttpOnly cookie (sent to /auth/refresh only). The Gateway's token changes when it restarts; a tab holding
// a key comes back by itself. An error says what to do when the browser is not (or no longer) known.
export async function refreshToken() {
  const reply = await fetch("/auth/refresh", { method: "POST", cache: "no-store", credentials: "same-origin" });
  const body = await reply.json().catch(() => ({}));
  if (!reply.ok || !body.token) {
    const error = new Error(body.error || `the Gateway refused this browser (${reply.status})`);
    error.refused = reply.status === 401 || reply.status === 403;
    throw error;
  }
  sessionStorage.setItem(TOKEN_KEY, body.token);
  return body.token;
}

// -- JSON-RPC over the WebSocket --------------------------------------------------------------------
export class RpcError extends Error {
  constructor(error) {
    super(error.message);
    this.code = error.code;
  }
}

export class Rpc {
  constructor(url, onEvent, onClose) {
    this.nextId = 1;
    this.pending = new Map();
    this.onEvent = onEvent;
    this.ws = new WebSocket(url);
    this.ready = new Promise((resolve, reject) => {
      this.ws.addEventListener("open", () => resolve());
      this.ws.addEventListener("error", () => reject(new Error("cannot reach the Gateway")));
    });
    this.ws.addEventListener("message", (message) => this.receive(message.data));
    this.closeCode = null;
    this.closed = new Promise((resolve) => {
      this.ws.addEventListener("close", (event) => {
        this.closeCode = event.code;
        for (const { reject } of this.pending.values()) reject(new Error("the connection to the Gateway closed"));
        this.pending.clear();
        resolve(event);
        onClose(event);
      });
    });
  }

  close() {
    this.ws.close();
  }

  receive(data) {
    // The Gateway's refusal of a token comes as a binary frame before the close (code 4401): the close says it.
    if (typeof data !== "string") return;
    const message = JSON.parse(data);
    if (message.method === "event" && message.id === undefined) {
      this.onEvent(message.params);
      return;
    }
    const waiter = this.pending.get(message.id);
    if (!waiter) return;
    this.pending.delete(message.id);
    if (message.error) waiter.reject(new RpcError(message.error));
    else waiter.resolve(message.result);
  }

  call(method, params = {}) {
    const id = this.nextId++;
    if (this.ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error("not connected to the Gateway"));
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }
}
