//! The live badge's wire between the worker and an owner's hub (the `INBOX_HUB` Durable Object),
//! both ends in one place: what the worker asks ([`Call::request`]), what a hub does with each
//! request and answers ([`serve`], over `egn_core::notify::hub`'s [`Hub`] and a room that can
//! [`Accept`] a socket), how the worker reads an erasure's answer ([`closed`]), and the badge a
//! hub pushes ([`badge`]). The adapter turns these into `worker` requests and responses.

use crate::backends;
use crate::dispatch::Answer;
use crate::pipeline::Header;
use crate::ApiError;
use egn_core::backend::HttpClient;
use egn_core::config::{Config, ConfigError};
use egn_core::notify::hub::{parse_deadline, Attachment, Hub, Room};
use egn_core::notify::{badge, encode_cursor, next_sync, NotifyError};

const OWNER_HEADER: &str = "X-Inbox-Owner";
/// When the socket's token expires, ms since the epoch (set by the worker after verifying it).
const DEADLINE_HEADER: &str = "X-Token-Deadline-Ms";
const PROTOCOL_HEADER: &str = "Sec-WebSocket-Protocol";

/// What the worker asks an owner's hub.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Call<'a> {
    /// Take an authenticated WebSocket upgrade: the subprotocols the client offered, and when
    /// its token expires (ms since the epoch; `None` for a token without `exp`).
    Connect {
        /// The client's `Sec-WebSocket-Protocol`.
        protocols: &'a str,
        /// The token's expiry.
        deadline_ms: Option<f64>,
    },
    /// The owner's inbox changed.
    Poke,
    /// The owner was erased: close every socket and forget everything.
    Erase,
}

impl Call<'_> {
    /// The URL and headers of the request to `owner`'s hub.
    #[must_use]
    pub fn request(&self, owner: &str) -> (&'static str, Vec<(&'static str, String)>) {
        let mut headers = vec![(OWNER_HEADER, owner.to_owned())];
        let url = match *self {
            Call::Connect {
                protocols,
                deadline_ms,
            } => {
                if let Some(d) = deadline_ms {
                    headers.push((DEADLINE_HEADER, format!("{d}")));
                }
                headers.push(("Upgrade", "websocket".into()));
                headers.push((PROTOCOL_HEADER, protocols.to_owned()));
                "https://hub/connect"
            }
            Call::Poke => "https://hub/poke",
            Call::Erase => "https://hub/erase",
        };
        (url, headers)
    }
}

/// A room that can take a WebSocket for hibernation.
pub trait Accept: Room {
    /// The client end, handed back in the 101.
    type Client;
    /// Makes a socket pair and accepts its server end carrying `attachment` (alarms carry no
    /// request: the socket remembers whose hub this is, with no storage write).
    ///
    /// # Errors
    /// When the runtime refuses the pair or the attachment.
    fn accept(&self, attachment: &Attachment) -> Result<(Self::Socket, Self::Client), Self::Error>;
}

/// What a hub answers the worker.
#[derive(Debug, PartialEq)]
pub enum HubReply<C> {
    /// A plain answer: the poke's empty 200, the erasure's `{"closed": n}`, or the 400 of a
    /// request that names no owner. The worker always names one (a verified token's subject is
    /// never empty), so that 400 is no API answer.
    Answer(Answer),
    /// The 101 with the client end; `protocol` is answered only when the client offered it (a
    /// client that did not would fail the handshake).
    Upgrade {
        /// The client end.
        client: C,
        /// The `Sec-WebSocket-Protocol` to answer.
        protocol: Option<&'static str>,
    },
}

/// What a hub does with the worker's request (`header` reads the request's headers).
///
/// # Errors
/// The room's, from storage, the alarm, the accept or a send.
pub async fn serve<R: Accept>(
    hub: &Hub,
    room: &R,
    path: &str,
    header: impl Fn(&str) -> Option<String>,
) -> Result<HubReply<R::Client>, R::Error> {
    let plain = |status: u16, headers, body: Option<String>| {
        let body = body.map(String::into_bytes);
        Ok(HubReply::Answer(Answer {
            status,
            headers,
            body,
        }))
    };
    let owner = header(OWNER_HEADER).unwrap_or_default();
    if owner.is_empty() {
        return plain(400, Vec::new(), Some("owner missing".into()));
    }
    match path {
        "/erase" => {
            let closed = hub.erase(room).await?;
            let json = Header {
                name: "content-type",
                value: "application/json".into(),
                append: false,
            };
            plain(200, vec![json], Some(format!(r#"{{"closed":{closed}}}"#)))
        }
        "/poke" => {
            hub.poke(room, &owner).await?;
            plain(200, Vec::new(), None)
        }
        _ => {
            let deadline_ms = parse_deadline(header(DEADLINE_HEADER).as_deref());
            let attachment = Attachment {
                deadline_ms,
                owner: Some(owner.clone()),
            };
            let (server, client) = room.accept(&attachment)?;
            hub.connected(room, &server, &owner, deadline_ms).await?;
            let offered = header(PROTOCOL_HEADER).unwrap_or_default();
            let protocol = badge::offers_protocol(&offered).then_some(badge::PROTOCOL);
            Ok(HubReply::Upgrade { client, protocol })
        }
    }
}

/// How many sockets an erasure closed, from the hub's answer.
///
/// # Errors
/// When the answer is not the hub's JSON.
pub fn closed(body: &[u8]) -> serde_json::Result<u32> {
    let v: serde_json::Value = serde_json::from_slice(body)?;
    Ok(v["closed"].as_u64().unwrap_or(0) as u32)
}

/// Why a badge could not be read (the Durable Object logs it; sockets keep the last badge they
/// got).
#[derive(Debug, thiserror::Error)]
pub enum BadgeError {
    /// The configuration does not parse.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No Data API is configured.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The counts could not be read.
    #[error(transparent)]
    Counts(#[from] NotifyError),
}

/// The badge message for `owner` as of `now_ms` (one Data API call).
///
/// # Errors
/// [`BadgeError`].
pub async fn badge<H: HttpClient>(
    http: H,
    config: &Result<Config, ConfigError>,
    owner: &str,
    now_ms: i64,
) -> Result<String, BadgeError> {
    let cfg = config.as_ref().map_err(Clone::clone)?;
    let store = backends::store(http, cfg)?;
    let counts = store.counts(owner, None, now_ms).await?;
    let (pos, _) = next_sync(None, None, now_ms, cfg.notify.sync_settle_ms);
    Ok(badge::message(counts, &encode_cursor(&pos)).to_string())
}

#[cfg(test)]
mod tests;
