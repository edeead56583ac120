-- Test policy (tests/render_spec.lua): a syntax error on line 3.
return {
  apply = function(c) return c end end,
}
