//! Size limits of what the notification API takes (bytes, as the parsers count them). They
//! bound a document at the origins cap (see the size test); the document states them
//! ([`super::schema`]).

pub const ID: usize = 128;
pub const ITEM_KEY: usize = 256;
pub const KIND: usize = 64;
pub const NAME: usize = 100;
pub const URL: usize = 512;
pub const ARGS: usize = 16;
pub const ARG_KEY: usize = 32;
pub const ARG_VALUE: usize = 256;
/// Most entries in each muted list.
pub const MUTED: usize = 32;
