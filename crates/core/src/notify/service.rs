//! The service flows behind the notification writes: dedup reservation → atomic upsert → the
//! work to defer (dedup commit, the mute mirror), for one event, a batch, a fan-out, a retraction,
//! the preferences and the dead letters. Inputs are parsed values and results are typed; the HTTP
//! layer (`api::notify_routes`) parses bodies, runs the Idempotency-Key guard and renders the
//! answers. The adapter runs the deferred work after the response (`waitUntil`); `cargo test`
//! drives the same flow against the local stack.
//!
//! Redis is optional: without it events are still written (the upsert's filter makes them
//! idempotent on their own) and counts are exact until the origins cap drops a sender. With it,
//! the reservation also checks the owner's muted set (see [`preferences`]) and keeps the item's
//! roster, the exact count (see [`super::roster`]); then a reservation that fails fails the
//! create (503, retryable) rather than writing a count it could not check. Another request
//! holding the event's lease is no failure: the event is written (idempotent). With a queue
//! bound, one event is still written at once unless its item is hot (a counter in the same
//! reservation, see [`dedup::HotConfig`]); a hot item's events are queued and coalesced.

use super::batch::{self, EventOutcome, EventQueue, QueuedMessage, Settled};
use super::dead_letters::{self, DeadLetter};
use super::preferences::{self, Preferences};
use super::{CreateOutcome, NewEvent, NotificationEvent, NotificationStore, NotifyError};
use super::{RetractOutcome, Retraction};
use crate::backend::{HttpClient, RedisRestClient};
use crate::dedup::{self, DedupConfig, Reservation, Slot};
use serde_json::Value;

/// Work that must not hold up the response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deferred {
    /// Mark the event id done (after a successful write), and drop the new mark of the roster
    /// whose item the write inserted (see [`super::roster`]).
    Commit(Slot, Option<String>),
    /// Complete the item's new roster from its document (see [`super::roster::reseed`]), then
    /// commit the event id (if any) and drop the roster's mark in one call; after a failed
    /// rebuild the mark stays, for the next writer once its grace has passed.
    Rebuild {
        /// The item's owner.
        owner: String,
        /// The item.
        item_key: String,
        /// The roster generation being completed.
        generation: Option<i64>,
        /// The event id to mark done with it.
        commit: Option<Slot>,
    },
    /// Keep a finished Idempotency-Key result (the HTTP layer's record) for 24 h.
    StoreResult {
        /// Redis key.
        key: String,
        /// Serialized record.
        record: String,
        /// How long to keep it.
        keep_ms: u64,
    },
    /// Free an Idempotency-Key after a server error so the client's retry runs.
    FreeKey(String),
    /// Rewrite an owner's muted-set mirror from the stored preferences.
    PublishMutes(String, preferences::Stored),
}

impl Deferred {
    /// The kind of work, for a log line (no owner, item key or record in it).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Deferred::Commit(..) => "commit",
            Deferred::Rebuild { .. } => "rebuild",
            Deferred::StoreResult { .. } => "store_result",
            Deferred::FreeKey(_) => "free_key",
            Deferred::PublishMutes(..) => "publish_mutes",
        }
    }
}

/// A write's result, the owners whose inbox it changed (for the live badge) and the work to run
/// after the response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written<T> {
    /// What happened.
    pub value: T,
    /// Owners whose inbox changed.
    pub changed: Vec<String>,
    /// Work for after the response.
    pub deferred: Vec<Deferred>,
}

/// What a direct create did: written (or answered without a write), or found its item hot and
/// handed the event back for the queue.
enum Direct {
    Written(Written<Created>),
    Hot(Box<NewEvent>),
}

/// The reservation answered `hot` to a call that sent no hot check: a script out of step.
fn hot_unasked() -> NotifyError {
    NotifyError::Backend(crate::backend::BackendError::Decode(
        "dedup reserve: 'hot' without a hot check".into(),
    ))
}

impl Direct {
    fn only(value: Created) -> Self {
        Direct::Written(Written::only(value))
    }
}

impl<T> Written<T> {
    fn only(value: T) -> Self {
        Written {
            value,
            changed: vec![],
            deferred: vec![],
        }
    }
}

/// What one create did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Created {
    /// The owner muted this kind of event: nothing written.
    Muted,
    /// The owner was erased after this event was created: dropped (see [`super::fence`]).
    Erased,
    /// The event id was already processed.
    Duplicate,
    /// Written (created, merged, or found already applied).
    Applied {
        /// Which of the three.
        outcome: CreateOutcome,
        /// The item's id.
        notification_id: String,
    },
}

/// The events route's input, parsed: one event, a batch, or a fan-out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventsInput {
    /// One event (the original form).
    One(NewEvent),
    /// A batch, 1..=[`batch::MAX_EVENTS`] events.
    Many(Vec<NewEvent>),
    /// The template (without `owner`) for each owner; each owner's `eventId` is
    /// `{eventId}:{owner}`.
    FanOut {
        /// The event every owner gets.
        template: NewEvent,
        /// Recipients, 1..=[`batch::MAX_FAN_OUT`].
        owners: Vec<String>,
    },
}

/// What the events route did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventsOutcome {
    /// A single event without a queue: [`NotifyService::create`]'s result.
    One(Created),
    /// Every event is on the queue.
    Queued {
        /// How many.
        accepted: usize,
    },
    /// A batch written at once: per event, in input order, its outcome and (when applied) the
    /// item's id.
    Processed(Vec<(Settled, Option<String>)>),
}

/// The owner's preferences and whether muting is enforced (it needs Redis).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferencesView {
    /// The normalized preferences.
    pub preferences: Preferences,
    /// False without Redis: stored, but not applied to new events.
    pub enforced: bool,
}

/// What a dead-letter replay did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replayed {
    /// Letters sent back to the queue.
    pub replayed: usize,
    /// Letters removed after sending.
    pub removed: u64,
}

/// The notification service over the two backends.
pub struct NotifyService<H> {
    store: NotificationStore<H>,
    redis: Option<RedisRestClient<H>>,
    dedup: DedupConfig,
}

impl<H: HttpClient> NotifyService<H> {
    /// A service; `redis` is optional (see the module docs).
    #[must_use]
    pub fn new(
        store: NotificationStore<H>,
        redis: Option<RedisRestClient<H>>,
        dedup: DedupConfig,
    ) -> Self {
        NotifyService {
            store,
            redis,
            dedup,
        }
    }

    /// The store (for the user routes).
    #[must_use]
    pub fn store(&self) -> &NotificationStore<H> {
        &self.store
    }

    /// Whether a single create with a queue bound is written directly unless its item is hot:
    /// it needs Redis (the counter is in the reservation) and a limit above 0.
    fn checks_hot(&self) -> bool {
        self.redis.is_some() && self.dedup.hot.limit > 0
    }

    /// The reservation lease (how long a new roster's creator has to complete it).
    #[must_use]
    pub fn dedup_lease_ms(&self) -> u64 {
        self.dedup.lease_ms
    }

    /// The Redis client, when configured (the HTTP layer's Idempotency-Key guard uses it).
    #[must_use]
    pub fn redis(&self) -> Option<&RedisRestClient<H>> {
        self.redis.as_ref()
    }

    /// The owner's preferences; refreshes the Redis mirror after the response (read repair).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn preferences(&self, owner: &str) -> Result<Written<PreferencesView>, NotifyError> {
        let doc = preferences::load(self.store.api(), self.store.config(), owner).await?;
        // Nothing stored: nothing to repair (a mirror can only be older than a document).
        let repair = match (&self.redis, &doc) {
            (Some(_), Some(d)) => Some(Deferred::PublishMutes(owner.to_owned(), d.clone())),
            _ => None,
        };
        Ok(Written {
            value: self.view(doc.map(|d| d.preferences).unwrap_or_default()),
            changed: vec![],
            deferred: repair.into_iter().collect(),
        })
    }

    /// Replaces the owner's preferences: the document first (the truth), then the mirror copies
    /// the document as read back. If the mirror write fails the error is
    /// [`NotifyError::NotYetInEffect`] and a retry (same body) converges; until then the next
    /// read repairs it.
    ///
    /// # Errors
    /// Validation, backend failures, [`NotifyError::NotYetInEffect`].
    pub async fn set_preferences(
        &self,
        owner: &str,
        p: Preferences,
        now_ms: i64,
    ) -> Result<PreferencesView, NotifyError> {
        let p = p.normalized(self.store.config())?;
        let doc =
            preferences::save(self.store.api(), self.store.config(), owner, &p, now_ms).await?;
        if let (Some(r), Some(doc)) = (&self.redis, doc) {
            preferences::publish(r, owner, &doc)
                .await
                .map_err(NotifyError::NotYetInEffect)?;
        }
        Ok(self.view(p))
    }

    fn view(&self, preferences: Preferences) -> PreferencesView {
        PreferencesView {
            preferences,
            enforced: self.redis.is_some(),
        }
    }

    /// Any form of the events route. With a queue every event is enqueued; without one, a
    /// single event takes [`Self::create`]'s path unchanged and a batch of at most
    /// [`batch::MAX_SYNC_EVENTS`] is written at once through [`batch::apply`]. Every event is
    /// validated before anything is written or enqueued.
    ///
    /// # Errors
    /// [`NotifyError::InvalidEvents`] (nothing accepted), [`NotifyError::Queue`],
    /// [`NotifyError::QueueRequired`], [`NotifyError::PartlyWritten`], and a single event's
    /// errors.
    pub async fn create_events<Q: EventQueue>(
        &self,
        input: EventsInput,
        now_ms: i64,
        queue: Option<&Q>,
    ) -> Result<Written<EventsOutcome>, NotifyError> {
        let raws = match input {
            // One event goes straight to the document unless the item is hot (or every single
            // create is configured to queue, or no Redis can tell): see [`dedup::HotConfig`].
            EventsInput::One(raw) if queue.is_none() || self.checks_hot() => {
                match self.create_unless_hot(raw, now_ms, queue.is_some()).await? {
                    Direct::Written(w) => {
                        return Ok(Written {
                            value: EventsOutcome::One(w.value),
                            changed: w.changed,
                            deferred: w.deferred,
                        })
                    }
                    Direct::Hot(raw) => vec![*raw],
                }
            }
            EventsInput::One(raw) => vec![raw],
            EventsInput::Many(v) => v,
            EventsInput::FanOut { template, owners } => batch::fan_out(&template, &owners),
        };
        let events = batch::validate_all(&raws, self.store.config(), now_ms)
            .map_err(NotifyError::InvalidEvents)?;
        if let Some(q) = queue {
            let accepted = batch::enqueue(q, &raws).await?;
            return Ok(Written::only(EventsOutcome::Queued { accepted }));
        }
        if events.len() > batch::MAX_SYNC_EVENTS {
            return Err(NotifyError::QueueRequired {
                events: events.len(),
                max: batch::MAX_SYNC_EVENTS,
            });
        }
        let report = self.apply_batch(&events, now_ms).await;
        let mut results = Vec::with_capacity(events.len());
        for (o, ev) in report.outcomes.iter().zip(&events) {
            // What was written is committed: the client's retry of the whole body finds those
            // as duplicates and writes the rest.
            let settled = o
                .settled()
                .map_err(|why| NotifyError::PartlyWritten(why.to_owned()))?;
            let id = matches!(o, EventOutcome::Applied(_))
                .then(|| super::notification_id(ev.owner(), ev.item_key()));
            results.push((settled, id));
        }
        Ok(Written {
            value: EventsOutcome::Processed(results),
            changed: report.changed_owners,
            deferred: vec![],
        })
    }

    /// Writes valid events as one batch (see [`batch::apply`]).
    pub async fn apply_batch(
        &self,
        events: &[super::NotificationEvent],
        now_ms: i64,
    ) -> batch::BatchReport {
        batch::apply(
            &self.store,
            self.redis.as_ref(),
            &self.dedup,
            events,
            now_ms,
        )
        .await
    }

    /// The queue consumer: writes a batch of queued events; a message of which only some
    /// events failed has those sent again on `requeue` (see [`batch::consume`]).
    pub async fn consume<Q: EventQueue>(
        &self,
        messages: &[QueuedMessage],
        queue: &str,
        now_ms: i64,
        backoff: batch::Backoff,
        requeue: Option<&Q>,
    ) -> batch::ConsumeReport {
        batch::consume(
            &self.store,
            self.redis.as_ref(),
            &self.dedup,
            messages,
            queue,
            now_ms,
            backoff,
            requeue,
        )
        .await
    }

    /// The dead-letter queue's consumer: keeps every event of every message for inspection and
    /// replay, one letter per event (a packed message is unpacked, [`batch::letter_id`]); `true`
    /// per message whose letters were all kept (acknowledge those, redeliver the rest: storing
    /// is idempotent by letter id).
    pub async fn store_dead_letters(
        &self,
        messages: &[QueuedMessage],
        queue: &str,
        now_ms: i64,
    ) -> Vec<bool> {
        let mut owner = Vec::new();
        let mut letters: Vec<DeadLetter> = Vec::new();
        for (k, m) in messages.iter().enumerate() {
            let (bodies, _) = batch::unpack(&m.body);
            let n = bodies.len();
            for (pos, body) in bodies.into_iter().enumerate() {
                owner.push(k);
                letters.push(DeadLetter {
                    id: batch::letter_id(&m.id, pos, n),
                    body,
                    queue: queue.to_owned(),
                    reason: "failed every delivery attempt".into(),
                });
            }
        }
        // A letter behind its owner's or its sender's fence is acknowledged, not stored: any
        // replay would drop it, and storing it would keep what an erasure finished removing
        // (the owner's event, the sender's name) for the letter's retention.
        let behind =
            dead_letters::behind_fences(&self.store, self.redis.as_ref(), &letters, now_ms).await;
        let (mut stay, mut stay_owner) = (Vec::new(), Vec::new());
        for ((l, k), fenced) in letters.into_iter().zip(owner).zip(behind) {
            if !fenced {
                stay.push(l);
                stay_owner.push(k);
            }
        }
        let mut kept = vec![true; messages.len()];
        let stored = dead_letters::store(&self.store, &stay, now_ms).await;
        for (k, r) in stay_owner.into_iter().zip(stored) {
            if r.is_err() {
                kept[k] = false;
            }
        }
        kept
    }

    /// The oldest `limit` dead letters, as their API views.
    ///
    /// # Errors
    /// Backend failures.
    pub async fn dead_letters(
        &self,
        limit: u32,
    ) -> Result<Vec<dead_letters::DeadLetterView>, NotifyError> {
        let docs = dead_letters::list(&self.store, None, limit).await?;
        Ok(docs.iter().map(dead_letters::view).collect())
    }

    /// Sends letters (by id, or the oldest `limit`) back to the queue, packed into as few
    /// messages as [`batch::pack_messages`] allows, then removes them (a
    /// replayed event that was in fact applied is answered by dedup and the upsert filter).
    ///
    /// # Errors
    /// [`NotifyError::QueueNotConfigured`] without a queue, [`NotifyError::Queue`], backend
    /// failures.
    pub async fn replay_dead_letters<Q: EventQueue>(
        &self,
        ids: Option<&[String]>,
        limit: u32,
        queue: Option<&Q>,
    ) -> Result<Replayed, NotifyError> {
        let q = queue.ok_or(NotifyError::QueueNotConfigured)?;
        let docs = dead_letters::list(&self.store, ids, limit).await?;
        let (mut ids, mut bodies) = (Vec::new(), Vec::new());
        for d in &docs {
            if let (Some(id), Some(b)) = (
                d.get("_id").and_then(Value::as_str),
                d.get("body").and_then(Value::as_str),
            ) {
                ids.push(id.to_owned());
                bodies.push(b.to_owned());
            }
        }
        // Packed like any create: a replay of 100 letters is one message.
        batch::send_packed(q, bodies, 0, 0).await?;
        let removed = dead_letters::remove(&self.store, &ids).await?;
        Ok(Replayed {
            replayed: ids.len(),
            removed,
        })
    }

    /// Creates or merges a notification from one parsed event.
    ///
    /// # Errors
    /// Validation and backend failures (a reservation is released first).
    pub async fn create(
        &self,
        raw: NewEvent,
        now_ms: i64,
    ) -> Result<Written<Created>, NotifyError> {
        match self.create_unless_hot(raw, now_ms, false).await? {
            Direct::Written(w) => Ok(w),
            // Only with a hot check, which `create` does not ask for.
            Direct::Hot(_) => Err(hot_unasked()),
        }
    }

    /// Without Redis the fences (the owner's, the sender's) are one Data API read: `None`
    /// (write the event) unless one of them is at or after it.
    async fn fenced_without_redis(
        &self,
        ev: &NotificationEvent,
        now_ms: i64,
    ) -> Result<Option<dedup::Admission>, NotifyError> {
        let ids = [
            super::fence::doc_id(ev.owner()),
            super::senders::fence_doc_id(&ev.sender.id),
        ];
        let at = super::fence::lookup_docs(&self.store, &ids, now_ms).await?;
        let t = ev.created_time_msec();
        let reservation = if super::fence::behind(at[0], t) {
            Some(Reservation::Erased)
        } else {
            super::fence::behind(at[1], t).then_some(Reservation::SenderErased)
        };
        Ok(reservation.map(|reservation| dedup::Admission {
            reservation,
            tally: None,
        }))
    }

    /// [`Self::create`], unless `hot_check` is set and the item is taking a burst: then nothing
    /// is written and the event comes back for the queue ([`Direct::Hot`]). The check is a
    /// counter in the reservation's own round trip, so an ordinary event costs nothing more.
    async fn create_unless_hot(
        &self,
        raw: NewEvent,
        now_ms: i64,
        hot_check: bool,
    ) -> Result<Direct, NotifyError> {
        let ev = NotificationEvent::new(raw, self.store.config(), now_ms)?;
        let hot_key = hot_check.then(|| super::roster::hot_key(ev.owner(), ev.item_key()));
        let slot = dedup::slot(&self.dedup, ev.event_id(), ev.created_time_msec());
        let key = preferences::mute_key(ev.owner());
        let members = preferences::mute_members(ev.category_type(), &ev.notification_type);
        let fence_key = super::fence::redis_key(ev.owner());
        let sender_fence = super::senders::fence_key(&ev.sender.id);
        let mute = dedup::MuteCheck {
            key: &key,
            members: &members,
            fence: Some((&fence_key, ev.created_time_msec())),
            sender_fence: Some(&sender_fence),
        };
        let roster = super::roster::check(&ev);
        let life = super::roster::life(self.store.config(), self.dedup.lease_ms);
        // With Redis the count is the roster's, so the reservation is required: a failure is
        // the client's to retry (503), not a write with an unknown count.
        let admission = match &self.redis {
            Some(r) => Some(
                dedup::reserve_unless_muted(
                    r,
                    &slot,
                    self.dedup.lease_ms,
                    &mute,
                    Some((&roster, &life)),
                    hot_key.as_deref().map(|k| (k, &self.dedup.hot)),
                )
                .await?,
            ),
            None => self.fenced_without_redis(&ev, now_ms).await?,
        };
        // The senders' index entry goes first (see [`super::senders`]): when the sender joined
        // the item now, or without Redis (no roster to say) always.
        let indexes =
            self.redis.is_none() || tally_of(admission.as_ref()).is_some_and(|t| t.indexes());
        let tally = admission.as_ref().and_then(|a| a.tally);
        let token = match admission.map(|a| a.reservation) {
            Some(Reservation::Muted) => return Ok(Direct::only(Created::Muted)),
            Some(Reservation::Erased) => {
                // The count is a figure for the erasure's progress: losing it loses nothing.
                let _ = super::fence::count_dropped(&self.store, ev.owner(), 1).await;
                return Ok(Direct::only(Created::Erased));
            }
            Some(Reservation::SenderErased) => {
                let id = super::senders::fence_doc_id(&ev.sender.id);
                let _ = super::fence::count_dropped_named(&self.store, &id, 1).await;
                return Ok(Direct::only(Created::Erased));
            }
            Some(Reservation::Duplicate) => return Ok(Direct::only(Created::Duplicate)),
            // Retracted at or after this event: what the document's filter would answer.
            Some(Reservation::Retracted) => {
                return Ok(Direct::only(Created::Applied {
                    outcome: CreateOutcome::AlreadyApplied,
                    notification_id: super::notification_id(ev.owner(), ev.item_key()),
                }))
            }
            Some(Reservation::Hot) => {
                return if hot_check {
                    Ok(Direct::Hot(Box::new(ev.into())))
                } else {
                    Err(hot_unasked())
                }
            }
            Some(Reservation::Reserved { token }) => Some(token),
            // In flight elsewhere or no Redis: write anyway (idempotent upsert).
            Some(Reservation::InFlight) | None => None,
        };
        let write = async {
            if indexes {
                let entry = super::senders::Entry {
                    sender_id: &ev.sender.id,
                    owner: ev.owner(),
                    item_key: ev.item_key(),
                    event_time_ms: ev.created_time_msec(),
                };
                super::senders::index(&self.store, &[entry]).await?;
            }
            super::roster::create_checked(&self.store, self.redis.as_ref(), &ev, tally, now_ms)
                .await
        };
        match write.await {
            Ok(outcome) => Ok(Direct::Written(Written {
                value: Created::Applied {
                    outcome,
                    notification_id: super::notification_id(ev.owner(), ev.item_key()),
                },
                changed: (outcome != CreateOutcome::AlreadyApplied)
                    .then(|| ev.owner().to_owned())
                    .into_iter()
                    .collect(),
                deferred: after_write(&ev, &slot, token.is_some(), tally, outcome)
                    .into_iter()
                    .collect(),
            })),
            Err(e) => {
                if let (Some(r), Some(t)) = (&self.redis, &token) {
                    // On the request path: the client's retry must not look like a duplicate.
                    // If this fails too, the lease expires and a retry proceeds then.
                    let _ = dedup::release(r, &slot, t).await;
                }
                Err(e)
            }
        }
    }

    /// Removes a sender from an item.
    ///
    /// # Errors
    /// Backend failures.
    pub async fn retract(
        &self,
        r: Retraction,
        now_ms: i64,
    ) -> Result<Written<RetractOutcome>, NotifyError> {
        // The roster first (its tally and the time the retraction counts from), then the
        // document; a failure of either is retried by the client and both steps are idempotent.
        // An erased owner: a retraction of an item the new inbox does not have would leave a
        // roster and a tombstone (the owner's id in clear) behind the erasure, so it changes
        // nothing. With Redis the fence rides in the roster's own call; only a fenced owner
        // without the roster costs one more read (does the item exist?).
        let life = super::roster::life(self.store.config(), self.dedup.lease_ms);
        let (key, field) = (
            super::roster::key(&r.owner, &r.item_key),
            super::roster::field(&r.sender_id),
        );
        let gone = || async {
            self.store
                .exists(&r.owner, &r.item_key)
                .await
                .map(|exists| !exists)
        };
        // An erased sender that is not on the item (it sent nothing since): nothing to take
        // off, and recording the retraction would write its id into `x` behind the erasure.
        let sender_fence = super::senders::fence_key(&r.sender_id);
        let left = match &self.redis {
            Some(redis) => {
                let fence = super::fence::redis_key(&r.owner);
                let sf = Some(sender_fence.as_str());
                let mut left = dedup::roster_leave_unless_fenced(
                    redis,
                    &key,
                    &field,
                    now_ms,
                    &life,
                    Some(&fence),
                    sf,
                )
                .await?;
                if left == dedup::Leave::OwnerFenced {
                    if gone().await? {
                        return Ok(Written::only(RetractOutcome::NotFound));
                    }
                    left = dedup::roster_leave_unless_fenced(
                        redis, &key, &field, now_ms, &life, None, sf,
                    )
                    .await?;
                }
                match left {
                    dedup::Leave::Left(l) => Some(l),
                    _ => return Ok(Written::only(RetractOutcome::NotFound)),
                }
            }
            None => {
                let ids = [
                    super::fence::doc_id(&r.owner),
                    super::senders::fence_doc_id(&r.sender_id),
                ];
                let at = super::fence::lookup_docs(&self.store, &ids, now_ms).await?;
                if at[0].is_some() && gone().await? {
                    return Ok(Written::only(RetractOutcome::NotFound));
                }
                if at[1].is_some()
                    && !self
                        .store
                        .holds_origin(&r.owner, &r.item_key, &r.sender_id)
                        .await?
                {
                    return Ok(Written::only(RetractOutcome::NotFound));
                }
                None
            }
        };
        let outcome = self
            .store
            .retract_counted(&r.owner, &r.item_key, &r.sender_id, left, now_ms)
            .await?;
        // A new roster (it had expired while idle): the document still held the item's other
        // senders; a retry of this retraction runs this again (the roster keeps its mark).
        let deferred = left.filter(|l| l.fresh).map(|l| Deferred::Rebuild {
            owner: r.owner.clone(),
            item_key: r.item_key.clone(),
            generation: l.generation,
            commit: None,
        });
        Ok(Written {
            value: outcome,
            changed: (outcome != RetractOutcome::NotFound)
                .then_some(r.owner)
                .into_iter()
                .collect(),
            deferred: deferred.into_iter().collect(),
        })
    }

    /// [`Deferred::Rebuild`]: completes the roster, then commits the id and drops the mark in
    /// one call; if the rebuild fails the id is still committed, the mark kept.
    async fn rebuild(
        &self,
        redis: &RedisRestClient<H>,
        owner: &str,
        item_key: &str,
        generation: Option<i64>,
        commit: Option<&Slot>,
    ) -> Result<(), NotifyError> {
        let life = super::roster::life(self.store.config(), self.dedup.lease_ms);
        let built =
            super::roster::reseed(&self.store, redis, &life, generation, owner, item_key).await;
        let key = super::roster::key(owner, item_key);
        let complete = built.is_ok().then_some(key.as_str());
        let settled = match (commit, complete) {
            (Some(slot), _) => dedup::commit(redis, slot, complete).await.map(|_| ()),
            (None, Some(k)) => dedup::settle_many(redis, &[dedup::Settle::Complete(k)])
                .await
                .map(|_| ()),
            (None, None) => Ok(()),
        };
        built.and(settled.map_err(NotifyError::from))
    }

    /// Runs deferred work; returns a line per failure for the log (nothing is retried: a lost
    /// commit lets the lease expire, a lost record only loses the replay flag).
    pub async fn run_deferred(&self, work: Vec<Deferred>) -> Vec<String> {
        let Some(redis) = &self.redis else {
            return vec![];
        };
        let mut failures = Vec::new();
        for w in work {
            let r: Result<(), NotifyError> = match &w {
                Deferred::Commit(slot, complete) => dedup::commit(redis, slot, complete.as_deref())
                    .await
                    .map(|_| ())
                    .map_err(NotifyError::from),
                Deferred::Rebuild {
                    owner,
                    item_key,
                    generation,
                    commit,
                } => {
                    self.rebuild(redis, owner, item_key, *generation, commit.as_ref())
                        .await
                }
                Deferred::StoreResult {
                    key,
                    record,
                    keep_ms,
                } => redis
                    .command(&["SET", key.as_str(), record, "PX", &keep_ms.to_string()])
                    .await
                    .map(|_| ())
                    .map_err(NotifyError::from),
                Deferred::FreeKey(key) => redis
                    .command(&["DEL", key.as_str()])
                    .await
                    .map(|_| ())
                    .map_err(NotifyError::from),
                Deferred::PublishMutes(owner, p) => preferences::publish(redis, owner, p)
                    .await
                    .map_err(NotifyError::from),
            };
            if let Err(e) = r {
                // The kind only: the work names owners, item keys and Redis keys holding them.
                failures.push(format!("deferred {} failed: {e}", w.kind()));
            }
        }
        failures
    }
}

fn tally_of(a: Option<&dedup::Admission>) -> Option<dedup::Tally> {
    a.and_then(|a| a.tally)
}

/// What a direct create leaves for after its response: the commit of its id, which also drops
/// its item's new-roster mark when the write inserted the item (the roster then holds every
/// sender), or, when the roster is new and the item was not, the roster's rebuild with it.
fn after_write(
    ev: &NotificationEvent,
    slot: &Slot,
    reserved: bool,
    tally: Option<dedup::Tally>,
    outcome: CreateOutcome,
) -> Option<Deferred> {
    match tally.filter(|t| t.fresh) {
        Some(_) if outcome == CreateOutcome::Created && reserved => Some(Deferred::Commit(
            slot.clone(),
            Some(super::roster::key(ev.owner(), ev.item_key())),
        )),
        Some(t) if reserved => Some(Deferred::Rebuild {
            owner: ev.owner().to_owned(),
            item_key: ev.item_key().to_owned(),
            generation: t.generation,
            commit: Some(slot.clone()),
        }),
        // Not ours to finish: the request holding this event's lease completes the roster.
        Some(_) => None,
        None => reserved.then(|| Deferred::Commit(slot.clone(), None)),
    }
}
