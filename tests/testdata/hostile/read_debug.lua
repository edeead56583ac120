-- hostile: reach the debug library
return debug.getregistry() ~= nil
