-- The lease on one event id, shared by reserve.lua and reserve_many.lua (prepended after
-- roster.lua): the erasure fences, the mute check, taking the lease and joining the roster.
-- Field values: '1' = done; any other value = pending, holding its lease expiry (unix ms).

-- 'erased' when an event at te (ms) is at or before the owner's erasure (fence key ef:{digest},
-- value = erased-at ms), 'sender_erased' when at or before the sender's (sf:{digest},
-- notify/senders.rs), else nil. Either key may be nil (no fence).
local function lease_fenced(owner_fence, sender_fence, te)
  if owner_fence then
    local at = redis.call('GET', owner_fence)
    if at and te <= tonumber(at) then
      return 'erased'
    end
  end
  if sender_fence then
    local at = redis.call('GET', sender_fence)
    if at and te <= tonumber(at) then
      return 'sender_erased'
    end
  end
  return nil
end

-- True when the muted set holds one of ARGV[first .. first + m - 1] (the members that would
-- mute this event: c:{category}, t:{notificationType}).
local function lease_muted(set, first, m)
  for i = first, first + m - 1 do
    if redis.call('SISMEMBER', set, ARGV[i]) == 1 then
      return true
    end
  end
  return false
end

-- Takes the lease on field of the bucket hash key until now + lease_ms: 'reserved' and the new
-- token, 'in_flight' and the holder's token, or 'duplicate' and ''. HSETNX first: the common
-- case (a new id) costs one listpack scan, not two (HGET + HSET). Unless a duplicate, the hash
-- never expires before the lease does (events older than the retention): at expire_at (unix
-- ms) or the lease's end, whichever is later.
local function lease_take(key, field, now, lease_ms, expire_at)
  local lease = string.format('%d', now + lease_ms)
  local status = 'reserved'
  if redis.call('HSETNX', key, field, lease) == 0 then
    local v = redis.call('HGET', key, field)
    if v == '1' then
      return 'duplicate', ''
    end
    if tonumber(v) > now then
      status, lease = 'in_flight', v
    else
      -- The holder's lease ran out (crashed writer): take it over.
      redis.call('HSET', key, field, lease)
    end
  end
  redis.call('PEXPIREAT', key, string.format('%d', math.max(expire_at, now + lease_ms)))
  return status, lease
end

-- Joins the roster for a lease just taken (status from lease_take): roster_join's values. A
-- sender retracted at or after this event (tally nil) has nothing to write: a lease this call
-- took is marked done.
local function lease_join(key, field, status, roster, fp, te, life)
  local tally, added, fresh, gen = roster_join(roster, fp, te, life)
  if tally == nil and status == 'reserved' then
    redis.call('HSET', key, field, '1')
  end
  return tally, added, fresh, gen
end
