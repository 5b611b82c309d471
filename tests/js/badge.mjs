// A live-badge client for tests and benchmarks: a WebSocket to /v1/notifications/stream that
// authenticates the way a browser must (subprotocol list), and queues the messages it gets.
import { userToken } from "./harness.mjs";

export class BadgeSocket {
  static open(base, user, { token = userToken(user) } = {}) {
    const s = new BadgeSocket();
    s.ws = new WebSocket(`${base.replace(/^http/, "ws")}/v1/notifications/stream`, ["inbox.v1", `auth.${token}`]);
    s.messages = [];
    s.waiters = [];
    s.closed = new Promise((resolve) => s.ws.addEventListener("close", (e) => resolve(e)));
    s.ws.addEventListener("message", (e) => {
      const m = { at: performance.now(), ...JSON.parse(e.data) };
      s.messages.push(m);
      s.waiters = s.waiters.filter((w) => !w(m));
    });
    s.opened = new Promise((resolve, reject) => {
      s.ws.addEventListener("open", () => resolve(s));
      s.ws.addEventListener("error", () => reject(new Error("WebSocket handshake refused")));
    });
    return s;
  }

  /** The first message (already received or coming) that satisfies `pred`. */
  next(pred, what = "a badge message", timeoutMs = 30_000) {
    const hit = this.messages.find(pred);
    if (hit) return Promise.resolve(hit);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}: got ${JSON.stringify(this.messages)}`)), timeoutMs);
      this.waiters.push((m) => {
        if (!pred(m)) return false;
        clearTimeout(timer);
        resolve(m);
        return true;
      });
    });
  }

  close() { this.ws.close(1000, "done"); return this.closed; }
}
