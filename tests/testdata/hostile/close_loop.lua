-- hostile: a to-be-closed variable whose __close loops
local guard <close> = setmetatable({}, { __close = function() while true do end end })
while true do end
