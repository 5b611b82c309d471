-- Replace an owner's muted-set mirror unless it already copies a newer save of the document.
-- KEYS[1] = np:{owner}; ARGV[1] = since (ms of the document's first save), ARGV[2] = rev (its
-- save count), ARGV[3..] = members (c:{category}, t:{notificationType}).
-- The set keeps the revision as a member v:{since}:{rev}; the create path only asks SISMEMBER
-- for c:/t: members, so the extra member costs it nothing.
-- Answers the number of members written, or -1 when the mirror is newer and stays.
local since, rev = tonumber(ARGV[1]), tonumber(ARGV[2])
for _, m in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local s, r = string.match(m, '^v:(%d+):(%d+)$')
  if s then
    s, r = tonumber(s), tonumber(r)
    if s > since or (s == since and r > rev) then
      return -1
    end
  end
end
redis.call('DEL', KEYS[1])
redis.call('SADD', KEYS[1], 'v:' .. ARGV[1] .. ':' .. ARGV[2], unpack(ARGV, 3))
return #ARGV - 2
