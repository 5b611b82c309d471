//! The live badge: one Durable Object per owner (`INBOX_HUB`) holds that owner's WebSockets
//! through the Hibernation API, so idle connections cost nothing, and pushes `{unread, unseen,
//! sync}` after each change. What the hub does on a poke, a connect, an alarm, a message and an
//! erasure is `egn_core::notify::hub`'s; the wire between the worker and the hub, and the badge
//! read, are `egn_http::hub`'s. This file binds its [`Room`] to the Durable Object's storage,
//! alarm and sockets, and carries the worker's requests to the hub.

use serde_json::json;
use worker::{
    durable_object, Context, Date, DurableObject, Env, Headers, Request, RequestInit, Response,
    Result, State, WebSocket, WebSocketIncomingMessage, WebSocketPair,
};

use super::state;
use egn_core::notify::hub::{self, Attachment, Hub, Room};
use egn_http::hub::{Accept, Call, HubReply};

/// The binding's name.
pub const BINDING: &str = "INBOX_HUB";
/// Where hubs before the socket attachment carried the owner kept it (read only as a fallback
/// for sockets accepted by that code; nothing writes it any more).
const LEGACY_OWNER_KEY: &str = "owner";
/// Storage key of a pending trailing push (ms since the epoch); the alarm is shared with expiry.
const PUSH_AT_KEY: &str = "push_at";

fn now() -> f64 {
    Date::now().as_millis() as f64
}

/// The request to `owner`'s hub for `call`, sent.
async fn send(ns: &worker::ObjectNamespace, owner: &str, call: Call<'_>) -> Result<Response> {
    let (url, list) = call.request(owner);
    let headers = Headers::new();
    for (name, value) in list {
        headers.set(name, &value)?;
    }
    let req = Request::new_with_init(url, RequestInit::new().with_headers(headers))?;
    ns.id_from_name(owner)?
        .get_stub()?
        .fetch_with_request(req)
        .await
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
    let call = Call::Connect {
        protocols,
        deadline_ms,
    };
    Some(send(&ns, owner, call).await)
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
        let fail = |e: &dyn std::fmt::Display| egn_core::notify::erasure::HubError(e.to_string());
        let mut resp = send(&ns, owner, Call::Erase).await.map_err(|e| fail(&e))?;
        let body = resp.bytes().await.map_err(|e| fail(&e))?;
        egn_http::hub::closed(&body).map_err(|e| fail(&e))
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
        let sent = send(&ns, &owner, Call::Poke);
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
        let config = &state::get(&self.env).config;
        let http = super::http_client::WorkerHttp;
        egn_http::hub::badge(http, config, owner, now() as i64)
            .await
            .map_err(|e| worker::Error::RustError(e.to_string()))
    }

    fn warn(&self, what: &str, e: &worker::Error) {
        worker::console_warn!("{}", json!({ "hub": what, "error": e.to_string() }));
    }
}

impl Accept for InboxHub {
    type Client = WebSocket;

    fn accept(&self, attachment: &Attachment) -> Result<(WebSocket, WebSocket)> {
        let pair = WebSocketPair::new()?;
        self.state.accept_web_socket(&pair.server);
        pair.server.serialize_attachment(attachment)?;
        Ok((pair.server, pair.client))
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
        let header = |name: &str| req.headers().get(name).ok().flatten();
        match egn_http::hub::serve(&self.hub, self, &req.path(), header).await? {
            HubReply::Answer(answer) => super::render(answer),
            HubReply::Upgrade { client, protocol } => {
                let mut resp = Response::from_websocket(client)?;
                if let Some(p) = protocol {
                    resp.headers_mut().set("Sec-WebSocket-Protocol", p)?;
                }
                Ok(resp)
            }
        }
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
