-- hostile: a loop of string.upper on 8 MiB (each call ~10 ms in C)
local s = ("x"):rep(8 * 1024 * 1024)
for _ = 1, 1e6 do local _ = s:upper() end
