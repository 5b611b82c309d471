// Decodes the world outline built by `build-assets` (src/geo/outline.rs documents the layout):
// features largest first, each with its rings of [lon, lat] in degrees.

export function decodeOutline(buf) {
  const b = new Uint8Array(buf);
  const magic = String.fromCharCode(...b.subarray(0, 4));
  if (magic !== "OUTL" || b[4] !== 1) throw new Error("outline: unknown format");
  const units = b[5] | (b[6] << 8);
  const count = b[7] | (b[8] << 8);
  let pos = 9;
  const varint = () => {
    let v = 0, mul = 1, x;
    do { x = b[pos++]; v += (x & 0x7f) * mul; mul *= 128; } while (x & 0x80);
    return v;
  };
  const signed = () => { const v = varint(); return v % 2 ? -(v + 1) / 2 : v / 2; };
  const ascii = (n) => { const s = String.fromCharCode(...b.subarray(pos, pos + n)); pos += n; return s; };
  const features = [];
  for (let f = 0; f < count; f++) {
    const alpha2 = ascii(2), alpha3 = ascii(3);
    const rings = [];
    for (let r = varint(); r > 0; r--) {
      const n = varint();
      const ring = new Float64Array(n * 2);
      let x = 0, y = 0;
      for (let i = 0; i < n; i++) {
        x += signed(); y += signed();
        ring[2 * i] = x / units; ring[2 * i + 1] = y / units;
      }
      rings.push(ring);
    }
    features.push({ alpha2, alpha3, rings });
  }
  if (pos !== b.length) throw new Error("outline: length does not match its contents");
  return features;
}
