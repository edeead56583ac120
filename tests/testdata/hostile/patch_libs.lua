-- hostile: change the policy's own copies of the libraries; nothing may leak to the next chunk
-- luacheck: ignore
-- (method calls on strings use the shared, protected string table: still "ABC")
string.upper = function() return "pwned" end
table.concat = nil
math.pi = 3
os.time = nil
return { upper = ("abc"):upper(), pi = math.pi }
