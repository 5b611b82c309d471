// The world map: plain equirectangular (x = longitude, y = latitude) on a canvas that fills its
// element, so a pixel maps to coordinates by two divisions. Features are painted largest
// first with the even-odd rule, so enclaves and territories show on top, as the lookup rule
// decides.

import { colourOf } from "./points.js";

export class WorldMap {
  constructor(canvas, features) {
    this.canvas = canvas;
    this.features = features;
    this.paths = new Map(); // alpha2 → Path2D in degrees (y up), built once
    for (const f of features) {
      const p = new Path2D();
      for (const r of f.rings) {
        p.moveTo(r[0], r[1]);
        for (let i = 2; i < r.length; i += 2) p.lineTo(r[i], r[i + 1]);
        p.closePath();
      }
      f.path = p;
      const b = this.boxes?.get(f.alpha2) ?? [180, 90, -180, -90];
      for (const r of f.rings) {
        for (let i = 0; i < r.length; i += 2) {
          b[0] = Math.min(b[0], r[i]); b[1] = Math.min(b[1], r[i + 1]);
          b[2] = Math.max(b[2], r[i]); b[3] = Math.max(b[3], r[i + 1]);
        }
      }
      (this.boxes ??= new Map()).set(f.alpha2, b);
      const prev = this.paths.get(f.alpha2);
      if (prev) prev.addPath(p); else this.paths.set(f.alpha2, new Path2D(p));
    }
    this.highlight = null;
    this.marker = null;
    this.points = [];
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  /** Canvas-relative CSS pixel → [lat, lon]. */
  toLatLon(x, y) {
    const { width, height } = this.canvas.getBoundingClientRect();
    return [90 - (y / height) * 180, (x / width) * 360 - 180];
  }

  /** [lat, lon] → canvas-relative CSS pixel. */
  toPixel(lat, lon) {
    const { width, height } = this.canvas.getBoundingClientRect();
    return [((lon + 180) / 360) * width, ((90 - lat) / 180) * height];
  }

  draw() {
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const { width, height } = c.getBoundingClientRect();
    if (!width || !height) return;
    c.width = Math.round(width * dpr);
    c.height = Math.round(height * dpr);
    const ctx = c.getContext("2d");
    const sx = c.width / 360, sy = c.height / 180;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = "#dbe7f3";
    ctx.fillRect(0, 0, c.width, c.height);
    // Degrees → device pixels: x = (lon + 180)·sx, y = (90 − lat)·sy.
    ctx.setTransform(sx, 0, 0, -sy, 180 * sx, 90 * sy);
    ctx.lineWidth = 0.6 / Math.min(sx, sy);
    ctx.strokeStyle = "#8a8576";
    for (const f of this.features) {
      ctx.fillStyle = f.alpha2 === this.highlight ? "#f4a261" : "#e9e4d6";
      ctx.fill(f.path, "evenodd");
      ctx.stroke(f.path);
    }
    if (this.highlight && this.paths.has(this.highlight)) {
      ctx.lineWidth = 2 * dpr / Math.min(sx, sy);
      ctx.strokeStyle = "#d93f0b";
      ctx.stroke(this.paths.get(this.highlight));
    }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    // A country a few pixels wide (Vatican, Monaco) gets a ring, or its highlight is invisible.
    const hb = this.highlight && this.boxes.get(this.highlight);
    if (hb && (hb[2] - hb[0]) * sx < 10 * dpr && (hb[3] - hb[1]) * sy < 10 * dpr) {
      ctx.strokeStyle = "#d93f0b";
      ctx.lineWidth = 2 * dpr;
      ctx.beginPath();
      ctx.arc(((hb[0] + hb[2]) / 2 + 180) * sx, (90 - (hb[1] + hb[3]) / 2) * sy, 12 * dpr, 0, 2 * Math.PI);
      ctx.stroke();
    }
    const r = Math.max(2, 2.5 * dpr);
    for (const p of this.points) {
      ctx.fillStyle = colourOf(p.alpha2);
      ctx.beginPath();
      ctx.arc((p.lon + 180) * sx, (90 - p.lat) * sy, r, 0, 2 * Math.PI);
      ctx.fill();
    }
    if (this.marker) {
      const [x, y] = [(this.marker[1] + 180) * sx, (90 - this.marker[0]) * sy];
      ctx.strokeStyle = "#b3261e";
      ctx.lineWidth = 2 * dpr;
      ctx.beginPath();
      ctx.moveTo(x - 8 * dpr, y); ctx.lineTo(x + 8 * dpr, y);
      ctx.moveTo(x, y - 8 * dpr); ctx.lineTo(x, y + 8 * dpr);
      ctx.stroke();
    }
  }
}
