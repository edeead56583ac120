-- hostile: VM comparisons of two equal 16 MiB strings (one instruction, a 16 MiB strcoll)
local a, b = ("x"):rep(16 * 1024 * 1024), ("x"):rep(16 * 1024 * 1024)
local n = 0
while true do if a < b then n = n + 1 end end
