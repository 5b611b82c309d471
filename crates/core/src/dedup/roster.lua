-- The senders of one item (prepended to the reserve scripts, roster_leave.lua and seed.lua).
-- One hash per item, rs:{notificationId}: field = the sender's fingerprint (decimal int64),
-- value = its newest event time + 1 while it is on the item, -(retraction time + 1) once
-- retracted (kept, so a delayed create of it stays refused); field 'n' = senders on the item,
-- 'v' = changes so far, 'r' = retractions so far, 'f' = set while the roster is new and may not
-- yet hold the senders its document already has (see seed.lua): "<fingerprint> <until ms>" of
-- the sender whose call created it, 'b' = rebuilt from a document that had dropped senders (so
-- it can never be rebuilt again). A tally packs n and v:
-- v * 2^24 + n, so MongoDB's `$max` on it keeps the newest count whatever order the writes land
-- in (counts saturate at 2^24 - 1).
-- Lifetime ("full idle cap rcap grace", ms ms count count ms): a roster whose senders all fit
-- the document (at most cap of them, fewer than rcap retractions, no 'b') expires after idle ms
-- without a change, since seed.lua can rebuild it from the document; any other lives full ms.
-- A new roster is completed by the writer whose call created it; only that sender's calls, or
-- anyone's once grace ms have passed (the writer failed), are told it is new, so a burst on a
-- new item does not rebuild it once per event.
local ROSTER_SPAN = 16777216
local function roster_pack(n, v)
  return string.format('%d', v * ROSTER_SPAN + math.min(math.max(n, 0), ROSTER_SPAN - 1))
end
local function roster_tally(key)
  local nv = redis.call('HMGET', key, 'n', 'v')
  return roster_pack(tonumber(nv[1]) or 0, tonumber(nv[2]) or 0)
end
local function roster_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Marks a roster this call is creating as new, on behalf of sender fp.
local function roster_mark(key, fp, life)
  local grace = tonumber(string.match(life, ' (%d+)$'))
  redis.call('HSET', key, 'f', fp .. ' ' .. string.format('%d', roster_now() + grace))
end
-- While the roster is new: 1 when the caller (sender fp) is to complete it (it created it, or
-- its creator is late), and the roster's generation (the mark's time), which a write that
-- inserts the item stores, so the completer can tell a document born of this roster (nothing
-- to merge) from an older one. Else 0, ''.
local function roster_fresh(key, fp)
  local f = redis.call('HGET', key, 'f')
  if not f then
    return 0, ''
  end
  local by, till = string.match(f, '^(%S+) (%d+)$')
  if till == nil then
    return 1, ''
  end
  if by == fp or roster_now() > tonumber(till) then
    return 1, till
  end
  return 0, till
end
local function roster_expire(key, life)
  local full, idle, cap, rcap = string.match(life, '^(%d+) (%d+) (%d+) (%d+) %d+$')
  local ttl = tonumber(full)
  if tonumber(idle) > 0 and tonumber(idle) < ttl then
    local meta = redis.call('HMGET', key, 'n', 'v', 'r', 'f', 'b')
    local count = 0
    for i = 1, 5 do
      if meta[i] then
        count = count + 1
      end
    end
    local senders = redis.call('HLEN', key) - count
    if senders <= tonumber(cap) and (tonumber(meta[3]) or 0) < tonumber(rcap) and not meta[5] then
      ttl = tonumber(idle)
    end
  end
  redis.call('PEXPIRE', key, string.format('%d', ttl))
end
-- Puts a sender on the item unless it was retracted at or after this event (then nil).
-- Returns the tally, 1 when this call added the sender (2 when it was already on the item with
-- this very event time: most likely this event's earlier attempt, whose write failed, so the
-- caller writes what an added sender writes, the senders' index entry; else 0), and
-- roster_fresh's two values.
local function roster_join(key, fp, te, life)
  local cur = tonumber(redis.call('HGET', key, fp) or '')
  if cur ~= nil and cur > 0 then
    -- Already on the item: keep its newest event time (a retraction counts from it).
    if te + 1 > cur then
      redis.call('HSET', key, fp, string.format('%d', te + 1))
      roster_expire(key, life)
    end
    local again = 0
    if te + 1 == cur then
      again = 2
    end
    return roster_tally(key), again, roster_fresh(key, fp)
  end
  if cur ~= nil and te < -cur then
    return nil, 0, 0, ''
  end
  if redis.call('EXISTS', key) == 0 then
    roster_mark(key, fp, life)
  end
  redis.call('HSET', key, fp, string.format('%d', te + 1))
  local n = redis.call('HINCRBY', key, 'n', 1)
  local v = redis.call('HINCRBY', key, 'v', 1)
  roster_expire(key, life)
  return roster_pack(n, v), 1, roster_fresh(key, fp)
end
