-- hostile: a plain find whose worst case is subject x pattern bytes of memcmp
local s = string.rep(string.rep("a", 1024), 16 * 1024)
return s:find(string.rep("a", 4096) .. "b", 1, true)
