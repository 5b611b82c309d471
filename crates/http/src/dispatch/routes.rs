//! The route handlers by [`Op`]: each parses, calls the core through the ports and renders.

use super::{Answer, Backends, Background, Badges, Handled, Incoming, Isolate, Level, Ports};
use crate::assets::{self, Tiles};
use crate::notify_bodies::Indexes;
use crate::notify_routes::Flow;
use crate::pipeline::{self, Caller, UserTokens};
use crate::routes::{Matched, Op};
use crate::{console, geo, ip, notify, notify_routes, privacy, user_writes, ApiError, Reply};
use egn_core::config::Config;
use egn_core::notify::{Deferred, NotificationStore, NotifyService};
use serde_json::json;

#[cfg(feature = "bench")]
mod bench;

type Result<T> = std::result::Result<T, ApiError>;

/// What every handler reads.
pub(super) struct Call<'a, P> {
    pub cfg: &'a Config,
    pub ports: &'a P,
    pub caller: &'a Caller,
    pub query: &'a str,
    pub body: &'a [u8],
}

impl<P: Ports> Call<'_, P> {
    fn now(&self) -> i64 {
        self.ports.now_ms() as i64
    }
    fn owner(&self) -> Result<&str> {
        self.caller.owner()
    }
    fn store(&self) -> Result<NotificationStore<P::Http>> {
        crate::backends::store(self.ports.http(), self.cfg)
    }
    fn service(&self) -> Result<NotifyService<P::Http>> {
        crate::backends::service(self.ports.http(), self.cfg)
    }
}

/// Calls the handler of `matched`'s route.
pub(super) async fn route<P: Ports, U: UserTokens, R: Incoming>(
    c: Call<'_, P>,
    req: &R,
    isolate: &Isolate<U>,
    matched: Matched,
) -> Result<Handled<P::Socket>> {
    let param = matched.param.unwrap_or_default();
    let answer = match matched.route.op {
        Op::Healthz => super::healthz(c.ports, isolate).await,
        Op::OpenApi => Ok(super::document(c.ports)),
        Op::Console => console_page(c.ports).await,
        Op::ConsoleAsset => console_file(c.ports, &param).await,
        Op::CountryOne | Op::CountryBatch | Op::IpOne | Op::IpBatch | Op::Me => {
            geo_route(&c, req, matched.route.op).await
        }
        Op::Stream => return stream(&c, req, matched.route).await,
        Op::List | Op::UnreadCount | Op::Changes | Op::GetPreferences | Op::PutPreferences => {
            inbox_read(&c, matched.route.op).await
        }
        Op::Mark | Op::Bulk | Op::DeleteItem | Op::CreateEvent | Op::Retract => {
            write(&c, req, matched.route.op, &param).await
        }
        Op::AdminIndexes => Answer::ok(&Indexes {
            indexes: c.store()?.ensure_indexes().await?,
        }),
        Op::DeadLetters => {
            Answer::ok(&notify_routes::get_dead_letters(&c.service()?, c.query).await?)
        }
        Op::ReplayDeadLetters => {
            let q = c.ports.queue();
            Answer::ok(&notify_routes::post_replay(&c.service()?, c.body, q.as_ref()).await?)
        }
        Op::EraseOwner | Op::EraseSender | Op::Erasure | Op::ExportOwner | Op::ExportMine => {
            privacy_route(&c, matched.route.op, &param).await
        }
        #[cfg(feature = "bench")]
        Op::BenchNoop => Answer::ok(&json!({ "ok": true })),
        #[cfg(feature = "bench")]
        Op::BenchGeo => bench::geo(&c).await,
        #[cfg(feature = "bench")]
        Op::BenchIp => bench::ip(&c).await,
        #[cfg(feature = "bench")]
        Op::BenchAuth => bench::auth(&c, req, isolate).await,
    };
    answer.map(Handled::Answer)
}

/// The console's page and files: each with the console's Content-Security-Policy.
fn console_answer(bytes: Vec<u8>, ctype: &str) -> Answer {
    let h = super::header;
    Answer {
        status: 200,
        headers: vec![
            h("content-type", ctype),
            h("content-security-policy", console::CSP),
            h("x-content-type-options", "nosniff"),
            h("referrer-policy", "no-referrer"),
            // Revalidated on every load: a deploy is seen at once, and the files are small.
            h("cache-control", "no-cache"),
        ],
        body: Some(bytes),
    }
}

/// `GET /`: the console page.
async fn console_page(ports: &impl Ports) -> Result<Answer> {
    let bytes = assets::required(ports, "www/index.html").await?;
    Ok(console_answer(bytes, "text/html; charset=utf-8"))
}

/// `GET /www/{file}`: one of the console's files; anything else is a 404.
async fn console_file(ports: &impl Ports, name: &str) -> Result<Answer> {
    let not_found = || ApiError::not_found(&format!("/www/{name}"));
    let ctype = console::content_type(name).ok_or_else(not_found)?;
    let bytes = ports
        .read(&format!("www/{name}"))
        .await?
        .ok_or_else(not_found)?;
    Ok(console_answer(bytes, ctype))
}

/// The geo and IP routes.
async fn geo_route<P: Ports, R: Incoming>(c: &Call<'_, P>, req: &R, op: Op) -> Result<Answer> {
    let (layers, tiles) = (c.ports.layers(), Tiles(c.ports));
    let ipdb = &c.cfg.ipdb;
    match op {
        Op::CountryOne => Answer::ok(&geo::get_country(&layers, &tiles, c.query).await?),
        Op::CountryBatch => Answer::ok(&geo::post_country(&layers, &tiles, c.query, c.body).await?),
        Op::IpOne => {
            let ip = ip::parse_ip_query(c.query)?;
            Answer::ok(&ip::lookup(&*c.ports.served(ipdb, &[ip]).await?, ip))
        }
        Op::IpBatch => {
            let ips = ip::parse_ip_batch(c.body)?;
            Answer::ok(&ip::lookups(&*c.ports.served(ipdb, &ips).await?, &ips))
        }
        // `GET /v1/geo/me`: edge country, IPDB answer for the caller and (optionally) the
        // coordinates' country, with whether the sources that answered agree.
        _ => {
            let ip_header = req.header("CF-Connecting-IP");
            let edge = ip::Edge::new(req.cf_country(), ip_header.as_deref(), req.cf_timezone());
            let s = c.ports.served(ipdb, edge.ip.as_slice()).await?;
            Answer::ok(&ip::me(&s, &layers, &tiles, edge, c.query).await?)
        }
    }
}

/// `GET /v1/notifications/stream` (user): the WebSocket goes to the owner's hub, which closes it
/// at the token's expiry with 4001 `token_expired`.
async fn stream<P: Ports, R: Incoming>(
    c: &Call<'_, P>,
    req: &R,
    route: &crate::routes::Route,
) -> Result<Handled<P::Socket>> {
    let deadline = pipeline::token_deadline(req, route, c.cfg);
    let owner = c.owner()?;
    pipeline::require_websocket(req)?;
    let protocols = req.header("Sec-WebSocket-Protocol").unwrap_or_default();
    c.ports
        .connect(owner, &protocols, deadline)
        .await
        .ok_or_else(|| {
            ApiError::not_configured("live badges (the INBOX_HUB Durable Object binding)")
        })?
        .map(Handled::Upgrade)
        .map_err(ApiError::internal)
}

/// The user's reads, and the preferences.
async fn inbox_read<P: Ports>(c: &Call<'_, P>, op: Op) -> Result<Answer> {
    let (owner, q, now) = (c.owner()?, c.query, c.now());
    match op {
        Op::List => Answer::ok(&notify::get_list(c.store(), owner, q, now).await?),
        Op::UnreadCount => Answer::ok(&notify::get_unread_count(c.store(), owner, q, now).await?),
        Op::Changes => Answer::ok(&notify::get_changes(c.store(), owner, q, now).await?),
        Op::GetPreferences => {
            let svc = c.service()?;
            let (reply, deferred) = notify_routes::get_preferences(&svc, owner).await;
            defer(c.ports, svc, deferred);
            Answer::ok(&reply?)
        }
        _ => Answer::ok(&notify_routes::put_preferences(&c.service()?, owner, c.body, now).await?),
    }
}

/// The writes under an `Idempotency-Key`: the user's state changes and the service's events and
/// retractions.
async fn write<P: Ports, R: Incoming>(
    c: &Call<'_, P>,
    req: &R,
    op: Op,
    item_key: &str,
) -> Result<Answer> {
    let svc = c.service()?;
    let key = req.header("Idempotency-Key");
    let (key, now, body) = (key.as_deref(), c.now(), c.body);
    let flow = match op {
        Op::CreateEvent => {
            let q = c.ports.queue();
            notify_routes::post_events(&svc, body, key, now, q.as_ref()).await
        }
        Op::Retract => notify_routes::post_retraction(&svc, body, key, now).await,
        Op::Mark => user_writes::post_mark(&svc, c.owner()?, body, key, now).await,
        Op::Bulk => user_writes::post_bulk(&svc, c.owner()?, body, key, now).await,
        _ => user_writes::delete_item(&svc, c.owner()?, item_key, key, now).await,
    };
    answer_write(c.ports, svc, flow)
}

/// The privacy routes.
async fn privacy_route<P: Ports>(c: &Call<'_, P>, op: Op, param: &str) -> Result<Answer> {
    let (svc, now) = (c.service()?, c.now());
    match op {
        Op::EraseOwner => {
            let (hubs, q) = (c.ports.hubs(), c.ports.queue());
            let (status, body) = privacy::delete_owner(&svc, param, &hubs, q.as_ref(), now).await?;
            Answer::json(status, &body)
        }
        Op::EraseSender => {
            let q = c.ports.queue();
            let (status, body) = privacy::erase_sender(&svc, param, q.as_ref(), now).await?;
            Answer::json(status, &body)
        }
        Op::Erasure => Answer::ok(&privacy::get_erasure(&svc, param).await?),
        Op::ExportOwner => Answer::ok(&privacy::get_export(&svc, param, c.query).await?),
        _ => Answer::ok(&privacy::get_export(&svc, c.owner()?, c.query).await?),
    }
}

/// Runs the deferred work after the answer; each line it reports is logged as a warning.
fn defer<P: Background + Backends>(ports: &P, svc: NotifyService<P::Http>, work: Vec<Deferred>) {
    if work.is_empty() {
        return;
    }
    ports.after(Box::pin(async move {
        let lines = svc.run_deferred(work).await;
        lines
            .into_iter()
            .map(|line| (Level::Warn, json!({ "deferred": line }).to_string()))
            .collect()
    }));
}

/// Renders a write's flow: its deferred work (the Idempotency-Key record among it) and the
/// badge pokes run after the answer.
pub(super) fn answer_write<P: Background + Backends + Badges>(
    ports: &P,
    svc: NotifyService<P::Http>,
    (reply, deferred): Flow,
) -> Result<Answer> {
    defer(ports, svc, deferred);
    let reply: Reply = reply?;
    ports.poke(reply.changed.clone());
    let mut answer = Answer::json(reply.status, &reply.body)?;
    if reply.replayed {
        answer
            .headers
            .push(super::header("Idempotent-Replayed", "true"));
    }
    Ok(answer)
}
