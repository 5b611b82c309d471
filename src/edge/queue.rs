//! Cloudflare Queues wiring: the producer binding behind the core's [`EventQueue`], and the
//! consumer entry point. What a batch does (the configuration it needs, erasure continuations,
//! how each message is settled) is `egn_http::consumer`'s, the flow per batch
//! `egn_core::notify::batch`'s; this file only moves messages in and out.
//!
//! The consumer is exported by hand rather than through `#[event(queue)]`: workers-rs 0.8 does
//! not expose a message's `attempts`, which the backoff needs. worker-build wires any exported
//! `queue` function the same way.

use egn_core::notify::batch::{EventQueue, QueueError, QueuedMessage};
use egn_core::notify::delivery::Delivered;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::{Context, Env, MessageBuilder, QueueContentType};

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
    let edge = super::Edge {
        env: &env,
        ctx: &ctx,
    };
    egn_http::consumer::consume(&edge, &st.config, &name, items, msgs).await;
    Ok(JsValue::UNDEFINED)
}
