-- hostile: a sort of 2^21 elements with no Lua comparator runs in C, out of the hook's reach
local t = {}
for i = 1, 1 << 21 do t[i] = -i end
table.sort(t)
return t[1]
