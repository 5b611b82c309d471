-- After a batch's writes: commit the ids that were written and release the ones that were not,
-- in one round trip (commit.lua and release.lua, repeated).
-- KEYS = bucket hashes (a roster for 's'); ARGV[1] = n; then per entry: op ('c' commit |
-- 'r' release | 's' a roster its write showed complete: drop its 'new' mark, see seed.lua),
-- field, token.
-- Returns how many entries changed.
local n = tonumber(ARGV[1])
local changed = 0
for i = 1, n do
  local op, field, token = ARGV[3 * i - 1], ARGV[3 * i], ARGV[3 * i + 1]
  if op == 'c' then
    if redis.call('HEXISTS', KEYS[i], field) == 1 then
      redis.call('HSET', KEYS[i], field, '1')
      changed = changed + 1
    end
  elseif op == 's' then
    changed = changed + redis.call('HDEL', KEYS[i], 'f')
  elseif redis.call('HGET', KEYS[i], field) == token then
    redis.call('HDEL', KEYS[i], field)
    changed = changed + 1
  end
end
return changed
