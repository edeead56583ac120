-- hostile: require a standard library module
local io = require("io")
return io.open("/etc/passwd"):read("a")
