-- hostile: the lazy search in gsub, with a callback that never runs
local s = ("a"):rep(2e5)
return s:gsub(".-b", function() return "" end)
