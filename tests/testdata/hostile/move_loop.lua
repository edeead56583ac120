-- hostile: a loop of table.move over 2^20 elements (each call ~20 ms in C)
local t = {}
for _ = 1, 1e6 do table.move(t, 1, 1 << 20, 2) end
