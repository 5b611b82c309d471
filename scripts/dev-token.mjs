#!/usr/bin/env node
// Mints an HS256 user token for local development, signed with AUTH_HS256_SECRET from .dev.vars
// (or the environment), for AUTH_ISSUER and the first of AUTH_AUDIENCE.
//
//   node scripts/dev-token.mjs --sub ana [--ttl 3600] [--vars .dev.vars]
//
// Plain Node (node:crypto), so a first `scripts/dev.sh` prints a token without compiling the Rust
// core only to sign one string. The secret is the published dev value: a deployed worker refuses
// it (config_invalid), so these tokens are good for the local stack only.
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : undefined;
};

/** `.dev.vars` as wrangler reads it: NAME=value lines, optional double quotes, # comments. */
function devVars(path) {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return {};
  }
  const vars = {};
  for (const line of text.split("\n")) {
    if (line.trimStart().startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq < 0) continue;
    vars[line.slice(0, eq).trim()] = line.slice(eq + 1).trim().replace(/^"|"$/g, "");
  }
  return vars;
}

const sub = opt("--sub");
if (sub === undefined) {
  console.error("usage: node scripts/dev-token.mjs --sub NAME [--ttl SECONDS] [--vars .dev.vars]");
  process.exit(2);
}
const vars = devVars(opt("--vars") ?? ".dev.vars");
const get = (k) => process.env[k] ?? vars[k];
const secret = get("AUTH_HS256_SECRET");
const iss = get("AUTH_ISSUER");
const audList = get("AUTH_AUDIENCE");
if (!secret || !iss || !audList) {
  console.error("AUTH_HS256_SECRET, AUTH_ISSUER and AUTH_AUDIENCE must be set (in .dev.vars or the environment)");
  process.exit(2);
}
const ttlArg = Number(opt("--ttl") ?? 3600);
const ttl = Number.isSafeInteger(ttlArg) && ttlArg > 0 ? ttlArg : 3600;
const now = Math.floor(Date.now() / 1000);
const aud = audList.split(",")[0].trim();
const b64 = (s) => Buffer.from(s).toString("base64url");
const input = `${b64('{"alg":"HS256","typ":"JWT"}')}.${b64(JSON.stringify({ sub, iss, aud, iat: now, exp: now + ttl }))}`;
const sig = createHmac("sha256", secret).update(input).digest("base64url");
console.log(`${input}.${sig}`);
