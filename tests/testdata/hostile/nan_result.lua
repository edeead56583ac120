-- a result JSON cannot hold: NaN deep inside, then the smallest integer
local which = ...
if which and which.mininteger then return math.mininteger end
return { spec = { replicas = { 1, 0 / 0 } } }
