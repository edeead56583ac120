-- hostile: a C sort of 64 copies of one 16 MiB string (each comparison a 16 MiB strcoll)
local s = ("x"):rep(16 * 1024 * 1024)
local t = {}
for i = 1, 64 do t[i] = s end
table.sort(t)
return #t
