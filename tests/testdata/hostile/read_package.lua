-- hostile: reach package.loaded
return package.loaded.io ~= nil
