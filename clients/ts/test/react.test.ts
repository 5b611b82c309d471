// The React entry point with React itself (react-dom/server renders in Node): the hook returns
// the store's snapshot, and a change re-renders with the new one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createElement } from "react";
import { renderToString } from "react-dom/server";
import { useInbox } from "../src/react.ts";
import { InboxStore } from "../src/store.ts";

const item = (key: string, revision: number) => ({
  notificationId: key, itemKey: key, serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", createdTimeMsec: 1, expireAtMsec: 2, revision, originsCount: 1, origins: [],
  read: false, seen: false, archived: false, landing: null, messageArguments: {}, summary: `item ${key}`,
});

function Inbox({ store }: { store: InboxStore }) {
  const { items, counts } = useInbox(store);
  return createElement("ul", { "data-unread": counts.unread }, ...items.map((i) => createElement("li", { key: i.itemKey }, i.summary)));
}

test("useInbox renders the store's snapshot, and the next render sees a change", () => {
  const store = new InboxStore();
  store.applyPage({ items: [item("a", 1)], nextCursor: null, counts: { unread: 1, unseen: 1 }, sync: "WzEsIiJd" });
  assert.equal(renderToString(createElement(Inbox, { store })), '<ul data-unread="1"><li>item a</li></ul>');
  store.applyChanges({ items: [item("b", 2)], sync: "WzIsIiJd", hasMore: false });
  store.applyBadge({ type: "badge", unread: 2, unseen: 2, sync: "WzIsIiJd" });
  assert.equal(renderToString(createElement(Inbox, { store })), '<ul data-unread="2"><li>item b</li><li>item a</li></ul>');
});
