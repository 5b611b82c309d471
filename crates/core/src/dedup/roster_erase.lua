-- A sender's erasure, one page of items (roster.lua is prepended). KEYS = the items' rosters;
-- ARGV[1] = the sender's fingerprint, ARGV[2] = erased-at (ms), ARGV[3] = roster lifetime.
-- Takes the sender's field off each roster where its time (newest event, or retraction) is at
-- or before the erasure: a sender that came back after it stays. A sender on the item (a
-- positive field) leaves its count: n - 1, v + 1, so the tally is above every one stored so far.
-- No retraction is recorded: the erasure's fence (sf:{digest}) refuses the sender's late events.
-- Returns per key a pair: the roster's tally ('' when there is no roster) and 1 when this call
-- took the sender off its count (else 0). A repeated call finds the sender gone and returns the
-- current tally, which its caller stores again: a run that died before storing loses nothing.
local fp, at, life = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local out = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local tally, removed = '', 0
  if redis.call('EXISTS', key) == 1 then
    local cur = tonumber(redis.call('HGET', key, fp) or '')
    if cur ~= nil and math.abs(cur) - 1 <= at then
      redis.call('HDEL', key, fp)
      if cur > 0 then
        redis.call('HINCRBY', key, 'n', -1)
        redis.call('HINCRBY', key, 'v', 1)
        removed = 1
      end
      roster_expire(key, life)
    end
    tally = roster_tally(key)
  end
  out[#out + 1] = tally
  out[#out + 1] = removed
end
return out
