"""TTL monitor: what mongod's TTL monitor does, in the background. mongomock would expire on every
access instead; `data_api._background_ttl_only` turns that off so this thread alone deletes."""
import datetime
import threading


def run_ttl_once(client, lock):
    """Delete expired docs in every collection with a TTL index. Returns the number deleted."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    deleted = 0
    with lock:
        for db_name in client.list_database_names():
            db = client[db_name]
            for coll_name in db.list_collection_names():
                coll = db[coll_name]
                for info in coll.index_information().values():
                    secs = info.get("expireAfterSeconds")
                    keys = list(info.get("key", []))
                    if secs is None or len(keys) != 1:
                        continue  # TTL only applies to single-field indexes
                    cutoff = now - datetime.timedelta(seconds=float(secs))
                    flt = {keys[0][0]: {"$lt": cutoff}}
                    if info.get("partialFilterExpression"):
                        flt = {"$and": [flt, info["partialFilterExpression"]]}
                    deleted += coll.delete_many(flt).deleted_count
    return deleted


class TtlMonitor(threading.Thread):
    def __init__(self, app, interval):
        super().__init__(name="ttl-monitor", daemon=True)
        self.app, self.interval = app, interval
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            try:
                self.app.run_ttl()
            except Exception:  # noqa: BLE001 - keep monitoring
                pass

    def stop(self):
        self.stopped.set()
