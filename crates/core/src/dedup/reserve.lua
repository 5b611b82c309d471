-- Reserve an event id before processing it (one round trip); roster.lua is prepended.
-- KEYS[1] = bucket hash dd:{window}:{sub}; ARGV[1] = field (fingerprint rest, decimal int64)
-- ARGV[2] = lease ms; ARGV[3] = key expire-at (unix ms, end of the event's window + retention)
-- Optional mute check, in the same round trip: KEYS[2] = the owner's muted set (np:{owner}),
-- ARGV[4] = m, ARGV[5..4+m] = members that mute this event (c:{category}, t:{notificationType}).
-- Optional roster, in the same round trip: KEYS[3] = the item's roster (roster.lua),
-- ARGV[5+m] = the sender's fingerprint, ARGV[6+m] = event time (ms), ARGV[7+m] = roster
-- lifetime.
-- Optional hot check, with the roster only: KEYS[4] = the item's event counter (hc:{id}),
-- ARGV[8+m] = events one window admits, ARGV[9+m] = window ms, ARGV[10+m] = cool-down ms.
-- Field values: '1' = done; any other value = pending, holding its lease expiry (unix ms).
-- Returns {status, token[, tally, added, fresh, generation]}: 'reserved' + lease token |
-- 'duplicate' | 'in_flight' + current token | 'erased' (behind the owner's fence) | 'muted' | 'retracted' (the sender was retracted
-- at or after this event: marked done, nothing to write) | 'hot' (the item is taking a burst:
-- nothing reserved or joined, the caller queues the event and the consumer reserves it). A
-- roster is joined for 'reserved' and 'in_flight' only; fresh and generation: see
-- roster_fresh (roster.lua).
-- Optional erasure fence, first of all: the last two ARGV are 'fence' and the event's time (ms),
-- and the last key is the owner's fence (ef:{digest}, value = erased-at ms); an event at or
-- before it answers 'erased' and nothing is reserved, joined or counted (notify/fence.rs).
-- With 'fences' instead of 'fence' the last two keys are the owner's fence and the sender's
-- (sf:{digest}, notify/senders.rs): an event at or before the sender's erasure answers
-- 'sender_erased', with nothing reserved, joined or counted either.
-- No other argument in those places can read 'fence' (members are prefixed, the rest numbers).
-- HSETNX first: the common case (a new id) costs one listpack scan, not two (HGET + HSET).
local nk = #KEYS
local fenced = ARGV[#ARGV - 1]
if fenced == 'fence' or fenced == 'fences' then
  local te = tonumber(ARGV[#ARGV])
  local sat = nil
  if fenced == 'fences' then
    sat = redis.call('GET', KEYS[nk])
    nk = nk - 1
  end
  local at = redis.call('GET', KEYS[nk])
  nk = nk - 1
  if at and te <= tonumber(at) then
    return {'erased', ''}
  end
  if sat and te <= tonumber(sat) then
    return {'sender_erased', ''}
  end
end
local m = tonumber(ARGV[4]) or 0
if nk >= 2 then
  for i = 5, 4 + m do
    if redis.call('SISMEMBER', KEYS[2], ARGV[i]) == 1 then
      return {'muted', ''}
    end
  end
end
-- A fixed window counts the item's events; past the limit the item stays hot until a cool-down
-- passes without an event, so a long burst is coalesced as a whole, not one window at a time.
if nk >= 4 then
  local c = redis.call('INCR', KEYS[4])
  if c == 1 then
    redis.call('PEXPIRE', KEYS[4], ARGV[9 + m])
  end
  if c > tonumber(ARGV[8 + m]) then
    redis.call('PEXPIRE', KEYS[4], ARGV[10 + m])
    return {'hot', ''}
  end
end
local lease_ms = tonumber(ARGV[2])
local now = roster_now()
local lease = string.format('%d', now + lease_ms)
local status = 'reserved'
if redis.call('HSETNX', KEYS[1], ARGV[1], lease) == 0 then
  local v = redis.call('HGET', KEYS[1], ARGV[1])
  if v == '1' then
    return {'duplicate', ''}
  end
  if tonumber(v) > now then
    status, lease = 'in_flight', v
  else
    -- The holder's lease ran out (crashed writer): take it over.
    redis.call('HSET', KEYS[1], ARGV[1], lease)
  end
end
-- Never let the hash expire before the lease does (events older than the retention).
redis.call('PEXPIREAT', KEYS[1], string.format('%d', math.max(tonumber(ARGV[3]), now + lease_ms)))
if nk >= 3 then
  local tally, added, fresh, gen =
    roster_join(KEYS[3], ARGV[5 + m], tonumber(ARGV[6 + m]), ARGV[7 + m])
  if tally == nil then
    if status == 'reserved' then
      redis.call('HSET', KEYS[1], ARGV[1], '1')
    end
    return {'retracted', ''}
  end
  return {status, lease, tally, added, fresh, gen}
end
return {status, lease}
