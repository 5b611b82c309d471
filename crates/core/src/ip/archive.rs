//! The downloaded database out of its container, as a stream: a plain `.mmdb` passes through,
//! a (decompressed) tar archive, MaxMind's `GeoLite2-Country_YYYYMMDD/GeoLite2-Country.mmdb`
//! next to its licence texts, gives its one `.mmdb` member. Fed chunk by chunk (the worker's
//! gunzip output), it holds only the member, never the archive, within the database cap.
//!
//! A small bounded reader of POSIX ustar, GNU (`L` long names) and pax (`path`) headers rather
//! than the `tar` crate, whose `Archive` reads a blocking `Read` and brings file-system code
//! the worker has no use for. Refused: a header whose checksum does not match, a size field
//! that is not octal, a member or a long name over its cap, no `.mmdb` member, two of them, and
//! an archive that ends inside a member.

const BLOCK: usize = 512;
/// Largest GNU long name or pax header accepted.
const MAX_NAME_BYTES: u64 = 64 * 1024;
/// Bytes of members other than the `.mmdb` accepted (MaxMind ships three short texts).
pub const MAX_OTHER_BYTES: u64 = 1 << 20;

/// Why an archive was refused (a cap passed is `update::UpdateError::TooLarge` once converted).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveError {
    /// A size cap was hit (`what` is `download`, `decompressed database`, …).
    #[error("{what} is over {limit} bytes")]
    TooLarge {
        /// Which cap.
        what: &'static str,
        /// The cap.
        limit: u64,
    },
    /// A header does not checksum or a field does not parse.
    #[error("tar header at byte {offset}: {what}")]
    Header {
        /// Offset of the header in the decompressed stream.
        offset: u64,
        /// What is wrong.
        what: &'static str,
    },
    /// No member ends in `.mmdb`.
    #[error("tar archive has no .mmdb member")]
    NoDatabase,
    /// More than one member ends in `.mmdb`.
    #[error("tar archive has more than one .mmdb member ({0}, {1})")]
    SeveralDatabases(String, String),
    /// The stream ended inside a header or a member.
    #[error("tar archive truncated")]
    Truncated,
}

/// Bytes collected up to a cap: a stream that goes over it is refused as soon as it does,
/// without holding more than the cap.
#[derive(Debug)]
pub struct CappedBuf {
    buf: Vec<u8>,
    limit: u64,
    what: &'static str,
}

impl CappedBuf {
    /// An empty buffer refusing more than `limit` bytes, named `what` in the error.
    pub fn new(limit: u64, what: &'static str) -> Self {
        CappedBuf {
            buf: Vec::new(),
            limit,
            what,
        }
    }

    /// Appends a chunk.
    ///
    /// # Errors
    /// [`ArchiveError::TooLarge`] when the total would pass the cap.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), ArchiveError> {
        if (self.buf.len() + chunk.len()) as u64 > self.limit {
            return Err(ArchiveError::TooLarge {
                what: self.what,
                limit: self.limit,
            });
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// The bytes collected.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

/// What came out: the database and, from a tar, its member's name.
#[derive(Debug)]
pub struct Unpacked {
    /// The database bytes.
    pub bytes: Vec<u8>,
    /// The member's path inside the archive (`None`: the download was the database itself).
    pub member: Option<String>,
}

enum State {
    /// The first block, to tell a tar from a database.
    Sniff(Vec<u8>),
    Raw(CappedBuf),
    Tar(Box<Tar>),
}

/// The stream reader: [`Unpacker::push`] each chunk, then [`Unpacker::finish`].
pub struct Unpacker {
    state: State,
    limit: u64,
}

impl Unpacker {
    /// A reader refusing a database over `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Unpacker {
            state: State::Sniff(Vec::with_capacity(BLOCK)),
            limit,
        }
    }

    /// Feeds a chunk.
    ///
    /// # Errors
    /// [`ArchiveError::TooLarge`] past a cap, another [`ArchiveError`] for a bad archive.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), ArchiveError> {
        match &mut self.state {
            State::Sniff(head) => {
                let take = (BLOCK - head.len()).min(chunk.len());
                head.extend_from_slice(&chunk[..take]);
                if head.len() < BLOCK {
                    return Ok(());
                }
                let head = std::mem::take(head);
                self.decide(&head)?;
                self.push(&chunk[take..])
            }
            State::Raw(buf) => buf.push(chunk),
            State::Tar(t) => t.push(chunk),
        }
    }

    fn decide(&mut self, head: &[u8]) -> Result<(), ArchiveError> {
        self.state = if is_tar(head) {
            State::Tar(Box::new(Tar::new(self.limit)))
        } else {
            State::Raw(CappedBuf::new(self.limit, "decompressed database"))
        };
        self.push(head)
    }

    /// The database.
    ///
    /// # Errors
    /// [`ArchiveError`] when the archive is truncated or has not exactly one `.mmdb`.
    pub fn finish(mut self) -> Result<Unpacked, ArchiveError> {
        if let State::Sniff(head) = &mut self.state {
            let head = std::mem::take(head);
            self.decide(&head)?;
        }
        match self.state {
            State::Raw(buf) => Ok(Unpacked {
                bytes: buf.into_inner(),
                member: None,
            }),
            State::Tar(t) => t.finish(),
            State::Sniff(_) => unreachable!("decided above"),
        }
    }
}

/// A ustar (`ustar\0`) or GNU (`ustar  \0`) header: the magic at offset 257.
pub fn is_tar(head: &[u8]) -> bool {
    head.len() >= BLOCK && &head[257..262] == b"ustar"
}

enum Member {
    Skip,
    Keep(String, CappedBuf),
    /// A GNU long name or a pax header: the next member's name.
    Name {
        pax: bool,
        buf: Vec<u8>,
    },
}

struct Tar {
    limit: u64,
    offset: u64,
    header_at: u64,
    header: Vec<u8>,
    remaining: u64,
    padding: u64,
    member: Member,
    next_name: Option<String>,
    found: Option<(String, Vec<u8>)>,
    other: u64,
    ended: bool,
}

fn octal(field: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(field).ok()?;
    let s = s.trim_matches(|c: char| c == '\0' || c == ' ');
    if s.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(s, 8).ok()
}

fn text(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// The `path` of a pax extended header (`"%d path=%s\n"` records).
fn pax_path(buf: &[u8]) -> Option<String> {
    let mut rest = buf;
    while !rest.is_empty() {
        let sp = rest.iter().position(|&b| b == b' ')?;
        let len: usize = std::str::from_utf8(&rest[..sp]).ok()?.parse().ok()?;
        if len <= sp || len > rest.len() {
            return None;
        }
        let record = &rest[sp + 1..len];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(v) = record.strip_prefix(b"path=") {
            return Some(String::from_utf8_lossy(v).into_owned());
        }
        rest = &rest[len..];
    }
    None
}

impl Tar {
    fn new(limit: u64) -> Self {
        Tar {
            limit,
            offset: 0,
            header_at: 0,
            header: Vec::with_capacity(BLOCK),
            remaining: 0,
            padding: 0,
            member: Member::Skip,
            next_name: None,
            found: None,
            other: 0,
            ended: false,
        }
    }

    fn push(&mut self, mut chunk: &[u8]) -> Result<(), ArchiveError> {
        while !chunk.is_empty() {
            if self.ended {
                // The end-of-archive blocks and the record padding after them.
                return Ok(());
            }
            let n = if self.remaining > 0 {
                let n = usize::try_from(self.remaining)
                    .unwrap_or(usize::MAX)
                    .min(chunk.len());
                self.data(&chunk[..n])?;
                self.remaining -= n as u64;
                if self.remaining == 0 {
                    self.end_member()?;
                }
                n
            } else if self.padding > 0 {
                let n = usize::try_from(self.padding)
                    .unwrap_or(usize::MAX)
                    .min(chunk.len());
                self.padding -= n as u64;
                n
            } else {
                if self.header.is_empty() {
                    self.header_at = self.offset;
                }
                let n = (BLOCK - self.header.len()).min(chunk.len());
                self.header.extend_from_slice(&chunk[..n]);
                if self.header.len() == BLOCK {
                    let h = std::mem::take(&mut self.header);
                    self.start_member(&h)?;
                }
                n
            };
            self.offset += n as u64;
            chunk = &chunk[n..];
        }
        Ok(())
    }

    fn data(&mut self, bytes: &[u8]) -> Result<(), ArchiveError> {
        match &mut self.member {
            Member::Skip => {
                self.other += bytes.len() as u64;
                if self.other > MAX_OTHER_BYTES {
                    return Err(ArchiveError::TooLarge {
                        what: "archive members besides the .mmdb",
                        limit: MAX_OTHER_BYTES,
                    });
                }
                Ok(())
            }
            Member::Keep(_, buf) => buf.push(bytes),
            Member::Name { buf, .. } => {
                buf.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    fn end_member(&mut self) -> Result<(), ArchiveError> {
        match std::mem::replace(&mut self.member, Member::Skip) {
            Member::Skip => {}
            Member::Keep(name, buf) => self.found = Some((name, buf.into_inner())),
            Member::Name { pax, buf } => {
                self.next_name = if pax {
                    pax_path(&buf)
                } else {
                    Some(text(&buf))
                };
            }
        }
        Ok(())
    }

    fn start_member(&mut self, h: &[u8]) -> Result<(), ArchiveError> {
        let bad = |what| ArchiveError::Header {
            offset: self.header_at,
            what,
        };
        if h.iter().all(|&b| b == 0) {
            self.ended = true;
            return Ok(());
        }
        let stored = octal(&h[148..156]).ok_or_else(|| bad("checksum field is not octal"))?;
        let sum: u64 = h
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    u64::from(b)
                }
            })
            .sum();
        if sum != stored {
            return Err(bad("checksum mismatch"));
        }
        // A base-256 size (GNU, for members over 8 GiB) fails here: far over any cap.
        let size = octal(&h[124..136]).ok_or_else(|| bad("size field is not octal"))?;
        let name = self.next_name.take().unwrap_or_else(|| {
            let (name, prefix) = (text(&h[..100]), text(&h[345..500]));
            if &h[257..263] == b"ustar\0" && !prefix.is_empty() {
                format!("{prefix}/{name}")
            } else {
                name
            }
        });
        self.member = match h[156] {
            b'0' | 0 | b'7' if name.ends_with(".mmdb") => {
                if let Some((first, _)) = &self.found {
                    return Err(ArchiveError::SeveralDatabases(first.clone(), name));
                }
                if size > self.limit {
                    return Err(ArchiveError::TooLarge {
                        what: "decompressed database",
                        limit: self.limit,
                    });
                }
                Member::Keep(name, CappedBuf::new(self.limit, "decompressed database"))
            }
            t @ (b'L' | b'x') => {
                if size > MAX_NAME_BYTES {
                    return Err(bad("long name or pax header over 64 KiB"));
                }
                Member::Name {
                    pax: t == b'x',
                    buf: Vec::new(),
                }
            }
            _ => Member::Skip,
        };
        self.remaining = size;
        self.padding = (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64;
        if size == 0 {
            self.end_member()?;
        }
        Ok(())
    }

    fn finish(self) -> Result<Unpacked, ArchiveError> {
        // Inside a member (or its header) when the stream stopped. A missing end-of-archive
        // marker after a complete member is tolerated, as `tar` itself does.
        if self.remaining > 0 || !self.header.is_empty() {
            return Err(ArchiveError::Truncated);
        }
        let (name, bytes) = self.found.ok_or(ArchiveError::NoDatabase)?;
        Ok(Unpacked {
            bytes,
            member: Some(name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ustar header for `name` of `size` bytes, type `kind`.
    fn header(name: &str, size: usize, kind: u8) -> Vec<u8> {
        let mut h = vec![0u8; BLOCK];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..107].copy_from_slice(b"0000644");
        h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
        h[136..147].copy_from_slice(b"00000000000");
        h[156] = kind;
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        h
    }

    fn member(out: &mut Vec<u8>, name: &str, data: &[u8], kind: u8) {
        out.extend(header(name, data.len(), kind));
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(BLOCK) * BLOCK, 0);
    }

    /// MaxMind's layout: a directory, three texts, the database.
    fn maxmind(db: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        member(&mut t, "GeoLite2-Country_20261201/", b"", b'5');
        member(
            &mut t,
            "GeoLite2-Country_20261201/COPYRIGHT.txt",
            b"(c) MaxMind",
            b'0',
        );
        member(
            &mut t,
            "GeoLite2-Country_20261201/LICENSE.txt",
            &[b'L'; 700],
            b'0',
        );
        member(
            &mut t,
            "GeoLite2-Country_20261201/GeoLite2-Country.mmdb",
            db,
            b'0',
        );
        t.extend([0u8; 2 * BLOCK]);
        t
    }

    fn unpack(bytes: &[u8], chunk: usize, limit: u64) -> Result<Unpacked, ArchiveError> {
        let mut u = Unpacker::new(limit);
        for c in bytes.chunks(chunk) {
            u.push(c)?;
        }
        u.finish()
    }

    #[test]
    fn takes_the_one_mmdb_member_whatever_the_chunking() {
        let db: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        let tar = maxmind(&db);
        for chunk in [1, 7, 511, 512, 513, 4096, tar.len()] {
            let u = unpack(&tar, chunk, 1 << 20).unwrap();
            assert_eq!(u.bytes, db, "chunk {chunk}");
            assert_eq!(
                u.member.as_deref(),
                Some("GeoLite2-Country_20261201/GeoLite2-Country.mmdb")
            );
        }
    }

    #[test]
    fn a_plain_database_passes_through() {
        for db in [b"\xab\xcd\xefMaxMind.com".to_vec(), vec![7u8; 5000]] {
            let u = unpack(&db, 100, 1 << 20).unwrap();
            assert_eq!((u.bytes, u.member), (db, None));
        }
        let e = unpack(&[7u8; 5000], 100, 4000).unwrap_err();
        assert_eq!(e.to_string(), "decompressed database is over 4000 bytes");
    }

    #[test]
    fn long_names_from_gnu_and_pax_headers() {
        let long = format!("{}/GeoIP2-Country.mmdb", "d".repeat(150));
        let mut t = Vec::new();
        member(
            &mut t,
            "././@LongLink",
            format!("{long}\0").as_bytes(),
            b'L',
        );
        member(&mut t, "truncated-name", b"db1", b'0');
        t.extend([0u8; 2 * BLOCK]);
        let u = unpack(&t, 64, 100).unwrap();
        assert_eq!(
            (u.bytes.as_slice(), u.member.as_deref()),
            (&b"db1"[..], Some(long.as_str()))
        );
        let mut t = Vec::new();
        let rec = format!("{} path={long}\n", long.len() + 10);
        assert_eq!(rec.len(), long.len() + 10, "pax length counts itself");
        member(&mut t, "PaxHeaders/x", rec.as_bytes(), b'x');
        member(&mut t, "short", b"db2", b'0');
        let u = unpack(&t, 4096, 100).unwrap();
        assert_eq!(u.member.as_deref(), Some(long.as_str()));
    }

    #[test]
    fn refuses_bad_archives() {
        let db = vec![1u8; 600];
        let mut none = Vec::new();
        member(&mut none, "LICENSE.txt", b"text", b'0');
        let e = unpack(&none, 512, 1 << 20).unwrap_err();
        assert!(matches!(e, ArchiveError::NoDatabase), "{e}");
        let mut two = Vec::new();
        member(&mut two, "a.mmdb", &db, b'0');
        member(&mut two, "b.mmdb", &db, b'0');
        let e = unpack(&two, 512, 1 << 20).unwrap_err();
        assert_eq!(
            e.to_string(),
            "tar archive has more than one .mmdb member (a.mmdb, b.mmdb)"
        );
        let tar = maxmind(&db);
        let cut = &tar[..tar.len() - 2 * BLOCK - 600];
        let e = unpack(cut, 512, 1 << 20).unwrap_err();
        assert!(matches!(e, ArchiveError::Truncated), "{e}");
        let mut bad = tar.clone();
        bad[BLOCK + 10] ^= 1; // a byte of the second header's name
        let e = unpack(&bad, 512, 1 << 20).unwrap_err();
        assert_eq!(e.to_string(), "tar header at byte 512: checksum mismatch");
        // The member's declared size is over the cap: refused before any of it is held.
        let e = unpack(&tar, 512, 599).unwrap_err();
        assert_eq!(e.to_string(), "decompressed database is over 599 bytes");
        let mut texts = Vec::new();
        member(
            &mut texts,
            "README",
            &vec![b'r'; (MAX_OTHER_BYTES + 1) as usize],
            b'0',
        );
        let e = unpack(&texts, 65536, 1 << 20).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("archive members besides the .mmdb"),
            "{e}"
        );
    }
}
