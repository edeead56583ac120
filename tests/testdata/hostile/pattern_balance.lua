-- hostile: %b() over 100 KB of unbalanced parentheses: each start scans to the end
return ("("):rep(1e5):find("%b()")
