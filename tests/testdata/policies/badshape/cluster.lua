-- Test policy (tests/render_spec.lua): desired objects of the wrong shape (no kind).
return {
  desired = function(input)
    return { objects = { { apiVersion = "v1", metadata = { name = input.cluster.metadata.name } } } }
  end,
}
