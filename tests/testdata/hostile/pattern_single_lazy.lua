-- hostile: one lazy quantifier over 200 KB: each of the 200,000 starts scans to the end
return ("a"):rep(2e5):match(".-b")
