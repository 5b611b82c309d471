-- Mark an event id done after its write succeeded. Only touches an existing field, so a commit
-- that runs late (wait_until) never recreates an expired hash without a TTL.
-- KEYS[1] = bucket hash; ARGV[1] = field. Optional KEYS[2] = a roster the write showed to be
-- complete (the create inserted its item): its 'new' mark goes (see seed.lua).
-- Returns 1 if marked, 0 if the reservation is gone.
if KEYS[2] then
  redis.call('HDEL', KEYS[2], 'f')
end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], ARGV[1], '1')
  return 1
end
return 0
