-- Reserve the event ids of a whole batch in one round trip (reserve.lua, repeated); roster.lua
-- is prepended.
-- KEYS = the events' bucket hashes, then the distinct muted sets and rosters they refer to.
-- ARGV[1] = lease ms; ARGV[2] = number of events n; ARGV[3] = roster lifetime (roster.lua);
-- then per event:
--   field, key expire-at (unix ms), index into KEYS of its muted set (0 = none), member count m,
--   m members that would mute it, index into KEYS of its roster (0 = none), the sender's
--   fingerprint, event time (ms), index into KEYS of its owner's erasure fence (0 = none; an
--   event at or before the fence's erased-at answers 'erased', see reserve.lua), index into
--   KEYS of its sender's erasure fence (0 = none; 'sender_erased').
-- Returns a flat list status, token, tally, added, fresh, generation per event, with
-- reserve.lua's statuses (tally '', added 0, fresh 0 and generation '' without a roster).
local lease_ms = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local life = ARGV[3]
local now = roster_now()
local lease = string.format('%d', now + lease_ms)
local out = {}
local a = 4
for i = 1, n do
  local key, field, at = KEYS[i], ARGV[a], tonumber(ARGV[a + 1])
  local mute, m = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local status, token, tally, added, fresh, gen = nil, '', '', 0, 0, ''
  local fence = tonumber(ARGV[a + 7 + m])
  if fence > 0 then
    local at = redis.call('GET', KEYS[fence])
    if at and tonumber(ARGV[a + 6 + m]) <= tonumber(at) then
      status = 'erased'
    end
  end
  local sfence = tonumber(ARGV[a + 8 + m])
  if status == nil and sfence > 0 then
    local at = redis.call('GET', KEYS[sfence])
    if at and tonumber(ARGV[a + 6 + m]) <= tonumber(at) then
      status = 'sender_erased'
    end
  end
  if mute > 0 then
    for j = 1, m do
      if status == nil and redis.call('SISMEMBER', KEYS[mute], ARGV[a + 3 + j]) == 1 then
        status = 'muted'
      end
    end
  end
  local roster, fp, te = tonumber(ARGV[a + 4 + m]), ARGV[a + 5 + m], tonumber(ARGV[a + 6 + m])
  a = a + 9 + m
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
    end
    if status ~= 'duplicate' then
      redis.call('PEXPIREAT', key, string.format('%d', math.max(at, now + lease_ms)))
      if roster > 0 then
        local got
        got, added, fresh, gen = roster_join(KEYS[roster], fp, te, life)
        if got == nil then
          if status == 'reserved' then
            redis.call('HSET', key, field, '1')
          end
          status, token, added, fresh, gen = 'retracted', '', 0, 0, ''
        else
          tally = got
        end
      end
    end
  end
  out[#out + 1] = status
  out[#out + 1] = token
  out[#out + 1] = tally
  out[#out + 1] = added
  out[#out + 1] = fresh
  out[#out + 1] = gen
end
return out
