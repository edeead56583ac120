-- hostile: a C loop with an empty result (string.rep runs n times)
return #(""):rep(1 << 50)
