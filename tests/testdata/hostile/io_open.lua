-- hostile: read a file
local f = io.open("/etc/passwd")
return f:read("a")
