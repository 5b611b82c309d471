// The core entry point: `@edge-geo-notify/inbox`. No dependencies; React, IndexedDB and
// AsyncStorage live in their own entry points.
export { InboxClient } from "./client.ts";
export type { Clock, InboxClientOptions, InboxEvents, LiveStatus, WebSocketFactory, WebSocketLike, WriteResult } from "./client.ts";
export { GeoClient } from "./geo.ts";
export type { GeoOptions, LatLon } from "./geo.ts";
export { InboxStore, compareItems } from "./store.ts";
export type { BulkAction, Flag, InboxSnapshot, Operation, PersistedState } from "./store.ts";
export { Http, InboxError, DEFAULT_RETRY, parseRetryAfter, newKey, tokenExpiry } from "./http.ts";
export type { HttpOptions, RequestOptions, RetryPolicy } from "./http.ts";
export { MemoryPersistence, KeyValuePersistence } from "./persistence.ts";
export type { KeyValueStorage, Persistence } from "./persistence.ts";
export { decodePosition, isOlder, newerPosition } from "./position.ts";
export type { Position } from "./position.ts";
export type * from "./types.ts";
