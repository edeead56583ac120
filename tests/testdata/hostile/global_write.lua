-- hostile: create a global
leaked = true
return leaked
