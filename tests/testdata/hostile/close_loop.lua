-- hostile: a to-be-closed variable whose __close loops
-- luacheck: ignore
local guard <close> = setmetatable({}, { __close = function() while true do end end })
while true do end
