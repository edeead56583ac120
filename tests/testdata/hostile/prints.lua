-- a chunk that logs: print goes to stderr with the chunk's name, never to stdout
print("hello", 42, { } ~= nil)
return "done"
