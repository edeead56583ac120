-- hostile: a quadratic pattern search (each start scans to the end): one uninterruptible C
-- call; the call still fails on its CPU budget once it returns
local s = string.rep("a", 6000)
return s:find(".-b")
