// React Native: persist the inbox in AsyncStorage (or anything with its three methods).
//
//   import AsyncStorage from "@react-native-async-storage/async-storage";
//   import { asyncStoragePersistence } from "@edge-geo-notify/inbox/async-storage";
//   new InboxClient({ ..., persistence: asyncStoragePersistence(AsyncStorage) });
import { KeyValuePersistence } from "./persistence.ts";
import type { KeyValueStorage, Persistence } from "./persistence.ts";

export function asyncStoragePersistence(storage: KeyValueStorage, prefix = "inbox.v1:"): Persistence {
  return new KeyValuePersistence(storage, prefix);
}
export type { KeyValueStorage, Persistence };
