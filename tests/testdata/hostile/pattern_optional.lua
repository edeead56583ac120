-- hostile: 40 optional items before 40 required ones: exponential backtracking
return ("a"):rep(40):find(("a?"):rep(40) .. ("a"):rep(40) .. "b")
