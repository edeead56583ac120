-- hostile: write through _G
_G.leaked = true
return true
