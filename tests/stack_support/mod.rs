//! Starts the local backend stack (stack/README.md) for one test and stops it on drop.
//! Missing prerequisites FAIL the test with instructions: a skipped backend test hides breakage.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use egn_core::backend::native::{block_on, UreqClient};
use egn_core::backend::{
    DataApiAuth, DataApiClient, DataApiConfig, HttpClient, HttpRequest, RedisRestClient,
    RedisRestConfig,
};
use egn_core::dedup::DedupConfig;
use egn_core::notify::store::NotificationStore;
use egn_core::notify::{NewEvent, NewSender, NotifyConfig, NotifyService};
use serde_json::{json, Value};

/// A "like" in the `feed`/`social` category from `sender` (display name: its upper case), the
/// event every stack test writes; the tests differ only in its ids and time.
pub fn like(owner: &str, item: &str, sender: &str, event_id: &str, t: i64) -> NewEvent {
    NewEvent {
        owner: owner.into(),
        item_key: item.into(),
        service_type: "feed".into(),
        category_type: "social".into(),
        notification_type: "like".into(),
        template_type: "default".into(),
        event_id: event_id.into(),
        sender: NewSender {
            id: sender.into(),
            name: sender.to_uppercase(),
            avatar: None,
        },
        landing: None,
        message_arguments: Default::default(),
        created_time_msec: t,
    }
}

/// [`like`] with the id `{owner}/{item}/{sender}/{t}`: one event per sender and time.
pub fn like_at(owner: &str, item: &str, sender: &str, t: i64) -> NewEvent {
    like(
        owner,
        item,
        sender,
        &format!("{owner}/{item}/{sender}/{t}"),
        t,
    )
}

/// The dedup settings of the stack tests: sized for 10 000 events/s, 10-minute leases.
pub fn dedup() -> DedupConfig {
    DedupConfig::for_rate(10_000, 600_000)
}

/// The stored document of `owner`'s `item`, as the Data API returns it (`None`: no document).
pub fn stored(store: &NotificationStore<UreqClient>, owner: &str, item: &str) -> Option<Value> {
    block_on(store.api().find_one(
        &store.config().collection,
        &json!({"owner": owner, "itemKey": item}),
        None,
        None,
    ))
    .unwrap()
}

/// A running stack; killed on drop.
pub struct Stack {
    child: Child,
    ready_file: PathBuf,
    /// The JSON line the stack printed.
    pub info: Value,
}

impl Stack {
    /// Starts `.venv/bin/python -m stack` on free ports and waits for its ready file.
    pub fn start() -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let python = root.join(".venv/bin/python");
        assert!(
            python.exists(),
            "backend stack unavailable: {} is missing. Create it with `python3 -m venv .venv && \
             .venv/bin/pip install -r stack/requirements.txt` (and install redis-server).",
            python.display()
        );
        let ready_file = std::env::temp_dir().join(format!(
            "stack-{}-{:?}.json",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&ready_file);
        let child = Command::new(&python)
            .current_dir(root)
            .args([
                "-m",
                "stack",
                "--redis-rest-port",
                "0",
                "--data-api-port",
                "0",
                "--exit-with-parent",
                "--ready-file",
            ])
            .arg(&ready_file)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "backend stack unavailable: cannot run {}: {e}",
                    python.display()
                )
            });
        let mut stack = Self {
            child,
            ready_file,
            info: Value::Null,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(text) = std::fs::read_to_string(&stack.ready_file) {
                if let Ok(v) = serde_json::from_str::<Value>(&text) {
                    stack.info = v;
                    return stack;
                }
            }
            if let Ok(Some(status)) = stack.child.try_wait() {
                panic!(
                    "backend stack unavailable: it exited with {status} (is redis-server on PATH?)"
                );
            }
            assert!(
                Instant::now() < deadline,
                "backend stack unavailable: no ready file after 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn s(&self, k: &str) -> String {
        self.info[k]
            .as_str()
            .unwrap_or_else(|| panic!("ready JSON lacks {k}"))
            .to_owned()
    }

    /// Data API config for this stack.
    pub fn data_api_config(&self, auth: DataApiAuth) -> DataApiConfig {
        DataApiConfig {
            base_url: self.s("data_api_url"),
            api_key: self.s("data_api_key"),
            data_source: self.s("data_source"),
            database: self.s("database"),
            auth,
            timeout_ms: 10_000,
        }
    }

    /// A Data API client with `apiKey` auth.
    pub fn data_api(&self) -> DataApiClient<UreqClient> {
        DataApiClient::new(
            UreqClient::default(),
            self.data_api_config(DataApiAuth::ApiKey),
        )
    }

    /// A notification store over this stack with `cfg`, its indexes ensured.
    pub fn store(&self, cfg: NotifyConfig) -> NotificationStore<UreqClient> {
        let store = NotificationStore::new(self.data_api(), cfg);
        block_on(store.ensure_indexes()).unwrap();
        store
    }

    /// A notification service over `store`, with Redis (dedup, rosters, idempotency records)
    /// when `dedup` is given.
    pub fn service_over(
        &self,
        store: NotificationStore<UreqClient>,
        dedup: Option<DedupConfig>,
    ) -> NotifyService<UreqClient> {
        let redis = dedup.is_some().then(|| self.redis());
        NotifyService::new(store, redis, dedup.unwrap_or_else(self::dedup))
    }

    /// A notification service over [`Stack::store`] with `cfg`; with Redis when `dedup` is given.
    pub fn service(
        &self,
        cfg: NotifyConfig,
        dedup: Option<DedupConfig>,
    ) -> NotifyService<UreqClient> {
        self.service_over(self.store(cfg), dedup)
    }

    /// [`Stack::service`] with default settings and the tests' [`dedup`], with or without Redis.
    pub fn notify_service(&self, redis: bool) -> NotifyService<UreqClient> {
        self.service(NotifyConfig::default(), redis.then(dedup))
    }

    /// A Redis REST client with the read-write token.
    pub fn redis(&self) -> RedisRestClient<UreqClient> {
        RedisRestClient::new(
            UreqClient::default(),
            RedisRestConfig {
                base_url: self.s("redis_rest_url"),
                token: self.s("redis_token"),
                timeout_ms: 10_000,
            },
        )
    }

    fn dev(&self, which: &str, method: &str, path: &str, body: &str) -> Value {
        let url = format!("{}{path}", self.s(which));
        let mut req = HttpRequest::post(url, body.as_bytes().to_vec(), 10_000)
            .header("Content-Type", "application/json");
        req.method = method.into();
        let resp = block_on(UreqClient::default().send(req)).expect("dev endpoint");
        serde_json::from_slice(&resp.body).unwrap_or(Value::Null)
    }

    /// Data API request counters by action (`{"updateOne": 2, …}`) since the last reset.
    pub fn data_api_calls(&self) -> Value {
        self.dev("data_api_url", "GET", "/__stats", "")["requests"].clone()
    }

    /// Redis bridge request counters by command since the last reset.
    pub fn redis_calls(&self) -> Value {
        let calls = self.dev("redis_rest_url", "GET", "/__stats", "")["requests"].clone();
        // A broken stats endpoint must fail the test, not read as "no calls".
        assert!(calls.is_object(), "redis /__stats has no requests object");
        calls
    }

    /// Total requests to the Data API since the last reset.
    pub fn data_api_total(&self) -> u64 {
        self.dev("data_api_url", "GET", "/__stats", "")["total"]
            .as_u64()
            .expect("Data API /__stats reports a total")
    }

    /// Resets both servers' counters.
    pub fn reset_stats(&self) {
        self.dev("data_api_url", "POST", "/__stats/reset", "");
        self.dev("redis_rest_url", "POST", "/__stats/reset", "");
    }

    /// Installs fault rules on the Redis bridge (`{"rules":[…]}`; match is the command name).
    #[allow(dead_code)]
    pub fn redis_faults(&self, rules: &str) {
        self.dev("redis_rest_url", "POST", "/__faults", rules);
    }

    /// How many faults the Redis bridge's rules have injected since they were installed.
    pub fn redis_faults_fired(&self) -> u64 {
        let snap = self.dev("redis_rest_url", "GET", "/__faults", "");
        snap["rules"]
            .as_array()
            .expect("redis /__faults lists its rules")
            .iter()
            .filter_map(|r| r["fired"].as_u64())
            .sum()
    }

    /// Runs the Data API's TTL monitor once now (what mongod's does every minute): deletes
    /// every document a TTL index says has expired. Returns how many.
    #[allow(dead_code)]
    pub fn run_ttl(&self) -> u64 {
        self.dev("data_api_url", "POST", "/__ttl/run", "")["deleted"]
            .as_u64()
            .expect("/__ttl/run answers its count")
    }

    /// Installs fault rules on the Data API (`{"rules":[…]}`).
    pub fn data_api_faults(&self, rules: &str) {
        self.dev("data_api_url", "POST", "/__faults", rules);
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SIGTERM lets the stack stop redis-server and remove its temp dir.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.ready_file);
    }
}

/// Wall clock in ms.
pub fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// The last value [`write_clock`] gave, shared by every test of this binary.
static LAST_WRITE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// A write clock for tests whose assertions depend on write order: strictly increasing across
/// every call in this test binary (never two writes in one millisecond), never behind the wall
/// clock. Revisions come from the write clock at millisecond precision, so two writes in the same
/// millisecond may list in either order; a test that expects creation order passes this clock.
/// Several writes within one wall millisecond put it *ahead* of the wall clock: a test that then
/// waits for its writes to settle uses [`wait_until_settled`], which knows that.
pub fn write_clock() -> i64 {
    use std::sync::atomic::Ordering;
    let now = now_ms();
    let prev = LAST_WRITE
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
            Some(now.max(last + 1))
        })
        .unwrap();
    now.max(prev + 1)
}

/// Waits until the wall clock is past `ms` (an observable condition, not a fixed sleep).
pub fn wait_past(ms: i64) {
    while now_ms() <= ms {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until every write stamped so far, by the wall clock or by [`write_clock`] (which may run
/// ahead of it), is older than `settle_ms`: a change-feed position taken after this lies past
/// all of them, so none comes again as a repeat.
pub fn wait_until_settled(settle_ms: i64) {
    let newest = now_ms().max(LAST_WRITE.load(std::sync::atomic::Ordering::SeqCst));
    wait_past(newest + settle_ms);
}
