// Test doubles shared by the transport vectors and the interleaving harness: a fake clock (time
// moves only when the test moves it), a scripted WebSocket, and `settle` (run everything ready).
import type { Clock } from "../../src/lane.ts";

/** Lets every ready promise continuation and I/O callback run (no time passes on the fake clock). */
export async function settle(turns = 8): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
}

interface Timer { at: number; seq: number; fn: () => void }

/** A clock whose time moves only through `advance`/`runNext`; `t` is ms since the test's start. */
export class FakeClock implements Clock {
  t = 0;
  readonly epoch: number;
  #timers: Timer[] = [];
  #seq = 0;
  constructor(epoch: number) { this.epoch = epoch; }
  now = (): number => this.epoch + this.t;
  setTimeout = (fn: () => void, ms: number): unknown => {
    const timer = { at: this.t + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return timer;
  };
  clearTimeout = (h: unknown): void => {
    this.#timers = this.#timers.filter((x) => x !== h);
  };
  /** The time of the next timer, or null. */
  next(): number | null {
    let best: Timer | null = null;
    for (const x of this.#timers) if (!best || x.at < best.at || (x.at === best.at && x.seq < best.seq)) best = x;
    return best ? best.at : null;
  }
  /** Fires the next timer (moving time to it), then settles. False when there is none. */
  async runNext(): Promise<boolean> {
    let best: Timer | null = null;
    for (const x of this.#timers) if (!best || x.at < best.at || (x.at === best.at && x.seq < best.seq)) best = x;
    if (!best) return false;
    this.#timers = this.#timers.filter((x) => x !== best);
    this.t = Math.max(this.t, best.at);
    best.fn();
    await settle();
    return true;
  }
  /** Moves time by `ms`, firing (and settling after) every timer due on the way. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      const n = this.next();
      if (n === null || n > end) break;
      await this.runNext();
    }
    this.t = end;
  }
}

/** A WebSocket the test drives: constructions are recorded; open/close/message are the test's. */
export class ScriptedSocket {
  static made: ScriptedSocket[] = [];
  static throws = false;
  static onMade: ((s: ScriptedSocket) => void) | null = null;
  readyState = 0;
  sent: string[] = [];
  readonly url: string;
  readonly protocols: string[];
  #listeners: Record<string, Array<(e: any) => void>> = {};
  constructor(url: string, protocols: string[]) {
    this.url = url;
    this.protocols = protocols;
    ScriptedSocket.made.push(this);
    ScriptedSocket.onMade?.(this);
    if (ScriptedSocket.throws) throw new Error("Refused to connect: Content Security Policy");
  }
  addEventListener(t: string, f: (e: any) => void): void { (this.#listeners[t] ??= []).push(f); }
  emit(t: string, e: any = {}): void { for (const f of this.#listeners[t] ?? []) f(e); }
  open(): void { this.readyState = 1; this.emit("open"); }
  closeWith(code: number): void { this.readyState = 3; this.emit("close", { code }); }
  refuse(): void { this.readyState = 3; this.emit("error"); this.emit("close", { code: 1006 }); }
  message(m: unknown): void { this.emit("message", { data: JSON.stringify(m) }); }
  send(d: string): void { this.sent.push(d); }
  close(): void { this.readyState = 3; }
}
