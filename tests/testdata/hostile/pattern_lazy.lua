-- hostile: two lazy quantifiers over 20 KB: cubic backtracking in one string.find call
return ("a"):rep(2e4):find(".-.-b")
