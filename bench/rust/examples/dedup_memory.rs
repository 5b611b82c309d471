//! Dedup memory/throughput benchmark against a real `redis-server` (seeds §3 workload).
//!
//! `cargo run --release -p edge-geo-notify-benches --example dedup_memory -- --ids 3600000 [--per-hash 400] [--redis-server PATH]`
//!
//! Starts a private redis-server on a free loopback port (no persistence), then loads the same
//! ids three ways over a pipelined RESP connection and reports `used_memory` per id:
//! 1. one String per id (`SET k 1 NX PX`),
//! 2. one Hash per window (the seed's Lua: `HSETNX` + `PEXPIRE`, full id as field),
//! 3. ours: `dedup::slot` sub-bucketed listpack hashes with int64 fields, reserve then commit.
//!
//! Throughput compares our reserve (one EVALSHA) with `SET NX PX`, pipelined (server-bound) and
//! one request at a time (round-trip-bound, like a worker calling Redis).

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use egn_core::dedup::{self, DedupConfig};
use egn_core::notify;

const WINDOW_MS: u64 = 600_000;
const BATCH: usize = 1_000;

#[derive(Debug)]
#[allow(dead_code)] // every RESP type is parsed; only some are inspected
enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

struct Conn {
    r: BufReader<TcpStream>,
    w: BufWriter<TcpStream>,
}

impl Conn {
    fn connect(port: u16) -> std::io::Result<Self> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_nodelay(true)?;
        Ok(Self {
            r: BufReader::with_capacity(1 << 16, s.try_clone()?),
            w: BufWriter::with_capacity(1 << 16, s),
        })
    }

    fn send(&mut self, args: &[&[u8]]) {
        write!(self.w, "*{}\r\n", args.len()).unwrap();
        for a in args {
            write!(self.w, "${}\r\n", a.len()).unwrap();
            self.w.write_all(a).unwrap();
            self.w.write_all(b"\r\n").unwrap();
        }
    }

    fn read(&mut self) -> Reply {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        let (kind, rest) = line.trim_end().split_at(1);
        match kind {
            "+" => Reply::Simple(rest.into()),
            "-" => Reply::Error(rest.into()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Reply::Bulk(None);
                }
                let mut buf = vec![0; n as usize + 2];
                self.r.read_exact(&mut buf).unwrap();
                buf.truncate(n as usize);
                Reply::Bulk(Some(buf))
            }
            "*" => {
                let n: i64 = rest.parse().unwrap();
                Reply::Array((0..n.max(0)).map(|_| self.read()).collect())
            }
            other => panic!("bad RESP type {other:?}"),
        }
    }

    fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.send(args);
        self.w.flush().unwrap();
        self.read()
    }

    fn flush_and_check(&mut self, n: usize) {
        self.w.flush().unwrap();
        for _ in 0..n {
            if let Reply::Error(e) = self.read() {
                panic!("redis error: {e}");
            }
        }
    }

    fn used_memory(&mut self) -> i64 {
        let Reply::Bulk(Some(info)) = self.call(&[b"INFO", b"memory"]) else {
            panic!("INFO")
        };
        let info = String::from_utf8(info).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

/// The lease of every reserve here.
const LEASE_MS: u64 = 30_000;

/// A reserve script call as `dedup` builds it (its keys and arguments), so the benchmark sends
/// the layout the worker sends (`dedup/args.rs`), not a copy of it.
type Call<'k> = (Vec<&'k str>, Vec<String>);

/// Sends `EVALSHA` of `script` with a call's keys and arguments.
fn evalsha(c: &mut Conn, script: &egn_core::backend::Script, (keys, args): &Call<'_>) {
    let n = keys.len().to_string();
    let mut cmd: Vec<&[u8]> = vec![b"EVALSHA", script.sha1().as_bytes(), n.as_bytes()];
    cmd.extend(keys.iter().map(|k| k.as_bytes()));
    cmd.extend(args.iter().map(String::as_bytes));
    c.send(&cmd);
}

/// The admission a create makes (`dedup::reserve_unless_muted` with a roster): reserve, the
/// muted-set check and the roster join in one EVALSHA; `members` would mute the event.
fn admission<'k>(
    s: &'k dedup::Slot,
    mute: &'k str,
    members: &'k [String],
    roster: &'k dedup::RosterCheck,
    life: &dedup::RosterLife,
) -> Call<'k> {
    let check = dedup::MuteCheck {
        key: mute,
        members,
        fence: None,
        sender_fence: None,
    };
    dedup::admission_command(s, LEASE_MS, &check, Some((roster, life)), None)
}

/// Runs `cmd(i)` for every id, pipelined in batches; returns ops/s.
fn load(c: &mut Conn, n: usize, mut cmd: impl FnMut(usize, &mut Conn)) -> f64 {
    let start = Instant::now();
    let mut pending = 0;
    for i in 0..n {
        cmd(i, c);
        pending += 1;
        if pending == BATCH {
            c.flush_and_check(pending);
            pending = 0;
        }
    }
    c.flush_and_check(pending);
    n as f64 / start.elapsed().as_secs_f64()
}

/// Same, one request at a time (round-trip-bound).
fn sequential(c: &mut Conn, n: usize, mut cmd: impl FnMut(usize, &mut Conn)) -> f64 {
    let start = Instant::now();
    for i in 0..n {
        cmd(i, c);
        c.flush_and_check(1);
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// A UUID-shaped message id (36 chars), like a Kafka producer's.
fn message_id(i: usize) -> String {
    let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let g = h.rotate_left(29).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        h & 0xfff,
        g >> 52,
        g & 0xffff_ffff_ffff
    )
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(bin: &str) -> (Server, u16) {
    // Reserve a free port by binding, then hand it to redis-server (which has no "port 0").
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("dedup-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new(bin)
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    let server = Server(child);
    for _ in 0..100 {
        if Conn::connect(port).is_ok() {
            return (server, port);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("redis-server did not come up on port {port}");
}

fn main() {
    let mut ids = 3_600_000usize;
    let mut bin = "redis-server".to_owned();
    let mut sample = 50_000usize;
    let mut per_hash = dedup::TARGET_FIELDS_PER_HASH;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ids" => ids = args.next().and_then(|v| v.parse().ok()).expect("--ids N"),
            "--redis-server" => bin = args.next().expect("--redis-server PATH"),
            "--sequential-sample" => {
                sample = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--sequential-sample N")
            }
            "--per-hash" => {
                per_hash = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--per-hash N")
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let (_server, port) = start_server(&bin);
    let mut c = Conn::connect(port).unwrap();
    let Reply::Bulk(Some(v)) = c.call(&[b"INFO", b"server"]) else {
        panic!()
    };
    let version = String::from_utf8_lossy(&v)
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:").map(str::to_owned))
        .unwrap();

    let mut cfg = DedupConfig::for_rate(ids as u64, WINDOW_MS);
    cfg.buckets = u32::try_from((ids as u64).div_ceil(per_hash.max(1)))
        .unwrap()
        .max(1);
    // The current window, so hashes live for window + retention (an old window would expire them
    // as soon as the 30 s leases did — correct, but it would empty the measurement).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let base = now / WINDOW_MS as i64 * WINDOW_MS as i64;
    let time_of = |i: usize| base + (i as i64 * WINDOW_MS as i64) / ids.max(1) as i64; // spread over the window
    let id_strings: Vec<String> = (0..ids).map(message_id).collect();
    let slots: Vec<dedup::Slot> = (0..ids)
        .map(|i| dedup::slot(&cfg, &id_strings[i], time_of(i)))
        .collect();
    let [reserve, commit, _] = dedup::scripts();
    let seed_lua = "local w = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])\n\
                    if w == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end\nreturn w";
    let Reply::Bulk(Some(seed_sha)) = c.call(&[b"SCRIPT", b"LOAD", seed_lua.as_bytes()]) else {
        panic!()
    };
    for s in [reserve, commit] {
        c.call(&[b"SCRIPT", b"LOAD", s.source().as_bytes()]);
    }
    println!(
        "redis {version}, {ids} ids in one {WINDOW_MS} ms window, {} sub-buckets",
        cfg.buckets
    );

    let measure = |c: &mut Conn, name: &str, run: &mut dyn FnMut(&mut Conn) -> f64| -> (f64, f64) {
        c.call(&[b"FLUSHALL"]);
        std::thread::sleep(Duration::from_millis(200));
        let before = c.used_memory();
        let rate = run(c);
        let after = c.used_memory();
        let per_id = (after - before) as f64 / ids as f64;
        println!("{name:<48} {per_id:>7.1} B/id   {rate:>10.0} ops/s (pipelined)");
        (per_id, rate)
    };

    let ttl = WINDOW_MS.to_string();
    let (_, set_rate) = measure(&mut c, "1. String per id   (SET NX PX)", &mut |c| {
        load(c, ids, |i, c| {
            let key = format!("dd:{}", id_strings[i]);
            c.send(&[b"SET", key.as_bytes(), b"1", b"NX", b"PX", ttl.as_bytes()]);
        })
    });
    measure(
        &mut c,
        "2. Hash per window (seed Lua HSETNX+PEXPIRE)",
        &mut |c| {
            let key = format!("dd:{}", base / WINDOW_MS as i64);
            load(c, ids, |i, c| {
                c.send(&[
                    b"EVALSHA",
                    &seed_sha,
                    b"1",
                    key.as_bytes(),
                    id_strings[i].as_bytes(),
                    b"1",
                    ttl.as_bytes(),
                ]);
            })
        },
    );
    let mut reserve_rate = 0.0;
    measure(
        &mut c,
        "3. Ours (sub-bucketed listpack, reserve+commit)",
        &mut |c| {
            // Built before the clock starts, as the strings were: the server is what is measured.
            let calls: Vec<Call<'_>> = slots
                .iter()
                .map(|s| dedup::reserve_command(s, LEASE_MS))
                .collect();
            reserve_rate = load(c, ids, |i, c| evalsha(c, reserve, &calls[i]));
            load(c, ids, |i, c| {
                let s = &slots[i];
                c.send(&[
                    b"EVALSHA",
                    commit.sha1().as_bytes(),
                    b"1",
                    s.key.as_bytes(),
                    s.field.as_bytes(),
                ]);
            });
            reserve_rate
        },
    );

    // Bucket health: largest hash and how many left listpack.
    let keys: Vec<String> = (0..cfg.buckets)
        .map(|b| format!("dd:{}:{b}", base / WINDOW_MS as i64))
        .collect();
    let (mut max_len, mut converted) = (0, 0);
    for k in &keys {
        if let Reply::Int(n) = c.call(&[b"HLEN", k.as_bytes()]) {
            max_len = max_len.max(n);
        }
        if let Reply::Bulk(Some(e)) = c.call(&[b"OBJECT", b"ENCODING", k.as_bytes()]) {
            converted += usize::from(e != b"listpack");
        }
    }
    println!(
        "   buckets: {} hashes, fullest {max_len} fields, {converted} converted to hashtable",
        cfg.buckets
    );
    println!(
        "throughput, pipelined: reserve (EVALSHA) / SET NX = {:.2}",
        reserve_rate / set_rate
    );

    // Round-trip-bound samples on fresh keys (later windows), one request at a time: SET NX,
    // the bare reserve, and the admission a create sends (reserve + muted-set check + roster
    // join, `reserve_unless_muted`), taking turns three times so drift hits all three alike.
    let n = sample.min(ids);
    // The roster lifetime and the members a create sends (the worker's defaults).
    let life = notify::roster::life(&notify::NotifyConfig::default(), LEASE_MS);
    let members = notify::preferences::mute_members("social", "like").to_vec();
    let mutes = "np:bench".to_string();
    let (mut set_seq, mut res_seq, mut adm_seq) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..3_i64 {
        set_seq.push(sequential(&mut c, n, |i, c| {
            let key = format!("dd{round}:{}", id_strings[i]);
            c.send(&[b"SET", key.as_bytes(), b"1", b"NX", b"PX", ttl.as_bytes()]);
        }));
        let slots_at = |w: i64| -> Vec<dedup::Slot> {
            let t = |i: usize| time_of(i) + w * WINDOW_MS as i64;
            (0..n)
                .map(|i| dedup::slot(&cfg, &id_strings[i], t(i)))
                .collect()
        };
        let later = slots_at(1 + round);
        res_seq.push(sequential(&mut c, n, |i, c| {
            evalsha(c, reserve, &dedup::reserve_command(&later[i], LEASE_MS));
        }));
        let admit_slots = slots_at(4 + round);
        adm_seq.push(sequential(&mut c, n, |i, c| {
            // 1 000 items, each sender new to its item.
            let roster = dedup::RosterCheck {
                key: format!("rs:bench{round}:{}", i % 1000),
                field: notify::roster::field(&format!("sender-{i}")),
                event_time_ms: time_of(i) + (4 + round) * WINDOW_MS as i64,
            };
            let call = admission(&admit_slots[i], &mutes, &members, &roster, &life);
            evalsha(c, reserve, &call);
        }));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (set_seq, res_seq, adm_seq) = (
        median(&mut set_seq),
        median(&mut res_seq),
        median(&mut adm_seq),
    );
    println!(
        "throughput, one at a time ({n} ops, median of 3 turns): SET NX {set_seq:.0}/s, reserve {res_seq:.0}/s (ratio {:.2}), admission of a create {adm_seq:.0}/s (ratio {:.2})",
        res_seq / set_seq,
        adm_seq / set_seq
    );

    // A roster's memory: 100 000 distinct senders on one item, through the admission.
    let senders = 100_000usize;
    let roster = "rs:bench-big";
    load(&mut c, senders, |i, c| {
        let s = dedup::slot(&cfg, &format!("big-{i}"), time_of(i));
        let check = dedup::RosterCheck {
            key: roster.into(),
            field: notify::roster::field(&format!("fan-{i}")),
            event_time_ms: time_of(i),
        };
        evalsha(c, reserve, &admission(&s, &mutes, &[], &check, &life));
    });
    let Reply::Int(bytes) = c.call(&[b"MEMORY", b"USAGE", roster.as_bytes(), b"SAMPLES", b"0"])
    else {
        panic!("MEMORY USAGE")
    };
    let Reply::Bulk(Some(count)) = c.call(&[b"HGET", roster.as_bytes(), b"n"]) else {
        panic!("HGET n")
    };
    println!(
        "roster of one item: {} senders counted (of {senders} sent), {:.1} B/sender (MEMORY USAGE)",
        String::from_utf8_lossy(&count),
        bytes as f64 / senders as f64
    );
}
