-- a well-behaved chunk: fc.yaml, trusted code the host preloads, writes YAML for a policy
local yaml = require("fc.yaml")
local ok, err = pcall(yaml.encode_map, { a = 1 })
return { text = yaml.encode_map({ ["rest.port"] = "8081", ["a.b"] = "x: y" }), refused = not ok,
  err = tostring(err):match("fc%.yaml%.encode_map: .*") }
