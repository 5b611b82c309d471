-- Takes a sender off an item (a retraction). KEYS[1] = the item's roster; ARGV[1] = the
-- sender's fingerprint, ARGV[2] = now (ms), ARGV[3] = roster ttl (ms).
-- The retraction counts from max(now, the sender's newest event time): a create that Redis saw
-- before this retraction is refused by MongoDB too, whatever order the two writes land in.
-- Returns {tally, retracted-at}.
local key = KEYS[1]
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
redis.call('PEXPIRE', key, ARGV[3])
return {tally or roster_tally(key), string.format('%d', at)}
