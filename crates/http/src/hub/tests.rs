//! The wire over a room in memory: each request the worker builds reaches the hub's handler it
//! names, with a hand-set clock and a badge that names its owner.

use super::*;
use crate::testing::{config, data_api, Script};
use egn_core::backend::native::block_on;
use egn_core::notify::erasure::ERASED_CLOSE_CODE;
use std::cell::{Cell, RefCell};

#[derive(Debug, PartialEq)]
struct Down(&'static str);

/// Sockets by index with what they carry; what was sent and closed; the alarm.
#[derive(Default)]
struct Memory {
    sockets: RefCell<Vec<Attachment>>,
    sent: RefCell<Vec<(usize, String)>>,
    closed: RefCell<Vec<(usize, u16)>>,
    alarm: Cell<Option<f64>>,
    erased: Cell<bool>,
    /// The runtime refuses the socket pair.
    refuse: bool,
}

impl Room for Memory {
    type Socket = usize;
    type Error = Down;
    fn now(&self) -> f64 {
        1_000.0
    }
    fn sockets(&self) -> Vec<usize> {
        let closed = self.closed.borrow();
        let open = |i: &usize| !closed.iter().any(|(c, _)| c == i);
        (0..self.sockets.borrow().len()).filter(open).collect()
    }
    fn attachment(&self, ws: &usize) -> Option<Attachment> {
        self.sockets.borrow().get(*ws).cloned()
    }
    fn send(&self, ws: &usize, msg: &str) -> Result<(), Down> {
        self.sent.borrow_mut().push((*ws, msg.to_owned()));
        Ok(())
    }
    fn close(&self, ws: &usize, code: u16, _reason: &str) {
        self.closed.borrow_mut().push((*ws, code));
    }
    async fn push_at(&self) -> Result<Option<f64>, Down> {
        Ok(None)
    }
    async fn set_push_at(&self, _: f64) -> Result<(), Down> {
        Ok(())
    }
    async fn clear_push_at(&self) -> Result<(), Down> {
        Ok(())
    }
    async fn legacy_owner(&self) -> Result<Option<String>, Down> {
        Ok(None)
    }
    async fn alarm(&self) -> Result<Option<f64>, Down> {
        Ok(self.alarm.get())
    }
    async fn set_alarm(&self, at: f64) -> Result<(), Down> {
        self.alarm.set(Some(at));
        Ok(())
    }
    async fn erase_all(&self) -> Result<(), Down> {
        self.erased.set(true);
        Ok(())
    }
    async fn badge(&self, owner: &str) -> Result<String, Down> {
        Ok(format!("badge of {owner}"))
    }
    fn warn(&self, _: &str, _: &Down) {}
}

impl Accept for Memory {
    type Client = String;
    fn accept(&self, attachment: &Attachment) -> Result<(usize, String), Down> {
        if self.refuse {
            return Err(Down("no pair"));
        }
        let mut sockets = self.sockets.borrow_mut();
        sockets.push(attachment.clone());
        Ok((sockets.len() - 1, format!("client {}", sockets.len() - 1)))
    }
}

/// The worker's request for `call`, served by the hub as the Durable Object receives it.
fn send(hub: &Hub, room: &Memory, call: Call<'_>, owner: &str) -> Result<HubReply<String>, Down> {
    let (url, headers) = call.request(owner);
    let path = url.strip_prefix("https://hub").unwrap();
    let header = |name: &str| {
        let mut found = headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name));
        found.next().map(|(_, v)| v.clone())
    };
    block_on(serve(hub, room, path, header))
}

fn answer(status: u16, body: Option<&str>) -> HubReply<String> {
    HubReply::Answer(Answer {
        status,
        headers: Vec::new(),
        body: body.map(|b| b.as_bytes().to_vec()),
    })
}

#[test]
fn a_connect_is_accepted_carrying_its_owner_and_deadline_and_gets_the_badge() {
    let (hub, room) = (Hub::default(), Memory::default());
    let deadline = Some(1_700_000_000_500.0);
    let call = Call::Connect {
        protocols: "inbox.v1, auth.xyz",
        deadline_ms: deadline,
    };
    let reply = send(&hub, &room, call, "ana").unwrap();
    let protocol = Some(badge::PROTOCOL);
    let client = "client 0".to_owned();
    assert_eq!(reply, HubReply::Upgrade { client, protocol });
    let owner = Some("ana".to_owned());
    let carried = Attachment {
        deadline_ms: deadline,
        owner,
    };
    assert_eq!(*room.sockets.borrow(), [carried]);
    assert_eq!(*room.sent.borrow(), [(0, "badge of ana".to_owned())]);
    assert_eq!(room.alarm.get(), deadline, "the alarm closes it at expiry");
    // No protocol offered, none answered; no deadline, no alarm.
    let room = Memory::default();
    let call = Call::Connect {
        protocols: "",
        deadline_ms: None,
    };
    let reply = send(&hub, &room, call, "bo").unwrap();
    let client = "client 0".to_owned();
    let protocol = None;
    assert_eq!(reply, HubReply::Upgrade { client, protocol });
    assert_eq!(room.sockets.borrow()[0].deadline_ms, None);
    assert_eq!(room.alarm.get(), None);
}

#[test]
fn a_poke_pushes_and_an_erasure_closes_every_socket_and_says_how_many() {
    let (hub, room) = (Hub::default(), Memory::default());
    let call = Call::Connect {
        protocols: "inbox.v1",
        deadline_ms: None,
    };
    send(&hub, &room, call, "ana").unwrap();
    send(&hub, &room, call, "ana").unwrap();
    room.sent.borrow_mut().clear();
    assert_eq!(send(&hub, &room, Call::Poke, "ana"), Ok(answer(200, None)));
    assert_eq!(room.sent.borrow().len(), 2, "{:?}", room.sent.borrow());
    let HubReply::Answer(erased) = send(&hub, &room, Call::Erase, "ana").unwrap() else {
        panic!("an erasure answers plainly");
    };
    assert_eq!(erased.status, 200);
    assert_eq!(erased.headers[0].name, "content-type");
    assert_eq!(erased.headers[0].value, "application/json");
    let body = erased.body.unwrap();
    assert_eq!(body, br#"{"closed":2}"#);
    assert_eq!(closed(&body).unwrap(), 2);
    let code = ERASED_CLOSE_CODE;
    assert_eq!(*room.closed.borrow(), [(0, code), (1, code)]);
    assert!(room.erased.get());
}

#[test]
fn a_request_naming_no_owner_is_refused_before_the_hub_runs() {
    let (hub, room) = (Hub::default(), Memory::default());
    for path in ["/erase", "/poke", "/connect"] {
        let reply = block_on(serve(&hub, &room, path, |_| None));
        assert_eq!(reply, Ok(answer(400, Some("owner missing"))));
    }
    assert_eq!(
        send(&hub, &room, Call::Erase, ""),
        Ok(answer(400, Some("owner missing")))
    );
    assert!(!room.erased.get());
    assert!(room.sockets.borrow().is_empty());
    // What the worker reads back from it is an error, not "nothing closed".
    assert!(closed(b"owner missing").is_err());
}

#[test]
fn a_refused_socket_pair_is_the_room_s_error_and_nothing_is_sent() {
    let hub = Hub::default();
    let room = Memory {
        refuse: true,
        ..Memory::default()
    };
    let call = Call::Connect {
        protocols: "inbox.v1",
        deadline_ms: Some(5.0),
    };
    assert_eq!(send(&hub, &room, call, "ana"), Err(Down("no pair")));
    assert!(room.sent.borrow().is_empty());
    assert_eq!(room.alarm.get(), None);
}

#[test]
fn the_badge_is_read_through_the_data_api_and_each_failure_says_why() {
    let cfg = config(&[]);
    let http = Script::default();
    let counts = r#"{"documents":[{"unread":[{"n":3}],"unseen":[{"n":2}]}]}"#;
    http.0.borrow_mut().push(data_api(200, counts));
    let msg = block_on(badge(http.clone(), &cfg, "ana", 1_700_000_000_000)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&msg).unwrap();
    assert_eq!(
        (v["unread"].as_u64(), v["unseen"].as_u64()),
        (Some(3), Some(2))
    );
    assert!(v["sync"].as_str().is_some_and(|s| !s.is_empty()), "{msg}");
    assert_eq!(http.1.get(), 1, "one Data API call");
    // Unreachable, then not configured, then a configuration that does not parse.
    let e = block_on(badge(http.clone(), &cfg, "ana", 0)).unwrap_err();
    assert!(matches!(e, BadgeError::Counts(_)), "{e}");
    let no_api = config(&[("DATA_API_URL", ""), ("DATA_API_KEY", "")]);
    let e = block_on(badge(http.clone(), &no_api, "ana", 0)).unwrap_err();
    assert!(matches!(e, BadgeError::Api(_)), "{e}");
    let bad = config(&[("NOTIFY_MAX_PER_OWNER", "many")]);
    assert!(bad.is_err());
    let e = block_on(badge(http.clone(), &bad, "ana", 0)).unwrap_err();
    assert!(matches!(e, BadgeError::Config(_)), "{e}");
    assert_eq!(
        http.1.get(),
        2,
        "neither of the last two reached the Data API"
    );
}
