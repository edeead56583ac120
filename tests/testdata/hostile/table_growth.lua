-- hostile: a table that doubles its array part until the heap gives out
local t = {}
for i = 1, math.maxinteger do t[i] = i end
return #t
