-- hostile: grow a table of fresh 1 MiB strings forever, swallowing the memory errors
-- luacheck: ignore
local big = string.rep(string.rep("x", 1024), 1024)
local t = {}
local i = 0
while true do
  i = i + 1
  pcall(function() t[i] = big .. i end)
end
