//! The live badge: one Durable Object per owner (`INBOX_HUB`) holds that owner's WebSockets
//! through the Hibernation API, so idle connections cost nothing, and pushes `{unread, unseen,
//! sync}` after each change. What the hub does on a poke, a connect, an alarm, a message and an
//! erasure is `egn_core::notify::hub`'s; this file binds its [`Room`] to the Durable Object's
//! storage, alarm and sockets, and hands the worker's requests to the hub.

use serde_json::json;
use worker::{
    durable_object, Context, Date, DurableObject, Env, Headers, Request, RequestInit, Response,
    Result, State, WebSocket, WebSocketIncomingMessage, WebSocketPair,
};

use super::state;
use egn_core::notify::badge;
use egn_core::notify::hub::{self, Attachment, Hub, Room};
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
    hub: Hub,
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
        let store = egn_http::backends::store(super::http_client::WorkerHttp, cfg)?;
        let t = now() as i64;
        let counts = store.counts(owner, None, t).await?;
        let (pos, _) = next_sync(None, None, t, cfg.notify.sync_settle_ms);
        Ok(badge::message(counts, &encode_cursor(&pos)).to_string())
    }
}

impl Room for InboxHub {
    type Socket = WebSocket;
    type Error = worker::Error;

    fn now(&self) -> f64 {
        now()
    }

    fn sockets(&self) -> Vec<WebSocket> {
        self.state.get_websockets()
    }

    fn attachment(&self, ws: &WebSocket) -> Option<Attachment> {
        ws.deserialize_attachment::<Attachment>().ok().flatten()
    }

    fn send(&self, ws: &WebSocket, msg: &str) -> Result<()> {
        ws.send_with_str(msg)
    }

    fn close(&self, ws: &WebSocket, code: u16, reason: &str) {
        let _ = ws.close(Some(code), Some(reason));
    }

    async fn push_at(&self) -> Result<Option<f64>> {
        self.state.storage().get(PUSH_AT_KEY).await
    }

    async fn set_push_at(&self, at: f64) -> Result<()> {
        self.state.storage().put(PUSH_AT_KEY, at).await
    }

    async fn clear_push_at(&self) -> Result<()> {
        self.state.storage().delete(PUSH_AT_KEY).await.map(|_| ())
    }

    async fn legacy_owner(&self) -> Result<Option<String>> {
        self.state.storage().get(LEGACY_OWNER_KEY).await
    }

    async fn alarm(&self) -> Result<Option<f64>> {
        Ok(self.state.storage().get_alarm().await?.map(|t| t as f64))
    }

    async fn set_alarm(&self, at: f64) -> Result<()> {
        let offset_ms = (at - now()).max(0.0).ceil() as i64;
        self.state.storage().set_alarm(offset_ms).await
    }

    async fn erase_all(&self) -> Result<()> {
        self.state.storage().delete_alarm().await?;
        self.state.storage().delete_all().await
    }

    async fn badge(&self, owner: &str) -> Result<String> {
        Ok(InboxHub::badge(self, owner).await?)
    }

    fn warn(&self, what: &str, e: &worker::Error) {
        worker::console_warn!("{}", json!({ "hub": what, "error": e.to_string() }));
    }
}

impl DurableObject for InboxHub {
    fn new(state: State, env: Env) -> Self {
        Self {
            state,
            env,
            hub: Hub::default(),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let owner = req.headers().get(OWNER_HEADER)?.unwrap_or_default();
        if owner.is_empty() {
            return Response::error("owner missing", 400);
        }
        if req.path() == "/erase" {
            let closed = self.hub.erase(self).await?;
            return Response::from_json(&json!({ "closed": closed }));
        }
        if req.path() == "/poke" {
            self.hub.poke(self, &owner).await?;
            return Response::empty();
        }
        let deadline_ms = hub::parse_deadline(req.headers().get(DEADLINE_HEADER)?.as_deref());
        let pair = WebSocketPair::new()?;
        self.state.accept_web_socket(&pair.server);
        // Alarms carry no request: the socket remembers whose hub this is (no storage write).
        pair.server.serialize_attachment(Attachment {
            deadline_ms,
            owner: Some(owner.clone()),
        })?;
        self.hub
            .connected(self, &pair.server, &owner, deadline_ms)
            .await?;
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
        self.hub.alarm(self).await?;
        Response::empty()
    }

    async fn websocket_message(
        &self,
        ws: WebSocket,
        message: WebSocketIncomingMessage,
    ) -> Result<()> {
        match message {
            WebSocketIncomingMessage::String(text) => self.hub.message(self, &ws, &text).await,
            WebSocketIncomingMessage::Binary(_) => Ok(()),
        }
    }

    async fn websocket_close(
        &self,
        ws: WebSocket,
        code: usize,
        _reason: String,
        _was_clean: bool,
    ) -> Result<()> {
        // Complete the closing handshake.
        let _ = ws.close(Some(hub::closing_code(code)), Some("bye"));
        Ok(())
    }
}
