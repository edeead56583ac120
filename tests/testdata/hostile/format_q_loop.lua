-- hostile: a loop of string.format("%q") on 4 MiB
local s = ("\n\0"):rep(2 * 1024 * 1024)
for _ = 1, 1e6 do local _ = string.format("%q", s) end
