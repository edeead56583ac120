std = "lua54"
max_line_length = 120
files["**/*_spec.lua"] = { std = "+busted" }
files["tests/**/*.lua"] = { std = "+busted" }
