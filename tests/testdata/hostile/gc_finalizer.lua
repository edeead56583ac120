-- hostile: a finalizer that would loop where hooks do not run
setmetatable({}, { __gc = function() while true do end end })
return true
