-- hostile: a 1 GiB string
return #string.rep("x", 1 << 30)
