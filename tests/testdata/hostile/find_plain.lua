-- hostile: a loop of plain finds in 16 MiB
local s = string.rep(string.rep("a", 1024), 16 * 1024)
for _ = 1, 1e6 do s:find(string.rep("a", 4096) .. "b", 1, true) end
