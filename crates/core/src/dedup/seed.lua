-- Completes a new roster from its item's document (roster.lua is prepended). A roster that
-- expired while idle (or never existed for an item that did) comes back holding only the
-- senders seen since; the document holds every sender while there are at most the origins cap
-- of them, so merging the two gives the item's senders again.
-- KEYS[1] = the roster; ARGV[1] = lifetime (roster.lua); ARGV[2] = the version of the tally
-- the document stores; ARGV[3] = senders the document counts but no longer holds (0 when it
-- holds them all); ARGV[4] = retractions the document lists; ARGV[5] = k, then k pairs:
-- fingerprint, value (roster.lua's encoding: an origin's event time + 1, or -(retraction
-- time + 1)).
-- The roster wins over the document (it is newer), except that a retraction the document holds
-- refuses a sender whose event is not later (what roster_join would have answered).
-- Returns the tally: n = senders on the roster + ARGV[3]; v above every tally stored so far.
local key = KEYS[1]
local k = tonumber(ARGV[5])
for i = 1, k do
  local fp, val = ARGV[4 + 2 * i], tonumber(ARGV[5 + 2 * i])
  local cur = tonumber(redis.call('HGET', key, fp) or '')
  if cur == nil or (val < 0 and cur > 0 and cur - 1 <= -val - 1) then
    redis.call('HSET', key, fp, ARGV[5 + 2 * i])
  end
end
local meta = { n = true, v = true, r = true, f = true, b = true }
local all = redis.call('HGETALL', key)
local n = tonumber(ARGV[3])
for i = 1, #all, 2 do
  if not meta[all[i]] and tonumber(all[i + 1]) > 0 then
    n = n + 1
  end
end
local v = (tonumber(redis.call('HGET', key, 'v') or '') or 0) + tonumber(ARGV[2]) + 1
local r = math.max(tonumber(redis.call('HGET', key, 'r') or '') or 0, tonumber(ARGV[4]))
redis.call('HSET', key, 'n', string.format('%d', n), 'v', string.format('%d', v))
if r > 0 then
  redis.call('HSET', key, 'r', string.format('%d', r))
end
if tonumber(ARGV[3]) > 0 then
  redis.call('HSET', key, 'b', '1')
end
redis.call('HDEL', key, 'f')
roster_expire(key, ARGV[1])
return roster_pack(n, v)
