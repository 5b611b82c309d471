//! The live badge: one Durable Object per owner (`INBOX_HUB`) holds that owner's WebSockets
//! through the Hibernation API, so idle connections cost nothing, and pushes `{unread, unseen,
//! sync}` after each change. When to push is decided in `egn_core::notify::badge`. Each socket ends
//! with its token: closed with 4001 `token_expired` once the token's `exp` (+ leeway) passes,
//! by an alarm at the earliest expiry and before every push (`egn_core::notify::expiry`).

use std::cell::Cell;

use serde_json::json;
use worker::{
    durable_object, Context, Date, DurableObject, Env, Headers, Request, RequestInit, Response,
    Result, State, WebSocket, WebSocketIncomingMessage, WebSocketPair,
};

use super::state;
use egn_core::notify::badge::{self, BadgeSequencer, Poke};
use egn_core::notify::expiry;
use egn_core::notify::{encode_cursor, next_sync};

/// The binding's name.
pub const BINDING: &str = "INBOX_HUB";
const OWNER_HEADER: &str = "X-Inbox-Owner";
/// Where hubs before the socket attachment carried the owner kept it (read only as a fallback
/// for sockets accepted by that code; nothing writes it any more).
const LEGACY_OWNER_KEY: &str = "owner";
/// When the socket's token expires, ms since the epoch (set by the worker after verifying it).
const DEADLINE_HEADER: &str = "X-Token-Deadline-Ms";
/// Storage key of a pending trailing push (ms since the epoch); the alarm is shared with expiry.
const PUSH_AT_KEY: &str = "push_at";

/// What a socket carries through hibernation. The owner rides here rather than in storage, so a
/// connect costs no storage write (a write is the largest line of a connect's bill).
#[derive(serde::Serialize, serde::Deserialize)]
struct Attachment {
    /// Close at (ms since the epoch); `None` for a token without `exp`.
    deadline_ms: Option<f64>,
    /// Whose hub this is (absent on sockets accepted before it was carried here).
    #[serde(default)]
    owner: Option<String>,
}

fn now() -> f64 {
    Date::now().as_millis() as f64
}

fn hub_request(
    path: &str,
    owner: &str,
    upgrade: Option<&str>,
    deadline_ms: Option<f64>,
) -> Result<Request> {
    let headers = Headers::new();
    headers.set(OWNER_HEADER, owner)?;
    if let Some(d) = deadline_ms {
        headers.set(DEADLINE_HEADER, &format!("{d}"))?;
    }
    if let Some(protocols) = upgrade {
        headers.set("Upgrade", "websocket")?;
        headers.set("Sec-WebSocket-Protocol", protocols)?;
    }
    Request::new_with_init(
        &format!("https://hub{path}"),
        RequestInit::new().with_headers(headers),
    )
}

/// Hands an authenticated WebSocket upgrade (with the client's offered subprotocols and the
/// moment its token expires) to the owner's hub; `None` without the binding.
pub async fn connect(
    env: &Env,
    owner: &str,
    protocols: &str,
    deadline_ms: Option<f64>,
) -> Option<Result<Response>> {
    let ns = env.durable_object(BINDING).ok()?;
    let run = async {
        let stub = ns.id_from_name(owner)?.get_stub()?;
        stub.fetch_with_request(hub_request(
            "/connect",
            owner,
            Some(protocols),
            deadline_ms,
        )?)
        .await
    };
    Some(run.await)
}

/// The hubs behind the core's erasure port: `/erase` clears the owner's hub (nothing without
/// the binding).
pub struct Hubs<'a>(pub &'a Env);

impl egn_core::notify::erasure::BadgeHubs for Hubs<'_> {
    async fn erase(
        &self,
        owner: &str,
    ) -> std::result::Result<u32, egn_core::notify::erasure::HubError> {
        let Ok(ns) = self.0.durable_object(BINDING) else {
            return Ok(0);
        };
        let fail = |e: worker::Error| egn_core::notify::erasure::HubError(e.to_string());
        let stub = ns
            .id_from_name(owner)
            .map_err(fail)?
            .get_stub()
            .map_err(fail)?;
        let mut resp = stub
            .fetch_with_request(hub_request("/erase", owner, None, None).map_err(fail)?)
            .await
            .map_err(fail)?;
        let body: serde_json::Value = resp.json().await.map_err(fail)?;
        Ok(body["closed"].as_u64().unwrap_or(0) as u32)
    }
}

/// Tells the owners' hubs their inbox changed, after the response (nothing without the binding).
pub fn poke(env: &Env, ctx: &Context, owners: Vec<String>) {
    if owners.is_empty() || env.durable_object(BINDING).is_err() {
        return;
    }
    let env = env.clone();
    ctx.wait_until(async move { poke_now(&env, owners).await });
}

/// [`poke`], awaited (for the cron, which has no response to go after).
pub async fn poke_now(env: &Env, owners: Vec<String>) {
    let Ok(ns) = env.durable_object(BINDING) else {
        return;
    };
    for owner in owners {
        let sent = async {
            let stub = ns.id_from_name(&owner)?.get_stub()?;
            stub.fetch_with_request(hub_request("/poke", &owner, None, None)?)
                .await
        };
        if let Err(e) = sent.await {
            // A lost poke is repaired by the client's next connect (the socket is a hint).
            worker::console_warn!(
                "{}",
                json!({ "hub": "poke failed", "error": e.to_string() })
            );
        }
    }
}

/// The per-owner hub.
#[durable_object]
pub struct InboxHub {
    state: State,
    env: Env,
    /// When this instance last pushed (forgotten on hibernation: then the next change pushes at
    /// once, which is what a quiet inbox wants anyway).
    last_push: Cell<Option<f64>>,
    /// Drops a badge read that finished after a later one was sent (never a stale count).
    badges: BadgeSequencer,
}

/// Why a badge could not be read (the Durable Object's caller logs it; sockets keep the last
/// badge they got).
#[derive(Debug, thiserror::Error)]
enum BadgeError {
    #[error(transparent)]
    Config(#[from] egn_core::config::ConfigError),
    #[error(transparent)]
    Api(#[from] egn_http::ApiError),
    #[error(transparent)]
    Counts(#[from] egn_core::notify::NotifyError),
}

// The one place a badge failure becomes a `worker::Error` (the Durable Object's error type).
impl From<BadgeError> for worker::Error {
    fn from(e: BadgeError) -> Self {
        worker::Error::RustError(e.to_string())
    }
}

impl InboxHub {
    /// The badge message for `owner` (one Data API call).
    async fn badge(&self, owner: &str) -> std::result::Result<String, BadgeError> {
        let st = state::get(&self.env);
        let cfg = st.config.as_ref().map_err(Clone::clone)?;
        let store = super::factory::store(cfg)?;
        let t = now() as i64;
        let counts = store.counts(owner, None, t).await?;
        let (pos, _) = next_sync(None, None, t, cfg.notify.sync_settle_ms);
        Ok(badge::message(counts, &encode_cursor(&pos)).to_string())
    }

    /// [`Self::badge`], or `None` when a read that started later has been sent already.
    async fn fresh_badge(&self, owner: &str) -> Result<Option<String>> {
        let ticket = self.badges.start();
        let msg = self.badge(owner).await?;
        Ok(self.badges.admit(ticket).then_some(msg))
    }

    async fn push(&self, owner: &str) -> Result<()> {
        // Expired sockets first: a badge never reaches a socket whose token has expired.
        self.close_expired().await?;
        if self.state.get_websockets().is_empty() {
            return Ok(());
        }
        let Some(msg) = self.fresh_badge(owner).await? else {
            return Ok(());
        };
        // Read after the badge: a socket that connected meanwhile gets it too.
        let sockets = self.state.get_websockets();
        self.last_push.set(Some(now()));
        let t = now();
        for ws in sockets {
            // A socket whose token expired while the badge was read is closed at its alarm.
            if deadline(&ws).is_some_and(|d| d <= t) {
                continue;
            }
            // A socket closing right now is not an error for the others.
            let _ = ws.send_with_str(&msg);
        }
        Ok(())
    }

    /// Closes the sockets whose token has expired; returns the plan (with the pending push).
    async fn close_expired(&self) -> Result<expiry::Plan> {
        let sockets = self.state.get_websockets();
        let deadlines: Vec<Option<f64>> = sockets.iter().map(deadline).collect();
        let push_at: Option<f64> = self.state.storage().get(PUSH_AT_KEY).await?;
        let plan = expiry::plan(&deadlines, push_at, now());
        for &i in &plan.close {
            let _ = sockets[i].close(Some(expiry::CLOSE_CODE), Some(expiry::CLOSE_REASON));
        }
        Ok(plan)
    }

    /// Moves the alarm earlier when `at` (ms since the epoch) is before it.
    async fn alarm_at(&self, at: f64) -> Result<()> {
        let storage = self.state.storage();
        let current = storage.get_alarm().await?.map(|t| t as f64);
        if expiry::reschedule(current, at) {
            storage
                .set_alarm((at - now()).max(0.0).ceil() as i64)
                .await?;
        }
        Ok(())
    }

    /// Whose hub this is: from any socket's attachment (alarms carry no request, and a hub
    /// without sockets has nobody to push to); the stored key only for sockets accepted before
    /// the attachment carried it.
    async fn owner(&self) -> Result<Option<String>> {
        let sockets = self.state.get_websockets();
        if let Some(owner) = sockets.iter().find_map(|ws| attachment(ws)?.owner) {
            return Ok(Some(owner));
        }
        if sockets.is_empty() {
            return Ok(None);
        }
        self.state.storage().get(LEGACY_OWNER_KEY).await
    }
}

fn attachment(ws: &WebSocket) -> Option<Attachment> {
    ws.deserialize_attachment::<Attachment>().ok().flatten()
}

/// A socket's token deadline (`None` for a socket without one).
fn deadline(ws: &WebSocket) -> Option<f64> {
    attachment(ws).and_then(|a| a.deadline_ms)
}

impl DurableObject for InboxHub {
    fn new(state: State, env: Env) -> Self {
        Self {
            state,
            env,
            last_push: Cell::new(None),
            badges: BadgeSequencer::default(),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let owner = req.headers().get(OWNER_HEADER)?.unwrap_or_default();
        if owner.is_empty() {
            return Response::error("owner missing", 400);
        }
        if req.path() == "/erase" {
            // The owner was erased: every socket closes, and nothing stays in storage.
            let sockets = self.state.get_websockets();
            for ws in &sockets {
                let _ = ws.close(
                    Some(egn_core::notify::erasure::ERASED_CLOSE_CODE),
                    Some(egn_core::notify::erasure::ERASED_CLOSE_REASON),
                );
            }
            self.state.storage().delete_alarm().await?;
            self.state.storage().delete_all().await?;
            return Response::from_json(&json!({ "closed": sockets.len() }));
        }
        if req.path() == "/poke" {
            let scheduled = self
                .state
                .storage()
                .get::<f64>(PUSH_AT_KEY)
                .await?
                .is_some();
            let sockets = self.state.get_websockets().len();
            match badge::on_poke(sockets, now(), self.last_push.get(), scheduled) {
                Poke::Idle | Poke::AlreadyScheduled => {}
                Poke::PushNow => self.push(&owner).await?,
                Poke::PushIn(ms) => {
                    let at = now() + ms;
                    self.state.storage().put(PUSH_AT_KEY, at).await?;
                    self.alarm_at(at).await?;
                }
            }
            return Response::empty();
        }
        let deadline_ms = req
            .headers()
            .get(DEADLINE_HEADER)?
            .and_then(|d| d.parse::<f64>().ok())
            .filter(|d| d.is_finite());
        let pair = WebSocketPair::new()?;
        self.state.accept_web_socket(&pair.server);
        // Alarms carry no request: the socket remembers whose hub this is (no storage write).
        pair.server.serialize_attachment(Attachment {
            deadline_ms,
            owner: Some(owner.clone()),
        })?;
        if let Some(deadline_ms) = deadline_ms {
            // Moves the alarm only when this token expires before the pending one.
            self.alarm_at(deadline_ms).await?;
        }
        // Every connect starts with a fresh badge: that is what repairs a missed push.
        match self.fresh_badge(&owner).await {
            Ok(Some(msg)) => pair.server.send_with_str(msg)?,
            // A newer badge went to every socket, this one included.
            Ok(None) => {}
            Err(e) => worker::console_warn!(
                "{}",
                json!({ "hub": "badge failed", "error": e.to_string() })
            ),
        }
        let offered = req
            .headers()
            .get("Sec-WebSocket-Protocol")?
            .unwrap_or_default();
        let mut resp = Response::from_websocket(pair.client)?;
        // Answer the protocol only when offered: a client that did not offer it would fail.
        if badge::offers_protocol(&offered) {
            resp.headers_mut()
                .set("Sec-WebSocket-Protocol", badge::PROTOCOL)?;
        }
        Ok(resp)
    }

    async fn alarm(&self) -> Result<Response> {
        let plan = self.close_expired().await?;
        if plan.push {
            self.state.storage().delete(PUSH_AT_KEY).await?;
            if let Some(owner) = self.owner().await? {
                self.push(&owner).await?;
            }
        }
        // The alarm that is running is spent: the next one is the earliest event left.
        if let Some(at) = plan.next_alarm {
            self.state
                .storage()
                .set_alarm((at - now()).max(0.0).ceil() as i64)
                .await?;
        }
        Response::empty()
    }

    async fn websocket_message(
        &self,
        ws: WebSocket,
        message: WebSocketIncomingMessage,
    ) -> Result<()> {
        // "refresh" asks for the badge now (e.g. after the app returns to the foreground).
        if matches!(message, WebSocketIncomingMessage::String(ref s) if s == "refresh") {
            if let Some(owner) = self.owner().await? {
                // `None`: a newer badge reached every socket while this one was read.
                if let Some(msg) = self.fresh_badge(&owner).await? {
                    ws.send_with_str(msg)?;
                }
            }
        }
        Ok(())
    }

    async fn websocket_close(
        &self,
        ws: WebSocket,
        code: usize,
        _reason: String,
        _was_clean: bool,
    ) -> Result<()> {
        // Complete the closing handshake; 1005/1006 cannot be sent back.
        let code = u16::try_from(code)
            .ok()
            .filter(|c| *c >= 1000 && *c != 1005 && *c != 1006);
        let _ = ws.close(code.or(Some(1000)), Some("bye"));
        Ok(())
    }
}
