-- hostile: patch the shared string metatable
local mt = getmetatable("")
mt.__index = function() return "pwned" end
return ("x"):upper()
