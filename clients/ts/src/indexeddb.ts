// Browsers: persist the inbox in IndexedDB (one object store, one record per user). Stores the
// persisted state as a structured clone; a record of another version reads as empty (cold start).
import type { Persistence } from "./persistence.ts";
import type { PersistedState } from "./store.ts";

const STORE = "inbox";

function promised<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

export class IndexedDbPersistence implements Persistence {
  readonly #name: string;
  readonly #factory: IDBFactory;
  #db: Promise<IDBDatabase> | null = null;

  /** `factory` defaults to the global `indexedDB`. */
  constructor(name = "edge-geo-notify-inbox", factory?: IDBFactory) {
    this.#name = name;
    this.#factory = factory ?? (globalThis as unknown as { indexedDB: IDBFactory }).indexedDB;
  }

  #open(): Promise<IDBDatabase> {
    this.#db ??= new Promise((resolve, reject) => {
      const r = this.#factory.open(this.#name, 1);
      r.onupgradeneeded = () => r.result.createObjectStore(STORE);
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    return this.#db;
  }

  async #tx<T>(mode: IDBTransactionMode, run: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
    const db = await this.#open();
    const tx = db.transaction(STORE, mode);
    const result = promised(run(tx.objectStore(STORE)));
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
    return result;
  }

  async load(key: string): Promise<PersistedState | null> {
    const v = (await this.#tx("readonly", (s) => s.get(key))) as PersistedState | undefined;
    return v && v.version === 1 ? v : null;
  }

  async save(key: string, state: PersistedState): Promise<void> {
    await this.#tx("readwrite", (s) => s.put(state, key));
  }

  async clear(key: string): Promise<void> {
    await this.#tx("readwrite", (s) => s.delete(key));
  }

  /** Closes the database connection. */
  async close(): Promise<void> {
    if (this.#db) (await this.#db).close();
    this.#db = null;
  }
}
