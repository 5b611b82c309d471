//! The `ARGV` layouts of the reserve scripts, written once: each table says, in order, what
//! every argument holds; the scripts read the positions by name from a Lua table generated
//! from it ([`lua_indexes`], prepended to the script), and the Rust callers push the values by
//! the same names through [`Argv`], which refuses a name out of the table's order.

/// One argument of a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arg {
    /// Its name: the key of its position in the script's Lua table.
    pub name: &'static str,
    /// What it holds.
    pub doc: &'static str,
    /// Repeated (0 or more values, their count in an earlier argument): the arguments after it
    /// are at their table position plus that count.
    pub repeated: bool,
}

const fn arg(name: &'static str, doc: &'static str) -> Arg {
    Arg {
        name,
        doc,
        repeated: false,
    }
}

/// `reserve.lua`: `RESERVE_ARG.name` is the 1-based position (plus `m` after `member`). Only
/// `field`, `lease_ms` and `expire_at` are always sent; the mute check adds `mute_count` and
/// the members (KEYS[2] = the owner's muted set np:{owner}); the roster adds the next three
/// (KEYS[3] = the item's roster, roster.lua); the hot check, with the roster only, the three
/// after (KEYS[4] = the item's event counter hc:{id}).
pub(crate) const RESERVE: &[Arg] = &[
    arg("field", "the event's field in the bucket hash (fingerprint rest, decimal int64)"),
    arg("lease_ms", "how long the lease holds"),
    arg(
        "expire_at",
        "the bucket hash's expire-at (unix ms, end of the event's window + retention)",
    ),
    arg("mute_count", "m, the number of members that follow"),
    Arg {
        name: "member",
        doc: "a member of the muted set that mutes this event (c:{category}, t:{notificationType}), m times",
        repeated: true,
    },
    arg("fingerprint", "the sender's fingerprint on the roster"),
    arg("event_time", "the event's time (ms)"),
    arg("life", "the roster's lifetime (roster.lua)"),
    arg("hot_limit", "events one window admits"),
    arg("hot_window_ms", "the window"),
    arg("hot_cooldown_ms", "how long the item stays hot after its last event"),
];

/// The last two arguments of `reserve.lua` with an erasure fence, counted from the end
/// (`RESERVE_TAIL.name` = how far before the last): `fence` (then the last key is the owner's
/// fence ef:{digest}) or `fences` (the last two keys are the owner's fence and the sender's,
/// sf:{digest}), then the event's time. No other argument in those places can read `fence`
/// (members are prefixed, the rest numbers).
pub(crate) const RESERVE_TAIL: &[Arg] = &[
    arg("fence_kind", "'fence' or 'fences'"),
    arg(
        "fence_time",
        "the event's time (ms), compared with the fences' erased-at",
    ),
];

/// `reserve_many.lua`'s first arguments (`MANY_ARG.name`, 1-based); the events follow.
pub(crate) const RESERVE_MANY: &[Arg] = &[
    arg("lease_ms", "how long the leases hold"),
    arg("count", "n, the number of events"),
    arg("life", "the rosters' lifetime (roster.lua)"),
];

/// One event of `reserve_many.lua` (`EVENT_ARG.name`, 0-based from the event's first argument,
/// plus `m` after `member`). KEYS = the events' bucket hashes, then the distinct muted sets,
/// rosters and fences they refer to; an index into KEYS of 0 means none.
pub(crate) const RESERVE_MANY_EVENT: &[Arg] = &[
    arg(
        "field",
        "the event's field in its bucket hash (KEYS[i] for the i-th event)",
    ),
    arg("expire_at", "the bucket hash's expire-at (unix ms)"),
    arg("mute_key", "index into KEYS of its muted set"),
    arg("mute_count", "m, the number of members that follow"),
    Arg {
        name: "member",
        doc: "a member that would mute it, m times",
        repeated: true,
    },
    arg("roster_key", "index into KEYS of its roster"),
    arg(
        "fingerprint",
        "the sender's fingerprint on the roster ('' without one)",
    ),
    arg(
        "event_time",
        "the event's time (ms), for the roster and the fences",
    ),
    arg(
        "fence_key",
        "index into KEYS of its owner's erasure fence (an event at or before it: 'erased')",
    ),
    arg(
        "sender_fence_key",
        "index into KEYS of its sender's erasure fence ('sender_erased')",
    ),
];

/// The positions of `table` as a Lua table named `name` (`local NAME = {a = 1, b = 2}`),
/// counting from `base`, and its width (`local NAME_WIDTH = 2`: the number of arguments
/// besides the repeated one); a repeated argument takes no width (the script adds its count).
pub(crate) fn lua_indexes(name: &str, table: &[Arg], base: usize) -> String {
    let mut out = format!("local {name} = {{");
    let mut at = base;
    for (i, a) in table.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("{} = {at}", a.name));
        if !a.repeated {
            at += 1;
        }
    }
    out.push_str(&format!("}}\nlocal {name}_WIDTH = {}\n", at - base));
    out
}

/// The positions of the last arguments (`table` is the tail, in order) as a Lua table of how
/// far each is before the last one: `ARGV[#ARGV - NAME.a]`.
pub(crate) fn lua_tail_indexes(name: &str, table: &[Arg]) -> String {
    let n = table.len();
    let fields: Vec<String> = table
        .iter()
        .enumerate()
        .map(|(i, a)| format!("{} = {}", a.name, n - 1 - i))
        .collect();
    format!("local {name} = {{{}}}\n", fields.join(", "))
}

/// A script's arguments, pushed by name in the order of its table (sections may be left out,
/// never reordered); [`Argv::record`] starts the table again (one record per event).
#[derive(Debug)]
pub(crate) struct Argv {
    table: &'static [Arg],
    next: usize,
    values: Vec<String>,
}

impl Argv {
    pub(crate) fn new(table: &'static [Arg]) -> Self {
        Self {
            table,
            next: 0,
            values: Vec::new(),
        }
    }

    /// Switches to `table` from its start (the next record).
    pub(crate) fn record(&mut self, table: &'static [Arg]) {
        self.table = table;
        self.next = 0;
    }

    /// Appends the argument `name`.
    ///
    /// # Panics
    /// When `name` is not in the table after the last one pushed (a repeated argument may come
    /// again): a caller out of step with the table that documents the layout.
    pub(crate) fn push(&mut self, name: &str, value: impl Into<String>) {
        let from = match self.next.checked_sub(1) {
            Some(last) if self.table[last].repeated && self.table[last].name == name => last,
            _ => self.next,
        };
        let at = self.table[from..]
            .iter()
            .position(|a| a.name == name)
            .unwrap_or_else(|| panic!("ARGV `{name}` out of the table's order"));
        self.next = from + at + 1;
        self.values.push(value.into());
    }

    /// The values, in order.
    pub(crate) fn values(&self) -> Vec<&str> {
        self.values.iter().map(String::as_str).collect()
    }

    /// The values, in order, owned.
    pub(crate) fn into_values(self) -> Vec<String> {
        self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_positions_skip_the_repeated_argument() {
        assert_eq!(
            lua_indexes("A", RESERVE, 1),
            "local A = {field = 1, lease_ms = 2, expire_at = 3, mute_count = 4, member = 5, \
             fingerprint = 5, event_time = 6, life = 7, hot_limit = 8, hot_window_ms = 9, \
             hot_cooldown_ms = 10}\nlocal A_WIDTH = 10\n"
        );
        let event = lua_indexes("E", RESERVE_MANY_EVENT, 0);
        assert!(event.contains("fence_key = 7,") && event.ends_with("local E_WIDTH = 9\n"));
        assert_eq!(
            lua_tail_indexes("T", RESERVE_TAIL),
            "local T = {fence_kind = 1, fence_time = 0}\n"
        );
    }

    #[test]
    fn pushes_follow_the_table_and_may_skip_sections() {
        let mut a = Argv::new(RESERVE);
        for (n, v) in [("field", "f"), ("lease_ms", "1"), ("expire_at", "2")] {
            a.push(n, v);
        }
        a.push("mute_count", "2");
        a.push("member", "c:x");
        a.push("member", "t:y");
        a.push("hot_limit", "5");
        assert_eq!(a.values(), ["f", "1", "2", "2", "c:x", "t:y", "5"]);
        a.record(RESERVE_MANY_EVENT);
        a.push("field", "g");
        assert_eq!(a.values().len(), 8);
    }

    #[test]
    #[should_panic(expected = "ARGV `lease_ms` out of the table's order")]
    fn a_push_out_of_order_panics() {
        let mut a = Argv::new(RESERVE);
        a.push("expire_at", "1");
        a.push("lease_ms", "1");
    }

    #[test]
    fn every_name_is_a_lua_identifier_and_unique() {
        for t in [RESERVE, RESERVE_TAIL, RESERVE_MANY, RESERVE_MANY_EVENT] {
            let names: std::collections::BTreeSet<_> = t.iter().map(|a| a.name).collect();
            assert_eq!(names.len(), t.len());
            assert!(t
                .iter()
                .all(|a| !a.doc.is_empty()
                    && a.name.chars().all(|c| c.is_ascii_lowercase() || c == '_')));
        }
    }
}
