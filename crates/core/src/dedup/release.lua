-- Drop a reservation after a failed write so a retry is not taken for a duplicate.
-- Only the holder of the lease (same token) may release; a done marker is never removed.
-- KEYS[1] = bucket hash; ARGV[1] = field; ARGV[2] = token from reserve. Returns 1 if removed.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
