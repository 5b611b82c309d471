-- Reserve an event id before processing it (one round trip); roster.lua, lease.lua and the
-- ARGV positions (RESERVE_ARG, RESERVE_TAIL: dedup/args.rs documents each argument) are
-- prepended.
-- KEYS[1] = bucket hash dd:{window}:{sub}; then, each optional and in this order: the owner's
-- muted set (np:{owner}), the item's roster, the item's event counter (hc:{id}, hot check,
-- with the roster only), the owner's erasure fence and the sender's.
-- Returns {status, token[, tally, added, fresh, generation]}: 'reserved' + lease token |
-- 'duplicate' | 'in_flight' + current token | 'erased' (behind the owner's fence) |
-- 'sender_erased' (behind the sender's) | 'muted' | 'retracted' (the sender was retracted
-- at or after this event: marked done, nothing to write) | 'hot' (the item is taking a burst:
-- nothing reserved or joined, the caller queues the event and the consumer reserves it). A
-- roster is joined for 'reserved' and 'in_flight' only; fresh and generation: see
-- roster_fresh (roster.lua). The fences come first of all: behind one, nothing is reserved,
-- joined or counted (notify/fence.rs, notify/senders.rs).
local A, T = RESERVE_ARG, RESERVE_TAIL
local nk = #KEYS
local fenced = ARGV[#ARGV - T.fence_kind]
if fenced == 'fence' or fenced == 'fences' then
  local sender_fence = nil
  if fenced == 'fences' then
    sender_fence = KEYS[nk]
    nk = nk - 1
  end
  local owner_fence = KEYS[nk]
  nk = nk - 1
  local erased = lease_fenced(owner_fence, sender_fence, tonumber(ARGV[#ARGV - T.fence_time]))
  if erased then
    return {erased, ''}
  end
end
local m = tonumber(ARGV[A.mute_count]) or 0
if nk >= 2 and lease_muted(KEYS[2], A.member, m) then
  return {'muted', ''}
end
-- A fixed window counts the item's events; past the limit the item stays hot until a cool-down
-- passes without an event, so a long burst is coalesced as a whole, not one window at a time.
if nk >= 4 then
  local c = redis.call('INCR', KEYS[4])
  if c == 1 then
    redis.call('PEXPIRE', KEYS[4], ARGV[A.hot_window_ms + m])
  end
  if c > tonumber(ARGV[A.hot_limit + m]) then
    redis.call('PEXPIRE', KEYS[4], ARGV[A.hot_cooldown_ms + m])
    return {'hot', ''}
  end
end
local status, lease = lease_take(KEYS[1], ARGV[A.field], roster_now(),
  tonumber(ARGV[A.lease_ms]), tonumber(ARGV[A.expire_at]))
if status == 'duplicate' then
  return {status, ''}
end
if nk >= 3 then
  local tally, added, fresh, gen = lease_join(KEYS[1], ARGV[A.field], status, KEYS[3],
    ARGV[A.fingerprint + m], tonumber(ARGV[A.event_time + m]), ARGV[A.life + m])
  if tally == nil then
    return {'retracted', ''}
  end
  return {status, lease, tally, added, fresh, gen}
end
return {status, lease}
