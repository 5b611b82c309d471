//! The hub over a room in memory and a hand-set clock. A badge read can be held pending, and
//! the futures are then polled by hand, so every interleaving is exact and no test sleeps.

use super::*;
use std::cell::RefCell;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

#[derive(Debug, PartialEq)]
struct Down(&'static str);

#[derive(Default)]
struct Socket {
    attachment: Option<Attachment>,
    sent: Vec<String>,
    closed: Option<(u16, String)>,
}

/// Storage, alarm and sockets in memory. Badges read `badge N`, N counting reads.
#[derive(Default)]
struct Memory {
    now: Cell<f64>,
    sockets: RefCell<Vec<Socket>>,
    push_at: Cell<Option<f64>>,
    alarm: Cell<Option<f64>>,
    legacy_owner: RefCell<Option<String>>,
    legacy_reads: Cell<usize>,
    badge_reads: Cell<usize>,
    badge_down: Cell<bool>,
    badge_held: Cell<bool>,
    warnings: RefCell<Vec<String>>,
}

struct Held<'a>(&'a Memory);

impl Future for Held<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.badge_held.get() {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

impl Room for Memory {
    type Socket = usize;
    type Error = Down;
    fn now(&self) -> f64 {
        self.now.get()
    }
    fn sockets(&self) -> Vec<usize> {
        let sockets = self.sockets.borrow();
        (0..sockets.len())
            .filter(|&i| sockets[i].closed.is_none())
            .collect()
    }
    fn attachment(&self, ws: &usize) -> Option<Attachment> {
        self.sockets.borrow()[*ws].attachment.clone()
    }
    fn send(&self, ws: &usize, msg: &str) -> Result<(), Down> {
        let mut sockets = self.sockets.borrow_mut();
        if sockets[*ws].closed.is_some() {
            return Err(Down("socket closed"));
        }
        sockets[*ws].sent.push(msg.to_owned());
        Ok(())
    }
    fn close(&self, ws: &usize, code: u16, reason: &str) {
        self.sockets.borrow_mut()[*ws].closed = Some((code, reason.to_owned()));
    }
    async fn push_at(&self) -> Result<Option<f64>, Down> {
        Ok(self.push_at.get())
    }
    async fn set_push_at(&self, at: f64) -> Result<(), Down> {
        self.push_at.set(Some(at));
        Ok(())
    }
    async fn clear_push_at(&self) -> Result<(), Down> {
        self.push_at.set(None);
        Ok(())
    }
    async fn legacy_owner(&self) -> Result<Option<String>, Down> {
        self.legacy_reads.set(self.legacy_reads.get() + 1);
        Ok(self.legacy_owner.borrow().clone())
    }
    async fn alarm(&self) -> Result<Option<f64>, Down> {
        Ok(self.alarm.get())
    }
    async fn set_alarm(&self, at: f64) -> Result<(), Down> {
        self.alarm.set(Some(at));
        Ok(())
    }
    async fn erase_all(&self) -> Result<(), Down> {
        self.alarm.set(None);
        self.push_at.set(None);
        *self.legacy_owner.borrow_mut() = None;
        Ok(())
    }
    async fn badge(&self, owner: &str) -> Result<String, Down> {
        Held(self).await;
        if self.badge_down.get() {
            return Err(Down("data api down"));
        }
        assert_eq!(owner, "alice");
        let n = self.badge_reads.get() + 1;
        self.badge_reads.set(n);
        Ok(format!("badge {n}"))
    }
    fn warn(&self, what: &str, e: &Down) {
        self.warnings.borrow_mut().push(format!("{what}: {}", e.0));
    }
}

impl Memory {
    fn at(now: f64) -> Self {
        let m = Self::default();
        m.now.set(now);
        m
    }

    /// A socket of alice's with this deadline; returns its id.
    fn accept(&self, deadline_ms: Option<f64>) -> usize {
        self.accept_with(Some(Attachment {
            deadline_ms,
            owner: Some("alice".into()),
        }))
    }

    fn accept_with(&self, attachment: Option<Attachment>) -> usize {
        let mut sockets = self.sockets.borrow_mut();
        sockets.push(Socket {
            attachment,
            ..Socket::default()
        });
        sockets.len() - 1
    }

    fn sent(&self, ws: usize) -> Vec<String> {
        self.sockets.borrow()[ws].sent.clone()
    }

    fn closed(&self, ws: usize) -> Option<(u16, String)> {
        self.sockets.borrow()[ws].closed.clone()
    }
}

fn run<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("pending with nothing held"),
    }
}

#[test]
fn a_poke_with_nobody_listening_reads_nothing() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    run(hub.poke(&room, "alice")).unwrap();
    assert_eq!(room.badge_reads.get(), 0);
    assert_eq!((room.push_at.get(), room.alarm.get()), (None, None));
}

#[test]
fn pokes_push_at_once_then_once_per_window_at_its_end() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    let ws = room.accept(None);
    run(hub.poke(&room, "alice")).unwrap();
    assert_eq!(room.sent(ws), ["badge 1"]);
    // Within the window: a trailing push at its end, by the alarm.
    room.now.set(1_100.0);
    run(hub.poke(&room, "alice")).unwrap();
    let end = 1_000.0 + badge::COALESCE_MS;
    assert_eq!(
        (room.push_at.get(), room.alarm.get()),
        (Some(end), Some(end))
    );
    // A third change rides on the scheduled push.
    room.now.set(1_200.0);
    run(hub.poke(&room, "alice")).unwrap();
    assert_eq!(room.badge_reads.get(), 1);
    // The alarm pushes once and clears the pending push; nothing else is due.
    room.now.set(end);
    run(hub.alarm(&room)).unwrap();
    assert_eq!(room.sent(ws), ["badge 1", "badge 2"]);
    assert_eq!(room.push_at.get(), None);
    assert_eq!(room.alarm.get(), Some(end), "not set again");
}

#[test]
fn a_trailing_push_does_not_move_an_earlier_alarm() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    room.accept(Some(1_050.0));
    room.alarm.set(Some(1_050.0));
    run(hub.poke(&room, "alice")).unwrap();
    room.now.set(1_010.0);
    run(hub.poke(&room, "alice")).unwrap();
    assert_eq!(room.push_at.get(), Some(1_000.0 + badge::COALESCE_MS));
    assert_eq!(room.alarm.get(), Some(1_050.0));
}

#[test]
fn expired_sockets_close_before_a_push_and_never_get_it() {
    let (room, hub) = (Memory::at(5_000.0), Hub::default());
    let expired = room.accept(Some(5_000.0));
    let live = room.accept(Some(9_000.0));
    let forever = room.accept(None);
    run(hub.poke(&room, "alice")).unwrap();
    let closed = (expiry::CLOSE_CODE, expiry::CLOSE_REASON.to_owned());
    assert_eq!(room.closed(expired), Some(closed));
    assert!(room.sent(expired).is_empty());
    assert_eq!(
        (room.sent(live), room.sent(forever)),
        (vec!["badge 1".to_owned()], vec!["badge 1".to_owned()])
    );
    // Only expired sockets: they close and no badge is read.
    let (room, hub) = (Memory::at(5_000.0), Hub::default());
    let ws = room.accept(Some(4_000.0));
    run(hub.poke(&room, "alice")).unwrap();
    assert!(room.closed(ws).is_some());
    assert_eq!(room.badge_reads.get(), 0);
}

#[test]
fn a_push_skips_a_socket_that_expired_during_the_read_and_reaches_one_that_joined() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    let expiring = room.accept(Some(1_500.0));
    room.badge_held.set(true);
    let mut push = pin!(hub.poke(&room, "alice"));
    let cx = &mut Context::from_waker(Waker::noop());
    assert!(push.as_mut().poll(cx).is_pending());
    room.now.set(1_600.0);
    let joined = room.accept(None);
    room.badge_held.set(false);
    assert!(matches!(push.as_mut().poll(cx), Poll::Ready(Ok(()))));
    assert!(room.sent(expiring).is_empty());
    // Left for its alarm to close.
    assert_eq!(room.closed(expiring), None);
    assert_eq!(room.sent(joined), ["badge 1"]);
}

#[test]
fn the_alarm_closes_expired_sockets_and_sets_the_next_deadline() {
    let (room, hub) = (Memory::at(5_000.0), Hub::default());
    let a = room.accept(Some(5_000.0));
    let b = room.accept(Some(9_000.0));
    run(hub.alarm(&room)).unwrap();
    assert!(room.closed(a).is_some());
    assert_eq!(room.closed(b), None);
    assert_eq!(room.alarm.get(), Some(9_000.0));
    assert_eq!(room.badge_reads.get(), 0, "no push was due");
    // Nothing left: no alarm is set (a hibernated hub is not woken for nothing).
    let (room, hub) = (Memory::at(5_000.0), Hub::default());
    room.accept(Some(4_000.0));
    run(hub.alarm(&room)).unwrap();
    assert_eq!(room.alarm.get(), None);
}

#[test]
fn a_connect_gets_a_fresh_badge_and_moves_the_alarm_only_earlier() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    room.alarm.set(Some(8_000.0));
    let ws = room.accept(Some(9_000.0));
    run(hub.connected(&room, &ws, "alice", Some(9_000.0))).unwrap();
    assert_eq!(room.alarm.get(), Some(8_000.0));
    assert_eq!(room.sent(ws), ["badge 1"]);
    let ws2 = room.accept(Some(7_000.0));
    run(hub.connected(&room, &ws2, "alice", Some(7_000.0))).unwrap();
    assert_eq!(room.alarm.get(), Some(7_000.0));
    // Without a deadline, the alarm is not read at all.
    room.alarm.set(None);
    let ws3 = room.accept(None);
    run(hub.connected(&room, &ws3, "alice", None)).unwrap();
    assert_eq!(room.alarm.get(), None);
}

#[test]
fn a_connect_whose_badge_fails_keeps_its_socket_and_logs() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    room.badge_down.set(true);
    let ws = room.accept(None);
    run(hub.connected(&room, &ws, "alice", None)).unwrap();
    assert!(room.sent(ws).is_empty());
    assert_eq!(room.closed(ws), None);
    assert_eq!(*room.warnings.borrow(), ["badge failed: data api down"]);
}

#[test]
fn a_badge_that_a_later_read_overtook_is_not_sent() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    let first = room.accept(None);
    room.badge_held.set(true);
    let cx = &mut Context::from_waker(Waker::noop());
    let mut slow = pin!(hub.connected(&room, &first, "alice", None));
    assert!(slow.as_mut().poll(cx).is_pending());
    room.badge_held.set(false);
    let second = room.accept(None);
    run(hub.message(&room, &second, "refresh")).unwrap();
    assert_eq!(room.sent(second), ["badge 1"]);
    // The first read finishes after the later one was sent: dropped, not sent stale.
    assert!(matches!(slow.as_mut().poll(cx), Poll::Ready(Ok(()))));
    assert!(room.sent(first).is_empty());
}

#[test]
fn refresh_answers_that_socket_only_and_other_text_is_ignored() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    let a = room.accept(None);
    let b = room.accept(None);
    run(hub.message(&room, &a, "hello")).unwrap();
    assert_eq!(room.badge_reads.get(), 0);
    run(hub.message(&room, &a, "refresh")).unwrap();
    assert_eq!(
        (room.sent(a), room.sent(b)),
        (vec!["badge 1".to_owned()], vec![])
    );
}

#[test]
fn the_owner_comes_from_an_attachment_and_storage_only_for_older_sockets() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    // A socket from before the attachment carried the owner, beside one that carries it.
    room.accept_with(Some(Attachment::default()));
    let ws = room.accept(None);
    run(hub.message(&room, &ws, "refresh")).unwrap();
    assert_eq!(room.sent(ws), ["badge 1"]);
    assert_eq!(room.legacy_reads.get(), 0);
    // Older sockets only: the stored key.
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    *room.legacy_owner.borrow_mut() = Some("alice".into());
    let ws = room.accept_with(None);
    run(hub.message(&room, &ws, "refresh")).unwrap();
    assert_eq!(
        (room.sent(ws), room.legacy_reads.get()),
        (vec!["badge 1".to_owned()], 1)
    );
    // No sockets: nobody to push to, and storage is not read. A due push is still cleared.
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    *room.legacy_owner.borrow_mut() = Some("alice".into());
    room.push_at.set(Some(900.0));
    run(hub.alarm(&room)).unwrap();
    assert_eq!((room.push_at.get(), room.legacy_reads.get()), (None, 0));
    assert_eq!(room.badge_reads.get(), 0);
}

#[test]
fn erasure_closes_every_socket_and_forgets_everything() {
    let (room, hub) = (Memory::at(1_000.0), Hub::default());
    let (a, b) = (room.accept(Some(9_000.0)), room.accept(None));
    room.alarm.set(Some(9_000.0));
    room.push_at.set(Some(1_200.0));
    *room.legacy_owner.borrow_mut() = Some("alice".into());
    assert_eq!(run(hub.erase(&room)), Ok(2));
    let erased = Some((ERASED_CLOSE_CODE, ERASED_CLOSE_REASON.to_owned()));
    assert_eq!((room.closed(a), room.closed(b)), (erased.clone(), erased));
    assert_eq!((room.alarm.get(), room.push_at.get()), (None, None));
    assert_eq!(*room.legacy_owner.borrow(), None);
    assert_eq!(run(hub.erase(&room)), Ok(0));
}

#[test]
fn deadlines_parse_only_as_finite_numbers() {
    assert_eq!(
        parse_deadline(Some("1712345678901.5")),
        Some(1_712_345_678_901.5)
    );
    for bad in [
        None,
        Some(""),
        Some("soon"),
        Some("NaN"),
        Some("inf"),
        Some("-inf"),
    ] {
        assert_eq!(parse_deadline(bad), None, "{bad:?}");
    }
}

#[test]
fn a_closing_handshake_echoes_the_code_unless_it_cannot_be_sent() {
    assert_eq!(closing_code(1000), 1000);
    assert_eq!(closing_code(1001), 1001);
    assert_eq!(closing_code(4001), 4001);
    for unsendable in [0, 999, 1005, 1006, 65_536, usize::MAX] {
        assert_eq!(closing_code(unsendable), 1000, "{unsendable}");
    }
}
