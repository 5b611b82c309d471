//! The live badge hub, platform-free: one hub per owner holds that owner's sockets and pushes
//! the badge after each change ([`badge::on_poke`]'s throttle), closes each socket when its token
//! expires ([`expiry`]), answers a socket's `refresh`, and on erasure closes every socket and
//! forgets everything. The worker's Durable Object (`src/edge/hub.rs`) implements [`Room`] over
//! its storage, alarm and hibernatable WebSockets and calls [`Hub`]'s handlers; the unit tests
//! drive them over memory with a hand-set clock.

use super::badge::{self, BadgeSequencer, Poke};
use super::erasure::{ERASED_CLOSE_CODE, ERASED_CLOSE_REASON};
use super::expiry;
use std::cell::Cell;

/// What a socket carries through hibernation. The owner rides here rather than in storage, so a
/// connect costs no storage write (a write is the largest line of a connect's bill).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Attachment {
    /// Close at (ms since the epoch); `None` for a token without `exp`.
    pub deadline_ms: Option<f64>,
    /// Whose hub this is (absent on sockets accepted before it was carried here).
    #[serde(default)]
    pub owner: Option<String>,
}

/// What a hub reads and does through its Durable Object.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait Room {
    /// A socket handle.
    type Socket;
    /// Why a storage, alarm, send or badge operation failed.
    type Error;
    /// Milliseconds since the epoch.
    fn now(&self) -> f64;
    /// The accepted sockets, hibernated ones included.
    fn sockets(&self) -> Vec<Self::Socket>;
    /// What `ws` carries (`None` when it carries nothing readable).
    fn attachment(&self, ws: &Self::Socket) -> Option<Attachment>;
    /// Sends a text message.
    ///
    /// # Errors
    /// When the socket cannot take it.
    fn send(&self, ws: &Self::Socket, msg: &str) -> Result<(), Self::Error>;
    /// Closes `ws` (a socket already closing is not an error).
    fn close(&self, ws: &Self::Socket, code: u16, reason: &str);
    /// The pending trailing push, if any (ms since the epoch).
    async fn push_at(&self) -> Result<Option<f64>, Self::Error>;
    /// Stores the pending trailing push.
    async fn set_push_at(&self, at: f64) -> Result<(), Self::Error>;
    /// Forgets the pending trailing push.
    async fn clear_push_at(&self) -> Result<(), Self::Error>;
    /// The owner as hubs before [`Attachment::owner`] stored it.
    async fn legacy_owner(&self) -> Result<Option<String>, Self::Error>;
    /// When the alarm is set to fire, if it is.
    async fn alarm(&self) -> Result<Option<f64>, Self::Error>;
    /// Sets the alarm to fire at `at` (ms since the epoch; a past time fires at once).
    async fn set_alarm(&self, at: f64) -> Result<(), Self::Error>;
    /// Deletes the alarm and everything stored.
    async fn erase_all(&self) -> Result<(), Self::Error>;
    /// The badge message of `owner` as it is now (one Data API read).
    async fn badge(&self, owner: &str) -> Result<String, Self::Error>;
    /// Logs a failure that answers nobody (`what` says what failed).
    fn warn(&self, what: &str, e: &Self::Error);
}

/// The deadline a connect carries (the worker's `X-Token-Deadline-Ms`, set after it verified
/// the token): `None` when absent or not a finite number.
#[must_use]
pub fn parse_deadline(header: Option<&str>) -> Option<f64> {
    header
        .and_then(|d| d.parse::<f64>().ok())
        .filter(|d| d.is_finite())
}

/// The code that completes a closing handshake the client started: its own, except the codes
/// that cannot be sent (1005, 1006, anything outside 1000–65535), which become 1000.
#[must_use]
pub fn closing_code(code: usize) -> u16 {
    u16::try_from(code)
        .ok()
        .filter(|c| *c >= 1000 && *c != 1005 && *c != 1006)
        .unwrap_or(1000)
}

/// One hub's memory (lost on hibernation, which is fine: see the fields).
#[derive(Debug, Default)]
pub struct Hub {
    /// When this instance last pushed (forgotten on hibernation: then the next change pushes at
    /// once, which is what a quiet inbox wants anyway).
    last_push: Cell<Option<f64>>,
    /// Drops a badge read that finished after a later one was sent (never a stale count).
    badges: BadgeSequencer,
}

impl Hub {
    /// The owner's inbox changed.
    ///
    /// # Errors
    /// The room's, from storage, the alarm or the badge read.
    pub async fn poke<R: Room>(&self, room: &R, owner: &str) -> Result<(), R::Error> {
        let scheduled = room.push_at().await?.is_some();
        let sockets = room.sockets().len();
        match badge::on_poke(sockets, room.now(), self.last_push.get(), scheduled) {
            Poke::Idle | Poke::AlreadyScheduled => {}
            Poke::PushNow => self.push(room, owner).await?,
            Poke::PushIn(ms) => {
                let at = room.now() + ms;
                room.set_push_at(at).await?;
                self.alarm_at(room, at).await?;
            }
        }
        Ok(())
    }

    /// A socket was accepted for `owner` (the room has attached its [`Attachment`]): its
    /// deadline moves the alarm if it comes first, and it gets a fresh badge at once (what
    /// repairs a missed push). A failed badge read is logged; the socket stays.
    ///
    /// # Errors
    /// The room's, from the alarm or the send.
    pub async fn connected<R: Room>(
        &self,
        room: &R,
        ws: &R::Socket,
        owner: &str,
        deadline_ms: Option<f64>,
    ) -> Result<(), R::Error> {
        if let Some(deadline_ms) = deadline_ms {
            self.alarm_at(room, deadline_ms).await?;
        }
        match self.fresh_badge(room, owner).await {
            Ok(Some(msg)) => room.send(ws, &msg)?,
            // A newer badge went to every socket, this one included.
            Ok(None) => {}
            Err(e) => room.warn("badge failed", &e),
        }
        Ok(())
    }

    /// A socket's text message: `refresh` asks for the badge now (e.g. after the app returns
    /// to the foreground); anything else is ignored.
    ///
    /// # Errors
    /// The room's, from storage, the badge read or the send.
    pub async fn message<R: Room>(
        &self,
        room: &R,
        ws: &R::Socket,
        text: &str,
    ) -> Result<(), R::Error> {
        if text != "refresh" {
            return Ok(());
        }
        if let Some(owner) = self.owner(room).await? {
            // `None`: a newer badge reached every socket while this one was read.
            if let Some(msg) = self.fresh_badge(room, &owner).await? {
                room.send(ws, &msg)?;
            }
        }
        Ok(())
    }

    /// The alarm fired: expired sockets close, a due trailing push goes out, and the alarm is
    /// set to the earliest event left (the one that is running is spent).
    ///
    /// # Errors
    /// The room's.
    pub async fn alarm<R: Room>(&self, room: &R) -> Result<(), R::Error> {
        let plan = self.close_expired(room).await?;
        if plan.push {
            room.clear_push_at().await?;
            if let Some(owner) = self.owner(room).await? {
                self.push(room, &owner).await?;
            }
        }
        if let Some(at) = plan.next_alarm {
            room.set_alarm(at).await?;
        }
        Ok(())
    }

    /// The owner was erased: every socket closes, and nothing stays in storage. Returns how
    /// many sockets were closed.
    ///
    /// # Errors
    /// The room's, from storage.
    pub async fn erase<R: Room>(&self, room: &R) -> Result<usize, R::Error> {
        let sockets = room.sockets();
        for ws in &sockets {
            room.close(ws, ERASED_CLOSE_CODE, ERASED_CLOSE_REASON);
        }
        room.erase_all().await?;
        Ok(sockets.len())
    }

    /// A fresh badge to every socket whose token has not expired.
    async fn push<R: Room>(&self, room: &R, owner: &str) -> Result<(), R::Error> {
        // Expired sockets first: a badge never reaches a socket whose token has expired.
        self.close_expired(room).await?;
        if room.sockets().is_empty() {
            return Ok(());
        }
        let Some(msg) = self.fresh_badge(room, owner).await? else {
            return Ok(());
        };
        // Read after the badge: a socket that connected meanwhile gets it too.
        let sockets = room.sockets();
        let t = room.now();
        self.last_push.set(Some(t));
        for ws in sockets {
            // A socket whose token expired while the badge was read is closed at its alarm.
            if deadline(room, &ws).is_some_and(|d| d <= t) {
                continue;
            }
            // A socket closing right now is not an error for the others.
            let _ = room.send(&ws, &msg);
        }
        Ok(())
    }

    /// The badge, or `None` when a read that started later has been sent already.
    async fn fresh_badge<R: Room>(
        &self,
        room: &R,
        owner: &str,
    ) -> Result<Option<String>, R::Error> {
        let ticket = self.badges.start();
        let msg = room.badge(owner).await?;
        Ok(self.badges.admit(ticket).then_some(msg))
    }

    /// Closes the sockets whose token has expired; returns the plan (with the pending push).
    async fn close_expired<R: Room>(&self, room: &R) -> Result<expiry::Plan, R::Error> {
        let sockets = room.sockets();
        let deadlines: Vec<Option<f64>> = sockets.iter().map(|ws| deadline(room, ws)).collect();
        let push_at = room.push_at().await?;
        let plan = expiry::plan(&deadlines, push_at, room.now());
        for &i in &plan.close {
            room.close(&sockets[i], expiry::CLOSE_CODE, expiry::CLOSE_REASON);
        }
        Ok(plan)
    }

    /// Moves the alarm earlier when `at` is before it.
    async fn alarm_at<R: Room>(&self, room: &R, at: f64) -> Result<(), R::Error> {
        if expiry::reschedule(room.alarm().await?, at) {
            room.set_alarm(at).await?;
        }
        Ok(())
    }

    /// Whose hub this is: from any socket's attachment (alarms carry no request, and a hub
    /// without sockets has nobody to push to); the stored key only for sockets accepted before
    /// the attachment carried it.
    async fn owner<R: Room>(&self, room: &R) -> Result<Option<String>, R::Error> {
        let sockets = room.sockets();
        if let Some(owner) = sockets.iter().find_map(|ws| room.attachment(ws)?.owner) {
            return Ok(Some(owner));
        }
        if sockets.is_empty() {
            return Ok(None);
        }
        room.legacy_owner().await
    }
}

/// A socket's token deadline (`None` for a socket without one).
fn deadline<R: Room>(room: &R, ws: &R::Socket) -> Option<f64> {
    room.attachment(ws).and_then(|a| a.deadline_ms)
}

#[cfg(test)]
mod tests;
