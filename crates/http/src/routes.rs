//! The route table: every route's method, path, who may call it, its body limit and its
//! operation. 404, 405 with `Allow`, authentication before the body is read, CORS preflights and
//! the OpenAPI document all come from this one table, so they cannot disagree.

use super::error::ApiError;
use crate::ErrorCode;
use std::borrow::Cow;

/// HTTP methods the API uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// POST
    Post,
    /// PUT
    Put,
    /// DELETE
    Delete,
}

impl Method {
    /// Upper-case name, as on the wire.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "GET" => Some(Method::Get),
            "POST" => Some(Method::Post),
            "PUT" => Some(Method::Put),
            "DELETE" => Some(Method::Delete),
            _ => None,
        }
    }
}

pub use egn_core::auth::Scope;

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone.
    Public,
    /// A user with a verified token; the owner is its `sub`.
    User,
    /// A service key holding the scope.
    Service(Scope),
}

/// Which rate limiter a route counts against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateLimit {
    /// Not limited (health, documents, the console).
    None,
    /// Per client IP (public geo routes).
    PerIp,
    /// Per authenticated user.
    PerUser,
}

/// What a route does; the adapter maps each to its handler with an exhaustive `match`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `GET /healthz`
    Healthz,
    /// `GET /openapi.json`
    OpenApi,
    /// `GET /` — the web console.
    Console,
    /// `GET /www/{file}` — the console's script, style and world outline.
    ConsoleAsset,
    /// Coordinates → country, one point.
    CountryOne,
    /// Coordinates → country, a batch.
    CountryBatch,
    /// IP → country, one address.
    IpOne,
    /// IP → country, a batch.
    IpBatch,
    /// Where the caller is.
    Me,
    /// One page of the caller's inbox.
    List,
    /// Unread and unseen counts.
    UnreadCount,
    /// The change feed after a sync position.
    Changes,
    /// Mark read/seen/archived.
    Mark,
    /// The live badge: a WebSocket to the owner's hub.
    Stream,
    /// Mark all read/seen, archive all read, delete all.
    Bulk,
    /// Read the caller's preferences.
    GetPreferences,
    /// Replace the caller's preferences.
    PutPreferences,
    /// Delete one item.
    DeleteItem,
    /// A service creates a notification event.
    CreateEvent,
    /// A service retracts a sender.
    Retract,
    /// Create the collection's indexes.
    AdminIndexes,
    /// List dead letters (queued events that failed every attempt).
    DeadLetters,
    /// Send dead letters back to the queue.
    ReplayDeadLetters,
    /// Erase everything stored about an owner (start or continue the job).
    EraseOwner,
    /// Erase a sender from every item of every owner (start or continue the job).
    EraseSender,
    /// An erasure job's progress.
    Erasure,
    /// Everything stored about an owner (service).
    ExportOwner,
    /// Everything stored about the caller.
    ExportMine,
    /// Benchmark: a trivial endpoint.
    #[cfg(feature = "bench")]
    BenchNoop,
    /// Benchmark: geo lookups inside the isolate.
    #[cfg(feature = "bench")]
    BenchGeo,
    /// Benchmark: IP lookups inside the isolate.
    #[cfg(feature = "bench")]
    BenchIp,
    /// Benchmark: token verification inside the isolate.
    #[cfg(feature = "bench")]
    BenchAuth,
}

/// One route.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    /// Method.
    pub method: Method,
    /// Path; one `{name}` segment at most, which matches exactly one path segment.
    pub path: &'static str,
    /// Operation.
    pub op: Op,
    /// Who may call it.
    pub access: Access,
    /// Largest accepted body in bytes (0 = the route takes no body).
    pub body_limit: usize,
    /// Rate limiter.
    pub rate_limit: RateLimit,
    /// A `/__bench/*` route. These exist only in a build with the cargo feature `bench`, and
    /// even there are served only when `ENABLE_BENCH` is on; never in the OpenAPI document.
    pub bench: bool,
    /// OpenAPI `operationId`.
    pub operation_id: &'static str,
    /// One-line summary (OpenAPI).
    pub summary: &'static str,
    /// OpenAPI tag.
    pub tag: &'static str,
}

const KIB: usize = 1024;
/// Largest batch body (10 000 points or addresses).
pub const MAX_BATCH_BODY: usize = 1 << 20;

const fn route(
    method: Method,
    path: &'static str,
    op: Op,
    access: Access,
    operation_id: &'static str,
    summary: &'static str,
    tag: &'static str,
) -> Route {
    Route {
        method,
        path,
        op,
        access,
        body_limit: 0,
        rate_limit: match access {
            Access::User => RateLimit::PerUser,
            _ => RateLimit::None,
        },
        bench: false,
        operation_id,
        summary,
        tag,
    }
}

const fn body(mut r: Route, limit: usize) -> Route {
    r.body_limit = limit;
    r
}

const fn per_ip(mut r: Route) -> Route {
    r.rate_limit = RateLimit::PerIp;
    r
}

#[cfg(feature = "bench")]
const fn bench(mut r: Route) -> Route {
    r.bench = true;
    r
}

use Access::{Public, Service, User};
use Method::{Delete, Get, Post, Put};

/// Every route of the worker.
pub const ROUTES: &[Route] = &[
    route(
        Get,
        "/healthz",
        Op::Healthz,
        Public,
        "healthz",
        "Asset versions, IPDB state, missing secrets",
        "ops",
    ),
    route(
        Get,
        "/openapi.json",
        Op::OpenApi,
        Public,
        "openapi",
        "This document",
        "ops",
    ),
    route(
        Get,
        "/",
        Op::Console,
        Public,
        "console",
        "The web console",
        "ops",
    ),
    route(
        Get,
        "/www/{file}",
        Op::ConsoleAsset,
        Public,
        "consoleAsset",
        "A file of the web console (script, style, world outline)",
        "ops",
    ),
    per_ip(route(
        Get,
        "/v1/geo/country",
        Op::CountryOne,
        Public,
        "countryForPoint",
        "Country at a coordinate",
        "geo",
    )),
    per_ip(body(
        route(
            Post,
            "/v1/geo/country",
            Op::CountryBatch,
            Public,
            "countryForPoints",
            "Countries of up to 10 000 coordinates",
            "geo",
        ),
        MAX_BATCH_BODY,
    )),
    per_ip(route(
        Get,
        "/v1/geo/ip",
        Op::IpOne,
        Public,
        "countryForIp",
        "Country of an IP address",
        "geo",
    )),
    per_ip(body(
        route(
            Post,
            "/v1/geo/ip",
            Op::IpBatch,
            Public,
            "countryForIps",
            "Countries of up to 10 000 IP addresses",
            "geo",
        ),
        MAX_BATCH_BODY,
    )),
    per_ip(route(
        Get,
        "/v1/geo/me",
        Op::Me,
        Public,
        "whereAmI",
        "The caller's country by edge, IPDB and optional coordinates",
        "geo",
    )),
    route(
        Get,
        "/v1/notifications",
        Op::List,
        User,
        "listNotifications",
        "One page of the caller's inbox, newest first",
        "inbox",
    ),
    route(
        Get,
        "/v1/notifications/unread-count",
        Op::UnreadCount,
        User,
        "unreadCount",
        "The caller's unread and unseen counts",
        "inbox",
    ),
    route(
        Get,
        "/v1/notifications/changes",
        Op::Changes,
        User,
        "changes",
        "Everything changed after a sync position, deletions included",
        "inbox",
    ),
    route(
        Get,
        "/v1/notifications/stream",
        Op::Stream,
        User,
        "stream",
        "Live badge over a WebSocket: {unread, unseen, sync} on connect and after each change",
        "inbox",
    ),
    body(
        route(
            Post,
            "/v1/notifications/bulk",
            Op::Bulk,
            User,
            "bulk",
            "Mark all read or seen, archive all read, or delete all",
            "inbox",
        ),
        KIB,
    ),
    route(
        Get,
        "/v1/notifications/preferences",
        Op::GetPreferences,
        User,
        "getPreferences",
        "The caller's muted categories and types",
        "inbox",
    ),
    body(
        route(
            Put,
            "/v1/notifications/preferences",
            Op::PutPreferences,
            User,
            "putPreferences",
            "Replace the caller's muted categories and types",
            "inbox",
        ),
        8 * KIB,
    ),
    body(
        route(
            Post,
            "/v1/notifications/mark",
            Op::Mark,
            User,
            "mark",
            "Mark one item or all read, seen or archived",
            "inbox",
        ),
        4 * KIB,
    ),
    route(
        Get,
        "/v1/notifications/export",
        Op::ExportMine,
        User,
        "exportMine",
        "Everything stored about the caller, one page at a time",
        "inbox",
    ),
    route(
        Delete,
        "/v1/notifications/items/{itemKey}",
        Op::DeleteItem,
        User,
        "deleteItem",
        "Delete one item",
        "inbox",
    ),
    body(
        route(
            Post,
            "/v1/notifications/events",
            Op::CreateEvent,
            Service(Scope::NotifyWrite),
            "createEvent",
            "Create or merge notifications: one event, a batch, or a fan-out",
            "service",
        ),
        // A fan-out to 10 000 owners; one event alone is still held to 64 KiB.
        MAX_BATCH_BODY,
    ),
    body(
        route(
            Post,
            "/v1/notifications/retractions",
            Op::Retract,
            Service(Scope::NotifyWrite),
            "retract",
            "Remove a sender from an item",
            "service",
        ),
        4 * KIB,
    ),
    route(
        Post,
        "/v1/admin/indexes",
        Op::AdminIndexes,
        Service(Scope::Admin),
        "ensureIndexes",
        "Create the collection's indexes (idempotent)",
        "service",
    ),
    route(
        Get,
        "/v1/admin/dead-letters",
        Op::DeadLetters,
        Service(Scope::Admin),
        "listDeadLetters",
        "Queued events that failed every attempt, oldest first",
        "service",
    ),
    body(
        route(
            Post,
            "/v1/admin/dead-letters/replay",
            Op::ReplayDeadLetters,
            Service(Scope::Admin),
            "replayDeadLetters",
            "Send dead letters back to the queue",
            "service",
        ),
        16 * KIB,
    ),
    route(
        Delete,
        "/v1/admin/owners/{owner}",
        Op::EraseOwner,
        Service(Scope::Privacy),
        "eraseOwner",
        "Erase everything stored about a user as a recipient (resumable)",
        "privacy",
    ),
    route(
        Get,
        "/v1/admin/owners/{owner}/export",
        Op::ExportOwner,
        Service(Scope::Privacy),
        "exportOwner",
        "Everything stored about a user as a recipient, one page at a time",
        "privacy",
    ),
    route(
        Post,
        "/v1/admin/senders/{senderId}/erasure",
        Op::EraseSender,
        Service(Scope::Privacy),
        "eraseSender",
        "Erase a sender's name, avatar and count from every item of every owner (resumable)",
        "privacy",
    ),
    route(
        Get,
        "/v1/admin/erasures/{id}",
        Op::Erasure,
        Service(Scope::Privacy),
        "getErasure",
        "An erasure's progress: what each store lost, late events dropped",
        "privacy",
    ),
    // The bench routes: compiled out of the default build, so a deployed worker answers them
    // 404 like any unknown path whatever its variables say.
    #[cfg(feature = "bench")]
    bench(route(
        Get,
        "/__bench/noop",
        Op::BenchNoop,
        Public,
        "benchNoop",
        "Trivial endpoint",
        "bench",
    )),
    #[cfg(feature = "bench")]
    bench(body(
        route(
            Post,
            "/__bench/geo",
            Op::BenchGeo,
            Public,
            "benchGeo",
            "Geo lookups in the isolate",
            "bench",
        ),
        MAX_BATCH_BODY,
    )),
    #[cfg(feature = "bench")]
    bench(route(
        Get,
        "/__bench/ip",
        Op::BenchIp,
        Public,
        "benchIp",
        "IP lookups in the isolate",
        "bench",
    )),
    #[cfg(feature = "bench")]
    bench(route(
        Get,
        "/__bench/auth",
        Op::BenchAuth,
        Public,
        "benchAuth",
        "Token verification in the isolate",
        "bench",
    )),
];

/// A matched route and its path parameter, if the pattern has one.
#[derive(Debug)]
pub struct Matched {
    /// The route.
    pub route: &'static Route,
    /// The decoded `{…}` segment.
    pub param: Option<String>,
}

/// Matches a raw (still percent-encoded) path against a pattern: `None` if it does not fit,
/// `Some(Err)` if it fits but its parameter segment is not valid UTF-8 once decoded.
fn match_path(pattern: &str, path: &str) -> Option<Result<Option<String>, ApiError>> {
    let (mut pat, mut got) = (pattern.split('/'), path.split('/'));
    let mut param = None;
    loop {
        match (pat.next(), got.next()) {
            (None, None) => return Some(Ok(param)),
            (Some(p), Some(g)) if p.starts_with('{') => {
                if g.is_empty() {
                    return None;
                }
                match percent_encoding::percent_decode_str(g).decode_utf8() {
                    Ok(s) => param = Some(s.into_owned()),
                    Err(_) => {
                        return Some(Err(ApiError::new(
                            ErrorCode::InvalidPath,
                            format!("path segment of {pattern} is not UTF-8 once decoded"),
                        )))
                    }
                }
            }
            (Some(p), Some(g)) if p == g => {}
            _ => return None,
        }
    }
}

/// Methods allowed on a path (empty when no route has it), in table order.
#[must_use]
pub fn allowed(path: &str, bench_enabled: bool) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = ROUTES
        .iter()
        .filter(|r| bench_enabled || !r.bench)
        .filter(|r| match_path(r.path, path).is_some())
        .map(|r| r.method.as_str())
        .collect();
    out.dedup();
    out
}

/// What a log line shows of a path: the route's pattern when a route with a parameter matches
/// (`/v1/admin/owners/{owner}`), so no owner id, item key or file name is logged; any other path
/// as it came, at most 200 bytes (docs/privacy.md, "What the logs contain").
#[must_use]
pub fn log_path(path: &str) -> Cow<'_, str> {
    if let Some(r) = ROUTES
        .iter()
        .find(|r| r.path.contains('{') && match_path(r.path, path).is_some())
    {
        return Cow::Borrowed(r.path);
    }
    if path.len() > 200 {
        Cow::Owned(format!("{}…", &path[..path.floor_char_boundary(200)]))
    } else {
        Cow::Borrowed(path)
    }
}

/// Finds the route for a request.
///
/// # Errors
/// 404 `not_found` when no route has the path; 405 `method_not_allowed` (its `allow` lists the
/// methods) when the path exists under other methods; 400 `invalid_path` for a parameter that
/// is not UTF-8.
pub fn resolve(method: &str, path: &str, bench_enabled: bool) -> Result<Matched, ApiError> {
    let m = Method::parse(method);
    let mut path_known = false;
    for r in ROUTES.iter().filter(|r| bench_enabled || !r.bench) {
        let Some(hit) = match_path(r.path, path) else {
            continue;
        };
        path_known = true;
        if Some(r.method) == m {
            return Ok(Matched {
                route: r,
                param: hit?,
            });
        }
    }
    if path_known {
        return Err(ApiError::method_not_allowed(
            method,
            &allowed(path, bench_enabled).join(", "),
        ));
    }
    let shown: Cow<'_, str> = if path.len() > 200 {
        Cow::Owned(format!("{}…", &path[..path.floor_char_boundary(200)]))
    } else {
        Cow::Borrowed(path)
    };
    Err(ApiError::not_found(&shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_reachable_and_unique() {
        for r in ROUTES {
            let path = ["{itemKey}", "{owner}", "{id}", "{file}", "{senderId}"]
                .iter()
                .fold(r.path.to_owned(), |p, name| p.replace(name, "k"));
            let m = resolve(r.method.as_str(), &path, true).expect(r.path);
            assert_eq!(m.route.op, r.op);
        }
        for (i, a) in ROUTES.iter().enumerate() {
            for b in &ROUTES[i + 1..] {
                assert!(
                    !(a.method == b.method && a.path == b.path),
                    "{} {} twice",
                    a.method.as_str(),
                    a.path
                );
                assert_ne!(a.operation_id, b.operation_id);
            }
        }
    }

    #[test]
    fn logged_paths_name_no_parameter() {
        assert_eq!(
            log_path("/v1/admin/owners/ana%40x"),
            "/v1/admin/owners/{owner}"
        );
        assert_eq!(
            log_path("/v1/admin/owners/ana/export"),
            "/v1/admin/owners/{owner}/export"
        );
        assert_eq!(
            log_path("/v1/notifications/items/post:1"),
            "/v1/notifications/items/{itemKey}"
        );
        assert_eq!(log_path("/v1/notifications"), "/v1/notifications");
    }

    #[test]
    fn unknown_paths_are_404_and_wrong_methods_405_with_allow() {
        assert_eq!(resolve("GET", "/nope", false).unwrap_err().status(), 404);
        let e = resolve("PUT", "/v1/geo/country", false).unwrap_err();
        assert_eq!((e.status(), e.allow.as_deref()), (405, Some("GET, POST")));
        let e = resolve("GET", "/v1/admin/indexes", false).unwrap_err();
        assert_eq!((e.status(), e.allow.as_deref()), (405, Some("POST")));
        let e = resolve("GET", "/v1/notifications/items/abc", false).unwrap_err();
        assert_eq!((e.status(), e.allow.as_deref()), (405, Some("DELETE")));
        assert_eq!(
            resolve("GET", "/v1/admin/other", false)
                .unwrap_err()
                .status(),
            404
        );
    }

    #[cfg(feature = "bench")]
    #[test]
    fn bench_routes_exist_only_when_enabled() {
        assert_eq!(
            resolve("GET", "/__bench/noop", false).unwrap_err().status(),
            404
        );
        assert_eq!(
            resolve("GET", "/__bench/noop", true).unwrap().route.op,
            Op::BenchNoop
        );
    }

    #[cfg(not(feature = "bench"))]
    #[test]
    fn without_the_bench_feature_no_bench_route_exists_even_when_enabled() {
        assert!(ROUTES
            .iter()
            .all(|r| !r.bench && !r.path.starts_with("/__bench")));
        for (method, path) in [("GET", "/__bench/noop"), ("POST", "/__bench/geo")] {
            let e = resolve(method, path, true).unwrap_err();
            assert_eq!((e.status(), e.code), (404, ErrorCode::NotFound), "{path}");
            assert!(allowed(path, true).is_empty(), "{path}");
        }
    }

    #[test]
    fn item_key_is_exactly_one_decoded_segment() {
        let m = resolve("DELETE", "/v1/notifications/items/post%3A1%2Fa", false).unwrap();
        assert_eq!(m.param.as_deref(), Some("post:1/a"));
        // A raw slash is a second segment: no such route.
        assert_eq!(
            resolve("DELETE", "/v1/notifications/items/a/b", false)
                .unwrap_err()
                .status(),
            404
        );
        assert_eq!(
            resolve("DELETE", "/v1/notifications/items/", false)
                .unwrap_err()
                .status(),
            404
        );
        let e = resolve("DELETE", "/v1/notifications/items/%FF%FE", false).unwrap_err();
        assert_eq!((e.status(), e.code), (400, ErrorCode::InvalidPath));
    }

    #[test]
    fn bodies_only_where_declared_and_users_are_rate_limited() {
        for r in ROUTES {
            assert_eq!(
                r.body_limit > 0,
                matches!(r.method, Method::Post | Method::Put)
                    && !matches!(r.op, Op::AdminIndexes | Op::EraseSender)
            );
            if r.access == Access::User {
                assert_eq!(r.rate_limit, RateLimit::PerUser);
            }
        }
    }
}
