-- hostile: turn a function into bytecode and load it back
local code = string.dump(function() return 1 end)
return load(code, "x", "b")()
