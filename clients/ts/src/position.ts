// Change-feed positions (`sync`). Opaque to apps; the store compares them to drop stale badges
// and never move backwards. A position is base64url (no padding) of the JSON `[ms, id]`
// (crates/core/src/notify/query.rs `encode_cursor`); see clients/conformance/README.md "Positions".

/** A decoded position. */
export interface Position {
  readonly ms: number;
  readonly id: string;
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function base64urlDecode(s: string): string | undefined {
  let bits = 0;
  let acc = 0;
  let out = "";
  for (const ch of s) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) return undefined;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += String.fromCharCode((acc >> bits) & 0xff);
    }
  }
  // Positions hold ASCII (digits and a base64url id), so a byte is a character.
  return out;
}

/** `null` for no position, `undefined` when `s` does not decode. */
export function decodePosition(s: string | null | undefined): Position | null | undefined {
  if (s === null || s === undefined) return null;
  const text = base64urlDecode(s);
  if (text === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === "string") {
      return { ms: v[0] as number, id: v[1] as string };
    }
  } catch {
    // not JSON: undecodable
  }
  return undefined;
}

/** True when `a` is strictly older than `b` (never when either does not decode). */
export function isOlder(a: string | null, b: string | null): boolean {
  const pa = decodePosition(a);
  const pb = decodePosition(b);
  if (pa === undefined || pb === undefined || pb === null) return false;
  if (pa === null) return true;
  return pa.ms < pb.ms || (pa.ms === pb.ms && pa.id < pb.id);
}

/** The newer of `a` and `b`; `b` (the one just received) when either does not decode. */
export function newerPosition(a: string | null, b: string | null): string | null {
  const pa = decodePosition(a);
  const pb = decodePosition(b);
  if (pa === undefined || pb === undefined) return b;
  return isOlder(b, a) ? a : b;
}
