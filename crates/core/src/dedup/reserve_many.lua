-- Reserve the event ids of a whole batch in one round trip (reserve.lua, repeated).
-- KEYS = the events' bucket hashes, then the distinct muted sets they refer to.
-- ARGV[1] = lease ms; ARGV[2] = number of events n; then per event:
--   field, key expire-at (unix ms), index into KEYS of its muted set (0 = none), member count m,
--   m members that would mute it.
-- Returns a flat list status1, token1, status2, token2, … with reserve.lua's statuses.
local lease_ms = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = string.format('%d', now + lease_ms)
local out = {}
local a = 3
for i = 1, n do
  local key, field, at = KEYS[i], ARGV[a], tonumber(ARGV[a + 1])
  local mute, m = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local status, token = nil, ''
  if mute > 0 then
    for j = 1, m do
      if status == nil and redis.call('SISMEMBER', KEYS[mute], ARGV[a + 3 + j]) == 1 then
        status = 'muted'
      end
    end
  end
  a = a + 4 + m
  if status == nil then
    if redis.call('HSETNX', key, field, lease) == 0 then
      local v = redis.call('HGET', key, field)
      if v == '1' then
        status = 'duplicate'
      elseif tonumber(v) > now then
        status, token = 'in_flight', v
      else
        redis.call('HSET', key, field, lease)
      end
    end
    if status == nil then
      status, token = 'reserved', lease
      redis.call('PEXPIREAT', key, string.format('%d', math.max(at, now + lease_ms)))
    end
  end
  out[#out + 1] = status
  out[#out + 1] = token
end
return out
