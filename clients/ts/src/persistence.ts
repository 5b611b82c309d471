// Where a store is kept between runs. The default keeps nothing across restarts (memory); the
// IndexedDB (browsers) and AsyncStorage (React Native) adapters are separate entry points so
// the core carries neither.
import type { PersistedState } from "./store.ts";

/** Keeps one persisted inbox per user key. Implementations must store a copy, not a reference. */
export interface Persistence {
  load(key: string): Promise<PersistedState | null>;
  save(key: string, state: PersistedState): Promise<void>;
  clear(key: string): Promise<void>;
}

/** The default: kept in memory, as JSON text (what the other adapters store too). */
export class MemoryPersistence implements Persistence {
  #data = new Map<string, string>();
  async load(key: string): Promise<PersistedState | null> {
    const text = this.#data.get(key);
    return text === undefined ? null : (JSON.parse(text) as PersistedState);
  }
  async save(key: string, state: PersistedState): Promise<void> {
    this.#data.set(key, JSON.stringify(state));
  }
  async clear(key: string): Promise<void> {
    this.#data.delete(key);
  }
}

/** The part of React Native's AsyncStorage this needs (any string key-value store fits). */
export interface KeyValueStorage {
  getItem(key: string): Promise<string | null>;
  setItem(key: string, value: string): Promise<void>;
  removeItem(key: string): Promise<void>;
}

/** A Persistence over a string key-value store (AsyncStorage, localStorage wrapped in promises). */
export class KeyValuePersistence implements Persistence {
  readonly #kv: KeyValueStorage;
  readonly #prefix: string;
  constructor(kv: KeyValueStorage, prefix = "inbox.v1:") {
    this.#kv = kv;
    this.#prefix = prefix;
  }
  async load(key: string): Promise<PersistedState | null> {
    const text = await this.#kv.getItem(this.#prefix + key);
    if (text === null) return null;
    try {
      const s = JSON.parse(text) as PersistedState;
      return s?.version === 1 ? s : null;
    } catch {
      return null; // a damaged entry is a cold start, not a crash
    }
  }
  async save(key: string, state: PersistedState): Promise<void> {
    await this.#kv.setItem(this.#prefix + key, JSON.stringify(state));
  }
  async clear(key: string): Promise<void> {
    await this.#kv.removeItem(this.#prefix + key);
  }
}
