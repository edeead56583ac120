-- hostile: exponential backtracking in a Lua pattern
return string.find(("a"):rep(40), ("a*"):rep(40) .. "b")
