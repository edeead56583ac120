-- hostile: a loop of utf8.len on 16 MiB (no allocation at all)
local s = ("\u{e9}"):rep(8 * 1024 * 1024)
local n = 0
for _ = 1, 1e6 do n = n + utf8.len(s) end
return n
