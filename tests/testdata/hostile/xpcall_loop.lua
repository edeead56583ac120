-- hostile: an infinite loop under xpcall whose handler loops too
while true do
  xpcall(function() while true do end end, function() while true do end end)
end
