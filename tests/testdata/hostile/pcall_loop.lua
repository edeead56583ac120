-- hostile: an infinite loop inside pcall, retried forever
while true do
  pcall(function() while true do end end)
end
