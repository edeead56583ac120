-- hostile: gmatch over a quadratic pattern
local n = 0
for _ in ("a"):rep(2e5):gmatch(".-b") do n = n + 1 end
return n
