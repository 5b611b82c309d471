//! The compact country table: what an mmdb answers, as merged ranges behind a small directory,
//! read in place. Built from the mmdb at asset-build time and at hot-swap time
//! ([`build`] from [`super::convert::ranges`]); answers exactly what `IpDb::lookup` answers on
//! the source (tested on every range boundary and random addresses of both families).
//!
//! Two kinds of file: the directory (~100 KB, everything but the chunks) and pages of whole
//! chunks (~[`PAGE_TARGET`] each), so a first answer needs the directory and one page; pages
//! are loaded when a lookup first needs them and validated then.
//!
//! ```text
//! dir:  header(48) | codes n×2 (ASCII alpha-2; code 0 = no country) | meta (JSON) | pad to 4
//!       | pages P × (len u32, crc32 u32) | chunks CHUNKS × (page u32, offset u32, len u32)
//!       | slash16 65536 × u8 (the code of each IPv4 /16 with one range, else EXCEPTION)
//! page: chunks, back to back
//! header: magic 8 | version | n codes | meta len | pages at | P | chunks at | dir len
//!         | crc32 of dir[48..] (u32 each) | page bytes u64
//! v4 chunk (one per /8):          index 257 × u32 (first range of each /16, then n)
//!                                 | starts n × u16 (low 16 bits) | codes n × u8
//! v6 chunk (one per /16 of 2000::/3): n u32 | starts n × u64 (top 64 bits) | codes n × u8
//!                                 | m u32 | exceptions m × (start u128, code u8)
//! ```
//! Every /16 (IPv4) and every chunk (IPv6) begins with a range, so a search never leaves its
//! bucket. Four in five IPv4 /16s hold a single range (DB-IP Lite); `slash16` answers those
//! from the directory with one byte read, without a page. A chunk with `len == 0` has one
//! country throughout: its `offset` is that code (its page is `u32::MAX`). IPv6 boundaries
//! inside a /64 (DB-IP has a few hundred) are kept exactly: the /64 gets code
//! [`EXCEPTION`] and its ranges go to the chunk's exception list. Addresses outside 2000::/3
//! are special-purpose and never reach the table.
//!
//! The reader adds two things in memory, derived from validated bytes (the format is
//! unchanged): a copy of `slash16` in which every /16 holding a special-purpose address says
//! [`EXCEPTION`] (so most IPv4 lookups are one byte read, with no range check), and a bucket
//! index per IPv6 chunk, built when its page loads, that cuts a search from ~15 probes to ~3.

use super::answer::{CountryLookup, IpAnswer};
use super::special::{maybe_special_v6, special_range, special_slash16s, special_v4};
use std::cell::{Cell, OnceCell};
use std::net::IpAddr;

/// Magic bytes.
pub const MAGIC: [u8; 8] = *b"IPCTRY\0\0";
/// Bumped on any layout change; readers refuse other versions.
pub const VERSION: u32 = 3;
/// Header size.
pub const HEADER: usize = 48;
/// IPv4 chunks (one per /8).
pub const V4_CHUNKS: usize = 256;
/// IPv6 chunks (one per /16 of 2000::/3).
pub const V6_CHUNKS: usize = 8192;
/// All chunks: IPv4 first.
pub const CHUNKS: usize = V4_CHUNKS + V6_CHUNKS;
/// IPv4 /16s, each with a byte in the directory's `slash16` array.
pub const SLASH16: usize = 1 << 16;
/// Pages are filled with whole chunks up to about this size (a chunk larger than it gets a page
/// of its own): a first answer reads the directory and one page.
pub const PAGE_TARGET: usize = 128 << 10;
/// Most pages a directory may name (a guard for damaged headers).
pub const MAX_PAGES: usize = 4096;
/// Page number of a uniform chunk in the directory.
const UNIFORM: u32 = u32::MAX;
/// Code of a /64 whose ranges are in the chunk's exception list.
pub const EXCEPTION: u8 = 0xFF;

/// Why a table was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// Not a table.
    #[error("not an IP country table (bad magic)")]
    Magic,
    /// Another layout version.
    #[error("IP country table version {actual}, expected {expected}")]
    WrongVersion {
        /// What this reader reads.
        expected: u32,
        /// What the file says.
        actual: u32,
    },
    /// Shorter than its headers say.
    #[error("IP country table truncated")]
    Truncated,
    /// A checksum does not match.
    #[error("IP country table checksum mismatch ({0})")]
    Checksum(&'static str),
    /// A structural inconsistency.
    #[error("IP country table malformed: {0}")]
    Malformed(&'static str),
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}
fn u128_at(b: &[u8], o: usize) -> u128 {
    u128::from_le_bytes(b[o..o + 16].try_into().expect("16 bytes"))
}

/// The table's input, which [`super::convert::ranges`] reads from an mmdb.
///
/// A country code as two ASCII bytes, `None` where the database has no country.
pub type Code = Option<[u8; 2]>;

/// Merged ranges of both families: each start runs up to the next start (or the end of the
/// family's space). The first start is 0 in each family.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges {
    /// IPv4 starts.
    pub v4: Vec<(u32, Code)>,
    /// IPv6 starts (the whole space; the table keeps only what lookups can reach).
    pub v6: Vec<(u128, Code)>,
}

/// Writes a table from merged ranges (see [`super::convert::ranges`]); `meta` is stored as is
/// (the source and its credit, as JSON).
///
/// # Panics
/// When there are more than 254 distinct countries (ISO 3166 has 249).
pub fn build(r: &Ranges, meta: &[u8]) -> TableFiles {
    let mut codes: Vec<[u8; 2]> = vec![[0, 0]];
    let mut code_id = |c: Code| -> u8 {
        let Some(c) = c else { return 0 };
        let i = codes.iter().position(|&x| x == c).unwrap_or_else(|| {
            codes.push(c);
            codes.len() - 1
        });
        assert!(i < EXCEPTION as usize, "too many countries");
        i as u8
    };
    let v4: Vec<(u32, u8)> = r.v4.iter().map(|&(s, c)| (s, code_id(c))).collect();
    let v6: Vec<(u128, u8)> = r.v6.iter().map(|&(s, c)| (s, code_id(c))).collect();
    let mut chunks: Vec<Vec<u8>> = Vec::with_capacity(CHUNKS);
    let mut uniform: Vec<Option<u8>> = Vec::with_capacity(CHUNKS);
    let slash16 = v4_chunks(&v4, &mut chunks, &mut uniform);
    v6_chunks(&v6, &mut chunks, &mut uniform);
    assemble(&codes, meta, &chunks, &uniform, &slash16)
}

/// IPv4: one chunk per /8 (empty when the whole /8 is one country, then `uniform` holds it),
/// starts re-anchored at every /16. Returns the /16 table (a code, or `EXCEPTION`).
fn v4_chunks(
    v4: &[(u32, u8)],
    chunks: &mut Vec<Vec<u8>>,
    uniform: &mut Vec<Option<u8>>,
) -> Vec<u8> {
    let mut slash16: Vec<u8> = Vec::with_capacity(SLASH16);
    let mut i = 0;
    for hi in 0..V4_CHUNKS as u32 {
        let base = hi << 24;
        while i + 1 < v4.len() && v4[i + 1].0 <= base {
            i += 1;
        }
        let mut starts: Vec<u32> = Vec::new();
        let mut cs: Vec<u8> = Vec::new();
        let mut index = Vec::with_capacity(257);
        let mut j = i;
        for b16 in 0..256u32 {
            let lo = base | b16 << 16;
            while j + 1 < v4.len() && v4[j + 1].0 <= lo {
                j += 1;
            }
            index.push(starts.len() as u32);
            starts.push(lo);
            cs.push(v4[j].1);
            let end = u64::from(lo) + (1 << 16);
            while j + 1 < v4.len() && u64::from(v4[j + 1].0) < end {
                j += 1;
                starts.push(v4[j].0);
                cs.push(v4[j].1);
            }
            let one_range = starts.len() - index[b16 as usize] as usize == 1;
            slash16.push(if one_range { v4[j].1 } else { EXCEPTION });
        }
        index.push(starts.len() as u32);
        if cs.iter().all(|&c| c == cs[0]) {
            uniform.push(Some(cs[0]));
            chunks.push(Vec::new());
            continue;
        }
        uniform.push(None);
        let mut out = Vec::new();
        index.iter().for_each(|x| out.extend(x.to_le_bytes()));
        starts
            .iter()
            .for_each(|&s| out.extend((s as u16).to_le_bytes()));
        out.extend(&cs);
        chunks.push(out);
    }
    slash16
}

/// IPv6: one chunk per /16 of 2000::/3 (empty when uniform), /64 keys, exact exceptions inside
/// a /64.
fn v6_chunks(v6: &[(u128, u8)], chunks: &mut Vec<Vec<u8>>, uniform: &mut Vec<Option<u8>>) {
    let mut k = 0;
    for c in 0..V6_CHUNKS as u128 {
        let base = (0x2000 + c) << 112;
        let end = base + (1 << 112);
        while k + 1 < v6.len() && v6[k + 1].0 <= base {
            k += 1;
        }
        let mut entries: Vec<(u128, u8)> = vec![(base, v6[k].1)];
        while k + 1 < v6.len() && v6[k + 1].0 < end {
            k += 1;
            entries.push(v6[k]);
        }
        if entries.len() == 1 {
            uniform.push(Some(entries[0].1));
            chunks.push(Vec::new());
            continue;
        }
        uniform.push(None);
        let mut keys: Vec<(u64, u8)> = Vec::new();
        let mut exceptions: Vec<(u128, u8)> = Vec::new();
        let mut e = 0;
        while e < entries.len() {
            let block = (entries[e].0 >> 64) as u64;
            let in_block = entries[e..]
                .iter()
                .take_while(|x| (x.0 >> 64) as u64 == block)
                .count();
            let aligned = entries[e].0 & u128::from(u64::MAX) == 0;
            if in_block == 1 && aligned {
                keys.push((block, entries[e].1));
            } else {
                // The range covering the block's start is the previous entry when unaligned.
                let first = if aligned {
                    entries[e].1
                } else {
                    entries[e - 1].1
                };
                if !aligned {
                    exceptions.push((u128::from(block) << 64, first));
                }
                keys.push((block, EXCEPTION));
                exceptions.extend(&entries[e..e + in_block]);
                // The next /64 continues the block's last range unless a new entry starts it.
                let last = entries[e + in_block - 1].1;
                // (An entry inside the next /64 makes it an exception block of its own.)
                let next_starts_there = entries
                    .get(e + in_block)
                    .is_some_and(|x| (x.0 >> 64) as u64 == block + 1);
                if !next_starts_there && u128::from(block + 1) << 64 < end {
                    keys.push((block + 1, last));
                }
            }
            e += in_block;
        }
        let mut out = Vec::new();
        out.extend((keys.len() as u32).to_le_bytes());
        keys.iter().for_each(|(s, _)| out.extend(s.to_le_bytes()));
        keys.iter().for_each(|(_, c)| out.push(*c));
        out.extend((exceptions.len() as u32).to_le_bytes());
        for (s, c) in &exceptions {
            out.extend(s.to_le_bytes());
            out.push(*c);
        }
        chunks.push(out);
    }
}

/// Packs the chunks into pages and writes the directory before them.
fn assemble(
    codes: &[[u8; 2]],
    meta: &[u8],
    chunks: &[Vec<u8>],
    uniform: &[Option<u8>],
    slash16: &[u8],
) -> TableFiles {
    let mut pages: Vec<Vec<u8>> = vec![Vec::new()];
    let mut entries: Vec<(u32, u32, u32)> = Vec::with_capacity(CHUNKS);
    for (c, u) in chunks.iter().zip(uniform) {
        if let Some(code) = u {
            entries.push((UNIFORM, u32::from(*code), 0));
            continue;
        }
        let last = pages.last_mut().expect("one page");
        if !last.is_empty() && last.len() + c.len() > PAGE_TARGET {
            pages.push(Vec::new());
        }
        let p = pages.len() - 1;
        let page = &mut pages[p];
        entries.push((p as u32, page.len() as u32, c.len() as u32));
        page.extend(c);
    }
    if pages.last().is_some_and(Vec::is_empty) {
        pages.pop();
    }
    let mut body = Vec::new();
    codes.iter().for_each(|c| body.extend(c));
    body.extend(meta);
    while body.len() % 4 != 0 {
        body.push(0);
    }
    let pages_at = HEADER + body.len();
    for p in &pages {
        body.extend((p.len() as u32).to_le_bytes());
        body.extend(crc32fast::hash(p).to_le_bytes());
    }
    let dir_at = HEADER + body.len();
    for (p, o, l) in entries {
        [p, o, l].iter().for_each(|x| body.extend(x.to_le_bytes()));
    }
    body.extend(slash16);
    let total = HEADER + body.len();
    let mut dir = Vec::with_capacity(total);
    dir.extend(MAGIC);
    for x in [
        VERSION,
        codes.len() as u32,
        meta.len() as u32,
        pages_at as u32,
        pages.len() as u32,
        dir_at as u32,
        total as u32,
        crc32fast::hash(&body),
    ] {
        dir.extend(x.to_le_bytes());
    }
    dir.extend(
        pages
            .iter()
            .map(|p| p.len() as u64)
            .sum::<u64>()
            .to_le_bytes(),
    );
    dir.resize(HEADER, 0);
    dir.extend(body);
    TableFiles { dir, pages }
}

/// A built table: the directory and the pages it names (stored as separate files/objects).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableFiles {
    /// Header, codes, meta, page list and chunk directory: all a lookup needs besides one page.
    pub dir: Vec<u8>,
    /// Chunks grouped into pages of about [`PAGE_TARGET`] bytes.
    pub pages: Vec<Vec<u8>>,
}

impl TableFiles {
    /// Opens the directory with every page loaded (tests, benchmarks, the cron's vetting).
    ///
    /// # Errors
    /// [`TableError`] naming the first problem.
    pub fn open(&self) -> Result<IpTable<&[u8]>, TableError> {
        IpTable::from_parts(self.dir.as_slice(), self.pages.iter().cloned())
    }

    /// Directory plus pages, in bytes.
    pub fn len(&self) -> usize {
        self.dir.len() + self.pages.iter().map(Vec::len).sum::<usize>()
    }

    /// Never true for a built table (kept for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.dir.is_empty()
    }
}

/// File name of page `i` next to the directory (assets and R2 alike).
pub fn page_name(i: usize) -> String {
    format!("page-{i:03}.bin")
}

/// A table's directory opened in place (header, checksum, every chunk's bounds), with its
/// pages loaded one by one as lookups need them ([`IpTable::missing_page`],
/// [`IpTable::insert_page`]); each page is validated once, when it arrives.
pub struct IpTable<S: AsRef<[u8]>> {
    buf: S,
    /// Codes in the directory, "no country" (code 0) included.
    n_codes: usize,
    /// Country of each code byte, `None` for "no country" and unused bytes: indexed without a
    /// check.
    names: Box<[Option<Box<str>>; 256]>,
    meta: std::ops::Range<usize>,
    pages_at: usize,
    /// The directory's `slash16` array, copied at open with two changes for the lookup: it is
    /// indexed by the /16's two octets read little-endian (one 16-bit load; wasm has no byte
    /// swap), and every /16 holding a special-purpose address says [`EXCEPTION`], so a code
    /// read from it is the answer without any other check.
    slash16: Box<[u8; SLASH16]>,
    /// Bucket index of each loaded IPv6 chunk ([`Chunk::slot`]), built with its page.
    v6_index: Vec<OnceCell<Buckets>>,
    pages: Vec<OnceCell<Vec<u8>>>,
    /// The directory's chunk entries, decoded once at open: a lookup reads one aligned record
    /// instead of decoding three little-endian fields with bounds checks (fewer wasm
    /// instructions per lookup, counted with callgrind).
    chunks: Box<[Chunk]>,
    loaded: Cell<usize>,
}

/// Where a chunk is: `page` (or [`UNIFORM`], then `off` is the code), byte offset and length;
/// for an IPv6 chunk with a page, `slot` is its place in `IpTable::v6_index`.
#[derive(Clone, Copy)]
struct Chunk {
    page: u32,
    off: u32,
    len: u32,
    slot: u32,
}

/// log2 of the mean number of keys per bucket in an IPv6 chunk's bucket index.
const KEYS_PER_BUCKET_LOG2: u32 = 3;

/// A bucket index over one IPv6 chunk's sorted /64 keys, built in memory when its page is
/// loaded (derived data: the file format does not change). Bucket `j` covers the keys whose
/// `bits` bits below the chunk's /16 equal `j`; `first[j]` is the number of keys below it.
/// It narrows the ~15 probes of a search over a whole chunk (83 773 keys in 2001::/16) to ~3.
struct Buckets {
    bits: u32,
    first: Box<[u32]>,
}

impl Buckets {
    fn new(keys: &[[u8; 8]]) -> Self {
        let bits = (keys.len().next_power_of_two().trailing_zeros())
            .saturating_sub(KEYS_PER_BUCKET_LOG2)
            .min(16);
        let mut first = Vec::with_capacity((1 << bits) + 1);
        let mut k = 0;
        for j in 0..1u64 << bits {
            // `bits` = 0: one bucket, the whole chunk.
            while k < keys.len() && bucket(u64::from_le_bytes(keys[k]), bits) < j {
                k += 1;
            }
            first.push(k as u32);
        }
        first.push(keys.len() as u32);
        Buckets {
            bits,
            first: first.into_boxed_slice(),
        }
    }
}

/// The bucket of an IPv6 /64 key: its `bits` bits below the /16.
#[inline(always)]
fn bucket(key: u64, bits: u32) -> u64 {
    (key << 16).checked_shr(64 - bits).unwrap_or(0)
}

impl<S: AsRef<[u8]>> IpTable<S> {
    /// Opens and validates a directory; no page is loaded yet.
    ///
    /// # Errors
    /// [`TableError`] naming the first problem.
    pub fn from_bytes(buf: S) -> Result<Self, TableError> {
        let b = buf.as_ref();
        if b.len() < HEADER {
            return Err(TableError::Truncated);
        }
        if b[..8] != MAGIC {
            return Err(TableError::Magic);
        }
        let version = u32_at(b, 8);
        if version != VERSION {
            return Err(TableError::WrongVersion {
                expected: VERSION,
                actual: version,
            });
        }
        let field = |i: usize| u32_at(b, 12 + i * 4) as usize;
        let (n_codes, meta_len, pages_at, n_pages, dir_at, total) =
            (field(0), field(1), field(2), field(3), field(4), field(5));
        if total != b.len() {
            return Err(TableError::Truncated);
        }
        // Every field is checked against `total` first, so the sums cannot wrap (wasm32).
        if n_codes == 0
            || n_codes > EXCEPTION as usize
            || meta_len > total
            || pages_at > total
            || dir_at > total
            || HEADER + n_codes * 2 + meta_len > pages_at
            || n_pages > MAX_PAGES
            || pages_at + n_pages * 8 != dir_at
            || dir_at + CHUNKS * 12 + SLASH16 != total
        {
            return Err(TableError::Malformed("directory layout"));
        }
        if crc32fast::hash(&b[HEADER..]) != u32_at(b, 36) {
            return Err(TableError::Checksum("directory"));
        }
        let mut names: Vec<Option<Box<str>>> = vec![None; 256];
        for (i, name) in names.iter_mut().enumerate().take(n_codes).skip(1) {
            let c = &b[HEADER + 2 * i..HEADER + 2 * i + 2];
            if !c.iter().all(u8::is_ascii_alphanumeric) {
                return Err(TableError::Malformed("country code"));
            }
            *name = Some(std::str::from_utf8(c).expect("ASCII").into());
        }
        let mut t = IpTable {
            names: names.into_boxed_slice().try_into().expect("256"),
            n_codes,
            meta: HEADER + n_codes * 2..HEADER + n_codes * 2 + meta_len,
            pages_at,
            slash16: lookup_slash16(&b[dir_at + CHUNKS * 12..]),
            v6_index: Vec::new(),
            pages: (0..n_pages).map(|_| OnceCell::new()).collect(),
            chunks: (0..CHUNKS)
                .map(|id| {
                    let o = dir_at + id * 12;
                    Chunk {
                        page: u32_at(b, o),
                        off: u32_at(b, o + 4),
                        len: u32_at(b, o + 8),
                        slot: 0,
                    }
                })
                .collect(),
            loaded: Cell::new(0),
            buf,
        };
        for id in 0..CHUNKS {
            let (page, off, len) = t.entry(id);
            let ok = if len == 0 {
                page == UNIFORM as usize && off < t.n_codes
            } else {
                page < n_pages && off.checked_add(len).is_some_and(|e| e <= t.page_len(page))
            };
            if !ok {
                return Err(TableError::Malformed("chunk entry"));
            }
        }
        let mut slots = 0;
        for c in t.chunks[V4_CHUNKS..].iter_mut().filter(|c| c.len != 0) {
            c.slot = slots;
            slots += 1;
        }
        t.v6_index = (0..slots).map(|_| OnceCell::new()).collect();
        let slash16 = &t.buf.as_ref()[dir_at + CHUNKS * 12..];
        if !slash16
            .iter()
            .all(|&c| c == EXCEPTION || (c as usize) < t.n_codes)
        {
            return Err(TableError::Malformed("slash16 code"));
        }
        Ok(t)
    }

    /// Opens a directory with all its pages (`pages` in order).
    ///
    /// # Errors
    /// [`TableError`] naming the first problem.
    pub fn from_parts(
        dir: S,
        pages: impl IntoIterator<Item = Vec<u8>>,
    ) -> Result<Self, TableError> {
        let t = Self::from_bytes(dir)?;
        let mut n = 0;
        for (i, p) in pages.into_iter().enumerate() {
            t.insert_page(i, p)?;
            n += 1;
        }
        if n != t.page_count() {
            return Err(TableError::Truncated);
        }
        Ok(t)
    }

    fn entry(&self, id: usize) -> (usize, usize, usize) {
        let c = self.chunks[id];
        (c.page as usize, c.off as usize, c.len as usize)
    }

    /// Number of pages.
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Size of page `p` as the directory records it.
    pub fn page_len(&self, p: usize) -> usize {
        u32_at(self.buf.as_ref(), self.pages_at + p * 8) as usize
    }

    /// Directory bytes.
    pub fn dir_len(&self) -> usize {
        self.buf.as_ref().len()
    }

    /// Bytes of all pages, loaded or not.
    pub fn pages_len(&self) -> usize {
        (0..self.page_count()).map(|p| self.page_len(p)).sum()
    }

    /// Bytes of the pages loaded so far.
    pub fn loaded_len(&self) -> usize {
        self.loaded.get()
    }

    /// Bytes the reader keeps besides the directory and pages: the lookup copy of `slash16`
    /// and the bucket indexes of the IPv6 chunks loaded so far.
    pub fn derived_len(&self) -> usize {
        let index: usize = self
            .v6_index
            .iter()
            .filter_map(OnceCell::get)
            .map(|b| b.first.len() * 4)
            .sum();
        SLASH16 + index
    }

    /// Pages loaded so far.
    pub fn loaded_pages(&self) -> usize {
        self.pages.iter().filter(|p| p.get().is_some()).count()
    }

    /// The page a lookup of `ip` needs and that is not loaded yet (`None`: it can answer now).
    pub fn missing_page(&self, ip: IpAddr) -> Option<usize> {
        let p = self.page_of(ip)?;
        self.pages[p].get().is_none().then_some(p)
    }

    fn page_of(&self, ip: IpAddr) -> Option<usize> {
        let ip = unmap(ip);
        if special_range(ip).is_some() {
            return None;
        }
        let id = match ip {
            IpAddr::V4(v4) if self.slash16(v4.octets()) != EXCEPTION => return None,
            IpAddr::V4(v4) => usize::from(v4.octets()[0]),
            IpAddr::V6(v6) => v6_chunk(&v6.octets()),
        };
        let (page, _, len) = self.entry(id);
        (len != 0).then_some(page)
    }

    /// Validates page `p` (length, checksum, every chunk in it) and keeps it. A page already
    /// loaded stays as it is.
    ///
    /// # Errors
    /// [`TableError`] when the page does not belong to this directory or is damaged.
    pub fn insert_page(&self, p: usize, bytes: Vec<u8>) -> Result<(), TableError> {
        if p >= self.page_count() {
            return Err(TableError::Malformed("page number"));
        }
        if bytes.len() != self.page_len(p) {
            return Err(TableError::Truncated);
        }
        if crc32fast::hash(&bytes) != u32_at(self.buf.as_ref(), self.pages_at + p * 8 + 4) {
            return Err(TableError::Checksum("page"));
        }
        for id in 0..CHUNKS {
            let (page, off, len) = self.entry(id);
            if len != 0 && page == p {
                self.validate_chunk(id, &bytes[off..off + len])?;
            }
        }
        if self.pages[p].get().is_some() {
            return Ok(());
        }
        // Indexes first: a loaded page always has its chunks' indexes.
        for c in &self.chunks[V4_CHUNKS..] {
            if c.len != 0 && c.page as usize == p {
                let chunk = &bytes[c.off as usize..(c.off + c.len) as usize];
                let n = u32_at(chunk, 0) as usize;
                let index = Buckets::new(chunk[4..4 + n * 8].as_chunks::<8>().0);
                let _ = self.v6_index[c.slot as usize].set(index);
            }
        }
        let n = bytes.len();
        if self.pages[p].set(bytes).is_ok() {
            self.loaded.set(self.loaded.get() + n);
        }
        Ok(())
    }

    fn validate_chunk(&self, id: usize, c: &[u8]) -> Result<(), TableError> {
        let len = c.len();
        let ok_code = |c: u8| (c as usize) < self.n_codes;
        let bad = TableError::Malformed("chunk layout");
        if id < V4_CHUNKS {
            if len < 257 * 4 {
                return Err(bad);
            }
            let n = u32_at(c, 256 * 4) as usize;
            if n.checked_mul(3).and_then(|x| x.checked_add(257 * 4)) != Some(len)
                || u32_at(c, 0) != 0
            {
                return Err(bad);
            }
            for i in 0..256 {
                let (a, z) = (u32_at(c, i * 4) as usize, u32_at(c, i * 4 + 4) as usize);
                // Each /16 has at least its anchor range, starting at 0.
                if a >= z || z > n || u16_at(c, 257 * 4 + a * 2) != 0 {
                    return Err(bad);
                }
                for k in a + 1..z {
                    if u16_at(c, 257 * 4 + k * 2) <= u16_at(c, 257 * 4 + (k - 1) * 2) {
                        return Err(bad);
                    }
                }
            }
            if !c[257 * 4 + n * 2..].iter().all(|&x| ok_code(x)) {
                return Err(bad);
            }
        } else {
            if len < 8 {
                return Err(bad);
            }
            let n = u32_at(c, 0) as usize;
            let m_at = n.checked_mul(9).and_then(|x| x.checked_add(4));
            let Some(m_at) = m_at.filter(|&m| n > 0 && m + 4 <= len) else {
                return Err(bad);
            };
            let m = u32_at(c, m_at) as usize;
            if m.checked_mul(17).and_then(|x| x.checked_add(m_at + 4)) != Some(len) {
                return Err(bad);
            }
            let base = (0x2000 + (id - V4_CHUNKS) as u64) << 48;
            let keys = |k: usize| u64_at(c, 4 + k * 8);
            if keys(0) != base
                || (1..n).any(|k| keys(k) <= keys(k - 1) || keys(k) >> 48 != base >> 48)
            {
                return Err(bad);
            }
            let codes = &c[4 + n * 8..m_at];
            if !codes.iter().all(|&x| ok_code(x) || x == EXCEPTION) {
                return Err(bad);
            }
            let ex = |k: usize| u128_at(c, m_at + 4 + k * 17);
            if (1..m).any(|k| ex(k) <= ex(k - 1))
                || (0..m).any(|k| !ok_code(c[m_at + 4 + k * 17 + 16]))
            {
                return Err(bad);
            }
            // Every exception /64 starts with an exception entry at its first address.
            for (k, _) in codes.iter().enumerate().filter(|(_, &c)| c == EXCEPTION) {
                let start = u128::from(keys(k)) << 64;
                if (0..m).all(|j| ex(j) != start) {
                    return Err(bad);
                }
            }
        }
        Ok(())
    }

    /// The metadata stored by the builder (the source and its credit, as JSON).
    pub fn meta(&self) -> &[u8] {
        &self.buf.as_ref()[self.meta.clone()]
    }

    /// The chunk of `id`: `Ok(code)` when uniform, else its bytes (`Err(page)` when not loaded).
    // `always`: the wasm build otherwise keeps this and `try_lookup` as calls returning
    // through the shadow stack (seen in a workerd CPU profile), unlike the native build.
    #[inline(always)]
    fn chunk(&self, c: Chunk) -> Result<Result<u8, &[u8]>, usize> {
        if c.len == 0 {
            return Ok(Ok(c.off as u8));
        }
        let p = self.pages[c.page as usize].get().ok_or(c.page as usize)?;
        Ok(Err(&p[c.off as usize..(c.off + c.len) as usize]))
    }

    /// The `slash16` byte of the /16 holding `o`: its code, or [`EXCEPTION`] (also for every
    /// /16 with a special-purpose address).
    #[inline(always)]
    fn slash16(&self, o: [u8; 4]) -> u8 {
        self.slash16[usize::from(u16::from_le_bytes([o[0], o[1]]))]
    }

    /// The code of a global IPv4 address whose /16 is not answered by `slash16`.
    #[inline(always)]
    fn v4(&self, o: [u8; 4]) -> Result<u8, usize> {
        let c = match self.chunk(self.chunks[usize::from(o[0])])? {
            Ok(code) => return Ok(code),
            Err(c) => c,
        };
        // Typed views, each sliced once: the search below indexes through std's
        // `partition_point`, which reads without per-probe bounds checks.
        let (index, rest) = c.split_at(257 * 4);
        let index = index.as_chunks::<4>().0;
        let b16 = usize::from(o[1]);
        let (lo, hi) = (
            u32::from_le_bytes(index[b16]) as usize,
            u32::from_le_bytes(index[b16 + 1]) as usize,
        );
        let n = u32::from_le_bytes(index[256]) as usize;
        let (starts, codes) = rest.split_at(n * 2);
        let key = u16::from_be_bytes([o[2], o[3]]);
        // Last start ≤ key in [lo, hi); the anchor at lo is 0, so one exists.
        let starts = &starts.as_chunks::<2>().0[lo..hi];
        Ok(codes[lo + starts.partition_point(|s| u16::from_le_bytes(*s) <= key) - 1])
    }

    /// The code of an IPv6 address inside 2000::/3.
    #[inline(always)]
    fn v6(&self, o: &[u8; 16]) -> Result<u8, usize> {
        let chunk = self.chunks[v6_chunk(o)];
        let c = match self.chunk(chunk)? {
            Ok(code) => return Ok(code),
            Err(c) => c,
        };
        let n = u32_at(c, 0) as usize;
        let key = u64::from_be_bytes(o[..8].try_into().expect("8 bytes"));
        let keys = c[4..4 + n * 8].as_chunks::<8>().0;
        // Set with the page, before it became visible.
        let Some(ix) = self.v6_index[chunk.slot as usize].get() else {
            return Err(chunk.page as usize);
        };
        let j = bucket(key, ix.bits) as usize;
        let (lo, hi) = (ix.first[j] as usize, ix.first[j + 1] as usize);
        // Keys below the bucket are ≤ key and the chunk's first key is its base, so the answer
        // is the bucket's last key ≤ key, or the key before the bucket.
        let base = lo + keys[lo..hi].partition_point(|k| u64::from_le_bytes(*k) <= key) - 1;
        let code = c[4 + n * 8 + base];
        if code != EXCEPTION {
            return Ok(code);
        }
        let m_at = 4 + n * 9;
        let m = u32_at(c, m_at) as usize;
        let ip = u128::from_be_bytes(*o);
        let (mut a, mut z) = (0, m);
        while a < z {
            let mid = (a + z) / 2;
            if u128_at(c, m_at + 4 + mid * 17) <= ip {
                a = mid + 1;
            } else {
                z = mid;
            }
        }
        Ok(c[m_at + 4 + (a - 1) * 17 + 16])
    }

    /// Country of `ip`, with the same reserved-range and IPv4-mapped handling as
    /// `IpDb::lookup`, or `Err(page)` when the page it needs is not loaded.
    ///
    /// # Errors
    /// The number of the page to load first ([`IpTable::insert_page`]).
    #[inline(always)]
    pub fn try_lookup(&self, ip: IpAddr) -> Result<IpAnswer<'_>, usize> {
        // Every path ends in one code and one `answer`: with an answer per path, V8 kept a
        // merge and a second test of the result per lookup.
        let code = match ip {
            IpAddr::V4(v4) => {
                // Most IPv4 addresses are answered by their /16's byte alone.
                let o = v4.octets();
                match self.slash16(o) {
                    EXCEPTION => match special_v4(o) {
                        Some(reason) => return Ok(IpAnswer::Reserved(reason)),
                        None => self.v4(o)?,
                    },
                    code => code,
                }
            }
            // By value as an integer: as an `IpAddr` the wasm build copies every address to the
            // shadow stack to pass a pointer, on the common path too.
            IpAddr::V6(v6) if maybe_special_v6(&v6.octets()) => {
                return self.try_lookup_rare(v6.to_bits())
            }
            IpAddr::V6(v6) => self.v6(&v6.octets())?,
        };
        Ok(self.answer(code))
    }

    /// IPv6 outside 2000::/3 or in its documentation range, IPv4-mapped among them.
    #[inline(never)]
    fn try_lookup_rare(&self, v6: u128) -> Result<IpAnswer<'_>, usize> {
        let ip = unmap(IpAddr::V6(v6.into()));
        if let Some(reason) = special_range(ip) {
            return Ok(IpAnswer::Reserved(reason));
        }
        match ip {
            IpAddr::V4(v4) => self.try_lookup(IpAddr::V4(v4)),
            IpAddr::V6(v6) => Ok(self.answer(self.v6(&v6.octets())?)),
        }
    }

    #[inline(always)]
    fn answer(&self, code: u8) -> IpAnswer<'_> {
        match &self.names[usize::from(code)] {
            Some(c) => IpAnswer::Country(c),
            None => IpAnswer::NotFound,
        }
    }

    /// [`IpTable::try_lookup`] on a table whose pages are all loaded ([`IpTable::from_parts`]);
    /// an address whose page is missing answers `NotFound`.
    #[inline(always)]
    pub fn lookup(&self, ip: IpAddr) -> IpAnswer<'_> {
        self.try_lookup(ip).unwrap_or(IpAnswer::NotFound)
    }
}

/// The chunk of an IPv6 address inside 2000::/3 (the mask keeps the index in bounds).
#[inline(always)]
fn v6_chunk(o: &[u8; 16]) -> usize {
    V4_CHUNKS + (usize::from(u16::from_be_bytes([o[0], o[1]])) & (V6_CHUNKS - 1))
}

/// The directory's `slash16` array as [`IpTable`] reads it (see its `slash16` field).
fn lookup_slash16(dir: &[u8]) -> Box<[u8; SLASH16]> {
    let mut out: Box<[u8; SLASH16]> = vec![EXCEPTION; SLASH16]
        .into_boxed_slice()
        .try_into()
        .expect("SLASH16");
    for (hi, row) in dir[..SLASH16].chunks_exact(256).enumerate() {
        for (lo, &code) in row.iter().enumerate() {
            out[lo << 8 | hi] = code;
        }
    }
    special_slash16s(|s| out[usize::from(s.swap_bytes())] = EXCEPTION);
    out
}

#[inline(always)]
fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl<S: AsRef<[u8]>> CountryLookup for IpTable<S> {
    #[inline(always)]
    fn country(&self, ip: IpAddr) -> IpAnswer<'_> {
        self.lookup(ip)
    }
}

impl<S: AsRef<[u8]>> std::fmt::Debug for IpTable<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpTable")
            .field("dir_bytes", &self.dir_len())
            .field("pages", &self.page_count())
            .field("loaded_bytes", &self.loaded_len())
            .field("countries", &(self.n_codes - 1))
            .finish()
    }
}

/// The table on a tiny hand-made input: three IPv4 ranges, three IPv6 ranges (two of them
/// inside one /64), every boundary, and every header field broken once.
#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(s: &str) -> u32 {
        u32::from(s.parse::<Ipv4Addr>().unwrap())
    }
    fn v6(s: &str) -> u128 {
        u128::from(s.parse::<Ipv6Addr>().unwrap())
    }

    fn ranges() -> Ranges {
        Ranges {
            v4: vec![
                (0, None),
                (v4("8.8.8.0"), Some(*b"US")),
                (v4("8.8.9.0"), Some(*b"DE")),
                (v4("9.0.0.0"), None),
            ],
            v6: vec![
                (0, None),
                (v6("2001:4860::"), Some(*b"US")),
                // A boundary inside a /64: kept exactly, as an exception of its chunk.
                (v6("2001:4860:0:1:8000::"), Some(*b"CH")),
                (v6("2001:4860:0:2::"), None),
            ],
        }
    }

    #[test]
    fn three_ranges_answer_exactly_at_their_boundaries() {
        let files = build(&ranges(), br#"{"source":"test"}"#);
        let t = files.open().unwrap();
        assert_eq!(t.meta(), br#"{"source":"test"}"#);
        use IpAnswer::{Country, NotFound, Reserved};
        for (ip, want) in [
            ("8.8.7.255", NotFound),
            ("8.8.8.0", Country("US")),
            ("8.8.8.255", Country("US")),
            ("8.8.9.0", Country("DE")),
            ("8.255.255.255", Country("DE")),
            ("9.0.0.0", NotFound),
            ("1.0.0.0", NotFound),
            // The first and last addresses are special-purpose, never looked up.
            ("0.0.0.0", Reserved("unspecified")),
            ("255.255.255.255", Reserved("broadcast")),
            ("10.0.0.1", Reserved("private")),
            // IPv4-mapped IPv6 is its IPv4 address.
            ("::ffff:8.8.8.8", Country("US")),
            ("2001:485f:ffff:ffff:ffff:ffff:ffff:ffff", NotFound),
            ("2001:4860::", Country("US")),
            ("2001:4860:0:1:7fff:ffff:ffff:ffff", Country("US")),
            ("2001:4860:0:1:8000::", Country("CH")),
            ("2001:4860:0:1:ffff:ffff:ffff:ffff", Country("CH")),
            ("2001:4860:0:2::", NotFound),
            ("::1", Reserved("loopback")),
        ] {
            assert_eq!(t.lookup(ip.parse().unwrap()), want, "{ip}");
        }
    }

    #[test]
    fn pages_load_on_demand_and_are_checked() {
        let files = build(&ranges(), b"{}");
        let t = IpTable::from_bytes(files.dir.as_slice()).unwrap();
        assert_eq!(t.loaded_pages(), 0);
        // 8.8.0.0/16 holds three ranges: it needs its page; 9.9.9.9 answers from the directory.
        assert_eq!(t.missing_page("9.9.9.9".parse().unwrap()), None);
        let p = t.missing_page("8.8.8.8".parse().unwrap()).unwrap();
        assert_eq!(
            t.try_lookup("8.8.8.8".parse().unwrap()),
            Err(p),
            "no answer without the page"
        );
        let page = files.pages[p].clone();
        let mut flipped = page.clone();
        flipped[0] ^= 1;
        assert_eq!(t.insert_page(p, flipped), Err(TableError::Checksum("page")));
        assert_eq!(
            t.insert_page(p, page[..page.len() - 1].to_vec()),
            Err(TableError::Truncated)
        );
        assert_eq!(
            t.insert_page(files.pages.len(), page.clone()),
            Err(TableError::Malformed("page number"))
        );
        t.insert_page(p, page).unwrap();
        assert_eq!(
            t.try_lookup("8.8.8.8".parse().unwrap()),
            Ok(IpAnswer::Country("US"))
        );
    }

    #[test]
    fn broken_directories_are_refused_with_their_reason() {
        let dir = build(&ranges(), b"{}").dir;
        let open = |b: &[u8]| IpTable::from_bytes(b).err();
        let edit = |off: usize, v: u32| {
            let mut b = dir.clone();
            b[off..off + 4].copy_from_slice(&v.to_le_bytes());
            b
        };
        assert_eq!(open(&dir), None);
        assert_eq!(open(&dir[..HEADER - 1]), Some(TableError::Truncated));
        assert_eq!(open(&dir[..dir.len() - 1]), Some(TableError::Truncated));
        let mut magic = dir.clone();
        magic[0] ^= 1;
        assert_eq!(open(&magic), Some(TableError::Magic));
        assert_eq!(
            open(&edit(8, VERSION + 1)),
            Some(TableError::WrongVersion {
                expected: VERSION,
                actual: VERSION + 1
            })
        );
        assert_eq!(
            open(&edit(12, 0)),
            Some(TableError::Malformed("directory layout"))
        );
        assert_eq!(
            open(&edit(24, MAX_PAGES as u32 + 1)),
            Some(TableError::Malformed("directory layout"))
        );
        let mut flipped = dir.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(open(&flipped), Some(TableError::Checksum("directory")));
    }
}
