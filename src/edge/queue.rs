//! Cloudflare Queues wiring: the producer binding behind the core's [`EventQueue`], and the
//! consumer entry point. The flow (grouping, one upsert per group, dedup, dead letters) is
//! `egn_core::notify::batch`; this file only moves messages in and out.
//!
//! The consumer is exported by hand rather than through `#[event(queue)]`: workers-rs 0.8 does
//! not expose a message's `attempts`, which the backoff needs. worker-build wires any exported
//! `queue` function the same way.

use super::log;
use egn_core::notify::batch::{Backoff, EventQueue, QueueError, QueuedMessage};
use egn_core::notify::delivery::{self, Delivered};
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::{Context, Date, Env, MessageBuilder, QueueContentType};

/// The producer binding (`[[queues.producers]]` in wrangler.toml). Absent = synchronous path.
pub const BINDING: &str = "NOTIFY_QUEUE";

/// The events queue, when bound.
pub struct WorkerQueue(worker::Queue);

/// The bound events queue, or `None` (then creates take the synchronous path).
pub fn binding(env: &Env) -> Option<WorkerQueue> {
    env.queue(BINDING).ok().map(WorkerQueue)
}

impl EventQueue for WorkerQueue {
    async fn send_batch(&self, bodies: &[String], delay_seconds: u32) -> Result<(), QueueError> {
        // Text, not JSON: the consumer parses the body itself, numbers stay exact.
        let msgs = bodies.iter().map(|b| {
            MessageBuilder::new(b.clone())
                .content_type(QueueContentType::Text)
                .delay_seconds(delay_seconds)
                .build()
        });
        self.0
            .send_batch(msgs)
            .await
            .map_err(|e| QueueError::Send(e.to_string()))
    }
}

#[wasm_bindgen]
extern "C" {
    /// The runtime's `MessageBatch`.
    pub type JsBatch;
    #[wasm_bindgen(method, getter)]
    fn queue(this: &JsBatch) -> String;
    #[wasm_bindgen(method, getter)]
    fn messages(this: &JsBatch) -> js_sys::Array;

    /// The runtime's `Message`.
    pub type JsMessage;
    #[wasm_bindgen(method, getter)]
    fn id(this: &JsMessage) -> String;
    #[wasm_bindgen(method, getter)]
    fn body(this: &JsMessage) -> JsValue;
    #[wasm_bindgen(method, getter)]
    fn attempts(this: &JsMessage) -> u32;
    #[wasm_bindgen(method)]
    fn ack(this: &JsMessage);
    #[wasm_bindgen(method)]
    fn retry(this: &JsMessage, options: &JsValue);
}

impl Delivered for JsMessage {
    fn attempts(&self) -> u32 {
        JsMessage::attempts(self)
    }
    fn ack(&self) {
        JsMessage::ack(self);
    }
    fn retry(&self, delay_seconds: u32) {
        let o = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&o, &"delaySeconds".into(), &delay_seconds.into());
        JsMessage::retry(self, &o);
    }
}

/// The consumer of the events queue and of its dead-letter queue.
#[wasm_bindgen]
pub async fn queue(
    batch: JsBatch,
    env: Env,
    ctx: worker::worker_sys::Context,
) -> Result<JsValue, JsValue> {
    let ctx = Context::new(ctx);
    let name = batch.queue();
    let msgs: Vec<JsMessage> = batch
        .messages()
        .iter()
        .map(JsCast::unchecked_into)
        .collect();
    let items: Vec<QueuedMessage> = msgs
        .iter()
        .map(|m| {
            let body = m.body();
            QueuedMessage {
                id: m.id(),
                body: body.as_string().unwrap_or_else(|| {
                    js_sys::JSON::stringify(&body).map_or_else(|_| String::new(), String::from)
                }),
                attempts: m.attempts(),
            }
        })
        .collect();
    let st = super::state::get(&env);
    let (svc, (base, cap)) = match st
        .config
        .as_ref()
        .map_err(ToString::to_string)
        .and_then(|c| {
            super::factory::service(c)
                .map(|s| (s, c.queue_retry))
                .map_err(|e| e.message)
        }) {
        Ok(v) => v,
        Err(e) => {
            // Nothing can be written: let the queue redeliver (and dead-letter) them.
            log(&json!({ "queue": name, "skipped": e }));
            delivery::retry_all(&msgs);
            return Ok(JsValue::UNDEFINED);
        }
    };
    let now = Date::now().as_millis() as i64;
    let backoff = Backoff { base, cap };
    if delivery::is_dead_letter_queue(&name) {
        let kept = svc.store_dead_letters(&items, &name, now).await;
        let stored = delivery::settle_dead_letters(&msgs, &kept, backoff);
        log(&json!({ "queue": name, "dead_letters": msgs.len(), "stored": stored }));
        return Ok(JsValue::UNDEFINED);
    }
    // A message of which only some events failed has those re-sent on the events queue.
    let requeue = binding(&env);
    // Continuations of erasures ride the events queue: run them, then the events.
    let (items, msgs) = continue_erasures(&svc, &env, requeue.as_ref(), items, msgs, now).await;
    let report = svc
        .consume(&items, &name, now, backoff, requeue.as_ref())
        .await;
    let retried = delivery::settle(&msgs, &report.dispositions);
    log(&delivery::batch_log(&name, msgs.len(), &report, retried));
    after_change(&env, &ctx, &report.changed_owners);
    Ok(JsValue::UNDEFINED)
}

/// Runs the erasure continuations among `items` (acknowledged once run, retried on failure);
/// returns the other messages.
async fn continue_erasures(
    svc: &egn_core::notify::NotifyService<super::http_client::WorkerHttp>,
    env: &Env,
    requeue: Option<&WorkerQueue>,
    items: Vec<QueuedMessage>,
    msgs: Vec<JsMessage>,
    now: i64,
) -> (Vec<QueuedMessage>, Vec<JsMessage>) {
    let (mut rest, mut rest_msgs) = (Vec::new(), Vec::new());
    for (item, m) in items.into_iter().zip(msgs) {
        let Some(id) = egn_core::notify::erasure::continued(&item.body) else {
            rest.push(item);
            rest_msgs.push(m);
            continue;
        };
        let hubs = super::hub::Hubs(env);
        match egn_http::privacy::resume_erasure(svc, &id, &hubs, requeue, now).await {
            Ok(()) => m.ack(),
            Err(e) => {
                log(&json!({ "erasure": "continuation failed", "error": e.message }));
                delivery::retry_later(&m, delivery::UNHANDLED);
            }
        }
    }
    (rest, rest_msgs)
}

/// Called once per consumed batch with the owners whose inbox changed (sorted, distinct).
pub fn after_change(env: &Env, ctx: &Context, owners: &[String]) {
    super::hub::poke(env, ctx, owners.to_vec());
}
