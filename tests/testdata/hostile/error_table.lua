-- hostile: an error object with a __tostring that loops
error(setmetatable({}, { __tostring = function() while true do end end }))
