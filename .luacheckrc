std = "lua54"
max_line_length = 120
files["**/*_spec.lua"] = { std = "+busted" }
files["tests/**/*.lua"] = { std = "+busted" }
-- Argo CD health scripts (deploy/argocd/<group>/<Kind>/health.lua): gopher-lua, without
-- useOpenLibs, opens only the base functions, table and a safe os; `obj` is the object
stds.argocd_health = { read_globals = { "obj", "assert", "error", "ipairs", "next", "pairs", "pcall", "select",
  "tonumber", "tostring", "type", "table", "os" } }
files["deploy/argocd/**/health.lua"] = { std = "argocd_health" }
