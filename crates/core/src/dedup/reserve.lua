-- Reserve an event id before processing it (one round trip).
-- KEYS[1] = bucket hash dd:{window}:{sub}; ARGV[1] = field (fingerprint rest, decimal int64)
-- ARGV[2] = lease ms; ARGV[3] = key expire-at (unix ms, end of the event's window + retention)
-- Optional mute check, in the same round trip: KEYS[2] = the owner's muted set (np:{owner}),
-- ARGV[4..] = members that mute this event (c:{category}, t:{notificationType}).
-- Field values: '1' = done; any other value = pending, holding its lease expiry (unix ms).
-- Returns {status, token}: 'reserved' + lease token | 'duplicate' | 'in_flight' + current token
-- | 'muted'.
-- HSETNX first: the common case (a new id) costs one listpack scan, not two (HGET + HSET).
if KEYS[2] then
  for i = 4, #ARGV do
    if redis.call('SISMEMBER', KEYS[2], ARGV[i]) == 1 then
      return {'muted', ''}
    end
  end
end
local lease_ms = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = string.format('%d', now + lease_ms)
if redis.call('HSETNX', KEYS[1], ARGV[1], lease) == 0 then
  local v = redis.call('HGET', KEYS[1], ARGV[1])
  if v == '1' then
    return {'duplicate', ''}
  end
  if tonumber(v) > now then
    return {'in_flight', v}
  end
  -- The holder's lease ran out (crashed writer): take it over.
  redis.call('HSET', KEYS[1], ARGV[1], lease)
end
-- Never let the hash expire before the lease does (events older than the retention).
redis.call('PEXPIREAT', KEYS[1], string.format('%d', math.max(tonumber(ARGV[3]), now + lease_ms)))
return {'reserved', lease}
