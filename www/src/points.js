// Points from a pasted or dropped file: CSV (a header naming lat/lon columns, or lat,lon
// pairs) or GeoJSON (Point / MultiPoint geometries, features or a collection).

const LAT = /^(lat|latitude|y)$/i;
const LON = /^(lon|lng|long|longitude|x)$/i;

/** Parses text into `[lat, lon]` pairs; throws with a message a person can act on. */
export function parsePoints(text) {
  const t = text.trim();
  if (!t) throw new Error("no points given");
  if (t.startsWith("{") || t.startsWith("[")) return fromGeoJson(JSON.parse(t));
  return fromCsv(t);
}

function fromCsv(t) {
  const rows = t.split(/\r?\n/).map((l) => l.split(/[,;\t]/).map((c) => c.trim().replace(/^"|"$/g, "")));
  let lat = 0, lon = 1, start = 0;
  const head = rows[0];
  if (head.some((c) => c !== "" && Number.isNaN(Number(c)))) {
    lat = head.findIndex((c) => LAT.test(c));
    lon = head.findIndex((c) => LON.test(c));
    if (lat < 0 || lon < 0) throw new Error("CSV header needs lat and lon columns");
    start = 1;
  }
  const out = [];
  for (let i = start; i < rows.length; i++) {
    if (rows[i].length === 1 && rows[i][0] === "") continue;
    const a = Number(rows[i][lat]), o = Number(rows[i][lon]);
    if (!Number.isFinite(a) || !Number.isFinite(o)) throw new Error(`line ${i + 1}: not a lat,lon pair`);
    out.push([a, o]);
  }
  return out;
}

function fromGeoJson(g) {
  const out = [];
  const geom = (x) => {
    if (!x) return;
    if (x.type === "Point") out.push([x.coordinates[1], x.coordinates[0]]);
    else if (x.type === "MultiPoint") for (const c of x.coordinates) out.push([c[1], c[0]]);
    else if (x.type === "GeometryCollection") x.geometries.forEach(geom);
  };
  if (Array.isArray(g)) {
    for (const p of g) if (Array.isArray(p) && p.length >= 2) out.push([Number(p[0]), Number(p[1])]);
  } else if (g.type === "FeatureCollection") g.features.forEach((f) => geom(f.geometry));
  else if (g.type === "Feature") geom(g.geometry);
  else geom(g);
  if (!out.length) throw new Error("no Point or MultiPoint geometries found");
  return out;
}

/** A stable colour per country code (sea is grey). */
export function colourOf(alpha2) {
  if (!alpha2) return "#6b6b6b";
  const h = ((alpha2.charCodeAt(0) * 31 + alpha2.charCodeAt(1)) * 47) % 360;
  return `hsl(${h} 75% 38%)`;
}
