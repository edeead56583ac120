-- a well-behaved chunk: uses the allowed library and the input
local util = require("fc.util")
local input = ...
local out = util.deepcopy(input or {})
out.sum = 0
for _, v in ipairs(out.values or {}) do out.sum = out.sum + v end
out.upper = ("abc"):upper()
return out
