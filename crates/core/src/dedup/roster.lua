-- The senders of one item (prepended to the reserve scripts and to roster_leave.lua).
-- One hash per item, rs:{notificationId}: field = the sender's fingerprint (decimal int64),
-- value = its newest event time + 1 while it is on the item, -(retraction time + 1) once
-- retracted (kept, so a delayed create of it stays refused); field 'n' = senders on the item,
-- 'v' = changes so far. A tally packs both: v * 2^24 + n, so MongoDB's `$max` on it keeps the
-- newest count whatever order the writes land in (counts saturate at 2^24 - 1).
local ROSTER_SPAN = 16777216
local function roster_pack(n, v)
  return string.format('%d', v * ROSTER_SPAN + math.min(math.max(n, 0), ROSTER_SPAN - 1))
end
local function roster_tally(key)
  local nv = redis.call('HMGET', key, 'n', 'v')
  return roster_pack(tonumber(nv[1]) or 0, tonumber(nv[2]) or 0)
end
-- Puts a sender on the item unless it was retracted at or after this event (then nil).
-- Returns the tally and 1 when this call added the sender, else 0.
local function roster_join(key, fp, te, ttl)
  local cur = tonumber(redis.call('HGET', key, fp) or '')
  if cur ~= nil and cur > 0 then
    -- Already on the item: keep its newest event time (a retraction counts from it).
    if te + 1 > cur then
      redis.call('HSET', key, fp, string.format('%d', te + 1))
      redis.call('PEXPIRE', key, ttl)
    end
    return roster_tally(key), 0
  end
  if cur ~= nil and te < -cur then
    return nil, 0
  end
  redis.call('HSET', key, fp, string.format('%d', te + 1))
  local n = redis.call('HINCRBY', key, 'n', 1)
  local v = redis.call('HINCRBY', key, 'v', 1)
  redis.call('PEXPIRE', key, ttl)
  return roster_pack(n, v), 1
end
