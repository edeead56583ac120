-- hostile: recursion that holds a table per frame, until the memory cap trips
local function f(n)
  local t = { n, n, n, n, n, n, n, n }
  return f(n + 1) + #t
end
return f(1)
