-- Completes a new roster from its item's document (roster.lua is prepended). A roster that
-- expired while idle (or never existed for an item that did) comes back holding only the
-- senders seen since; the document holds every sender while there are at most the origins cap
-- of them (and the writes made while the roster is new push without the cap's `$slice`, so
-- none is dropped before this runs), so merging the two gives the item's senders again.
-- KEYS[1] = the roster; ARGV[1] = lifetime (roster.lua); ARGV[2] = the generation being
-- completed ('' = whatever the mark holds); ARGV[3] = the version of the tally the document
-- stores; ARGV[4] = senders the document counts but no longer holds (0 when it holds them
-- all); ARGV[5] = retractions the document lists; ARGV[6] = k, then k pairs: fingerprint,
-- value (roster.lua's encoding: an origin's event time + 1, or -(retraction time + 1)).
-- The roster wins over the document (it is newer), except that a retraction the document holds
-- refuses a sender whose event is not later (what roster_join would have answered).
-- Runs only while the roster still carries that generation's mark, so a late second completer
-- merges nothing into a roster that is complete (and that later capped writes may have made
-- the document no longer hold). The mark stays: the caller drops it once the tally is stored.
-- Returns the tally: n = senders on the roster + ARGV[4]; v above every tally stored so far.
local key = KEYS[1]
local mark = redis.call('HGET', key, 'f')
if not mark or (ARGV[2] ~= '' and string.match(mark, ' (%d+)$') ~= ARGV[2]) then
  return roster_tally(key)
end
local k = tonumber(ARGV[6])
for i = 1, k do
  local fp, val = ARGV[5 + 2 * i], tonumber(ARGV[6 + 2 * i])
  local cur = tonumber(redis.call('HGET', key, fp) or '')
  if cur == nil or (val < 0 and cur > 0 and cur - 1 <= -val - 1) then
    redis.call('HSET', key, fp, ARGV[6 + 2 * i])
  end
end
local meta = { n = true, v = true, r = true, f = true, b = true }
local all = redis.call('HGETALL', key)
local n = tonumber(ARGV[4])
for i = 1, #all, 2 do
  if not meta[all[i]] and tonumber(all[i + 1]) > 0 then
    n = n + 1
  end
end
local v = math.max(tonumber(redis.call('HGET', key, 'v') or '') or 0, tonumber(ARGV[3])) + 1
local r = math.max(tonumber(redis.call('HGET', key, 'r') or '') or 0, tonumber(ARGV[5]))
redis.call('HSET', key, 'n', string.format('%d', n), 'v', string.format('%d', v))
if r > 0 then
  redis.call('HSET', key, 'r', string.format('%d', r))
end
if tonumber(ARGV[4]) > 0 then
  redis.call('HSET', key, 'b', '1')
end
roster_expire(key, ARGV[1])
return roster_pack(n, v)
