-- hostile: a quadratic pattern search (each start scans to the end): one C call, which the
-- pattern matcher's budget poll stops at the call's deadline
local s = string.rep("a", 6000)
return s:find(".-b")
