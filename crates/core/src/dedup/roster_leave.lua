-- Takes a sender off an item (a retraction). KEYS[1] = the item's roster; ARGV[1] = the
-- sender's fingerprint, ARGV[2] = now (ms), ARGV[3] = roster lifetime (see roster.lua).
-- The retraction counts from max(now, the sender's newest event time): a create that Redis saw
-- before this retraction is refused by MongoDB too, whatever order the two writes land in.
-- Returns {tally, retracted-at, fresh, generation}: roster_fresh's values (roster.lua).
-- Optional KEYS[2] = the owner's erasure fence (ef:{digest}): while it stands and the roster does
-- not exist, answers {'fenced'} and changes nothing (the caller asks the document whether the
-- item exists: an erased owner's retraction of an item it no longer has must leave nothing).
-- Optional KEYS[3] = the sender's erasure fence (sf:{digest}): while it stands and the sender is
-- not on the roster (it has not sent anything since its erasure), answers {'sender_fenced'} and
-- changes nothing: recording the retraction would write the erased sender's id into `x`.
local key = KEYS[1]
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 and redis.call('EXISTS', key) == 0 then
  return {'fenced'}
end
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then
  local cur = tonumber(redis.call('HGET', key, ARGV[1]) or '')
  if cur == nil or cur < 0 then
    return {'sender_fenced'}
  end
end
if redis.call('EXISTS', key) == 0 then
  roster_mark(key, ARGV[1], ARGV[3])
end
local cur = tonumber(redis.call('HGET', key, ARGV[1]) or '')
local at = tonumber(ARGV[2])
local tally = nil
if cur ~= nil and cur > 0 then
  at = math.max(at, cur - 1)
  local n = redis.call('HINCRBY', key, 'n', -1)
  tally = roster_pack(n, redis.call('HINCRBY', key, 'v', 1))
elseif cur ~= nil then
  at = math.max(at, -cur - 1)
end
redis.call('HSET', key, ARGV[1], string.format('%d', -(at + 1)))
redis.call('HINCRBY', key, 'r', 1)
roster_expire(key, ARGV[3])
return {tally or roster_tally(key), string.format('%d', at), roster_fresh(key, ARGV[1])}
