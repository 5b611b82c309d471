-- Reserve an event id before processing it (one round trip).
-- KEYS[1] = bucket hash dd:{window}:{sub}; ARGV[1] = field (fingerprint rest, decimal int64)
-- ARGV[2] = lease ms; ARGV[3] = key expire-at (unix ms, end of the event's window + retention)
-- Field values: '1' = done; any other value = pending, holding its lease expiry (unix ms).
-- Returns {status, token}: 'reserved' + lease token | 'duplicate' | 'in_flight' + current token.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v == '1' then
  return {'duplicate', ''}
end
if v and tonumber(v) > now then
  return {'in_flight', v}
end
local lease = string.format('%d', now + tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], ARGV[1], lease)
-- Never let the hash expire before the lease does (events older than the retention).
local at = math.max(tonumber(ARGV[3]), now + tonumber(ARGV[2]))
redis.call('PEXPIREAT', KEYS[1], string.format('%d', at))
return {'reserved', lease}
