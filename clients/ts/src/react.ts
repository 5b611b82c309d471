// React: `const { items, counts } = useInbox(client)` re-renders on every store change.
// React is the app's (a peer dependency of this entry point only); the core imports none of it.
import { useSyncExternalStore } from "react";
import type { InboxClient } from "./client.ts";
import type { InboxSnapshot, InboxStore } from "./store.ts";

/** The store's snapshot; the component re-renders when it changes. */
export function useInbox(source: InboxClient | InboxStore): InboxSnapshot {
  const store = "store" in source ? source.store : source;
  return useSyncExternalStore(store.subscribe.bind(store), store.getSnapshot, store.getSnapshot);
}
