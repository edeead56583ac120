-- hostile: create a global
-- luacheck: ignore
leaked = true
return leaked
