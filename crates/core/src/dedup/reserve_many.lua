-- Reserve the event ids of a whole batch in one round trip: reserve.lua's rules per event,
-- through the same functions (lease.lua). roster.lua, lease.lua and the ARGV positions
-- (MANY_ARG, EVENT_ARG: dedup/args.rs documents each argument) are prepended.
-- KEYS = the events' bucket hashes, then the distinct muted sets, rosters and fences they
-- refer to (by index into KEYS; 0 = none).
-- Returns a flat list status, token, tally, added, fresh, generation per event, with
-- reserve.lua's statuses (tally '', added 0, fresh 0 and generation '' without a roster).
local A, E = MANY_ARG, EVENT_ARG
local lease_ms = tonumber(ARGV[A.lease_ms])
local n = tonumber(ARGV[A.count])
local life = ARGV[A.life]
local now = roster_now()
local out = {}
-- The first argument of the current event; its members shift the arguments after them.
local a = MANY_ARG_WIDTH + 1
for i = 1, n do
  local key, field, at = KEYS[i], ARGV[a + E.field], tonumber(ARGV[a + E.expire_at])
  local mute, m = tonumber(ARGV[a + E.mute_key]), tonumber(ARGV[a + E.mute_count])
  local roster, fp = tonumber(ARGV[a + E.roster_key + m]), ARGV[a + E.fingerprint + m]
  local te = tonumber(ARGV[a + E.event_time + m])
  local fence, sfence = tonumber(ARGV[a + E.fence_key + m]), tonumber(ARGV[a + E.sender_fence_key + m])
  local status, token, tally, added, fresh, gen = nil, '', '', 0, 0, ''
  status = lease_fenced(fence > 0 and KEYS[fence] or nil, sfence > 0 and KEYS[sfence] or nil, te)
  if status == nil and mute > 0 and lease_muted(KEYS[mute], a + E.member, m) then
    status = 'muted'
  end
  a = a + EVENT_ARG_WIDTH + m
  if status == nil then
    status, token = lease_take(key, field, now, lease_ms, at)
    if status ~= 'duplicate' and roster > 0 then
      local got
      got, added, fresh, gen = lease_join(key, field, status, KEYS[roster], fp, te, life)
      if got == nil then
        status, token, added, fresh, gen = 'retracted', '', 0, 0, ''
      else
        tally = got
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
