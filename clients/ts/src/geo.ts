// Where is this point: its country and IANA time zone (GET and POST /v1/geo/country), and what
// the edge knows of the caller (GET /v1/geo/me). Public routes, rate-limited per IP. Requests go
// through the same `Http` as the inbox (retries, `Retry-After`, `InboxError` with the server's
// code); coordinates are not checked here: the server's `invalid_coordinate` /
// `invalid_number` come back as an `InboxError`, the same as the Kotlin SDK gets.
import { Http } from "./http.ts";
import type { HttpOptions } from "./http.ts";
import type { CountryResults, GeoField, Me, PointResult } from "./types.ts";

export interface GeoOptions {
  /** The answer's fields (default: all). `["country"]` leaves the time zone out and is cheaper. */
  fields?: GeoField[];
}

/** A coordinate in degrees (WGS 84). */
export interface LatLon {
  lat: number;
  lon: number;
}

const num = (v: number) => encodeURIComponent(String(v));
const fieldsParam = (o: GeoOptions) => (o.fields === undefined ? "" : `fields=${o.fields.map(encodeURIComponent).join(",")}`);

export class GeoClient {
  readonly http: Http;

  /** Its own `Http` (no token: the routes are public), or an `InboxClient`'s `http` to share. */
  constructor(o: Http | Omit<HttpOptions, "getToken">) {
    this.http = o instanceof Http ? o : new Http(o);
  }

  /** The country (null on the open sea) and time zone (`Etc/GMT±N` at sea) of one point. */
  whereIs(lat: number, lon: number, o: GeoOptions = {}): Promise<PointResult> {
    const fields = fieldsParam(o);
    return this.http.request<PointResult>("GET", `/v1/geo/country?lat=${num(lat)}&lon=${num(lon)}${fields && `&${fields}`}`);
  }

  /** Up to 10 000 points in one request: `results[i]` and `timeZones[i]` answer `points[i]`. */
  whereAre(points: LatLon[], o: GeoOptions = {}): Promise<CountryResults> {
    const fields = fieldsParam(o);
    return this.http.request<CountryResults>("POST", `/v1/geo/country${fields && `?${fields}`}`, {
      body: { points: points.map((p) => [p.lat, p.lon]) },
    });
  }

  /** The caller's edge country and zone, its IP's country, and (given `at`) that point's answer. */
  me(at?: LatLon): Promise<Me> {
    return this.http.request<Me>("GET", at === undefined ? "/v1/geo/me" : `/v1/geo/me?lat=${num(at.lat)}&lon=${num(at.lon)}`);
  }
}
